#!/usr/bin/python3
"""Reference GPT-2 tokenizer, used to produce the evidence that the C++ one is exact.

This is OpenAI's original GPT-2 `encoder.py` algorithm (bytes_to_unicode, the
pre-tokenization regex run by the `regex` module, BPE by merge rank), with one
addition that trainscope's Tokenizer interface asks for: the literal text
"<|endoftext|>" is split out first and encodes to its own id (as tiktoken does
with allowed_special="all"); the pieces between are encoded independently.

Needs Debian's python3-regex (`apt-get install python3-regex`); run with
/usr/bin/python3. Four modes:

  gpt2_reference_tokenize.py --vocab DIR golden OUT.jsonl
      writes the golden file of {"text", "ids", "pieces"} cases compared by
      tests/tokenizers/gpt2_{tokenizer,pretokenizer}_test.cpp
  gpt2_reference_tokenize.py --vocab DIR encode < text
      prints the ids of each stdin line (like `trainscope tokenize`)
  gpt2_reference_tokenize.py stress-text > text
      prints ~1.6 MB of lines for a bulk cross-check: a sweep over every fifth
      code point of Unicode, then 5000 random lines over the regex's classes;
      compare `trainscope tokenize --tokenizer gpt2:DIR < text` with
      `gpt2_reference_tokenize.py encode < text` (e.g. with cmp)
  gpt2_reference_tokenize.py unicode-table OUT.cpp
      writes the code point class table of the C++ pre-tokenizer, made by asking
      the `regex` module itself which code points are \\p{L}, \\p{N} and \\s
"""

import argparse
import json
import os
import random
import sys

import regex as re

PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
END_OF_TEXT = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's reversible map from bytes to printable unicode characters."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(2**8):
        if b not in bs:
            bs.append(b)
            cs.append(2**8 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def get_pairs(word):
    pairs = set()
    prev_char = word[0]
    for char in word[1:]:
        pairs.add((prev_char, char))
        prev_char = char
    return pairs


class Encoder:
    """OpenAI's gpt-2/src/encoder.py, unchanged in substance."""

    def __init__(self, encoder, bpe_merges):
        self.encoder = encoder
        self.decoder = {v: k for k, v in self.encoder.items()}
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.bpe_ranks = dict(zip(bpe_merges, range(len(bpe_merges))))
        self.cache = {}
        self.pat = re.compile(PATTERN)

    def bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = tuple(token)
        pairs = get_pairs(word)
        if not pairs:
            return token
        while True:
            bigram = min(pairs, key=lambda pair: self.bpe_ranks.get(pair, float("inf")))
            if bigram not in self.bpe_ranks:
                break
            first, second = bigram
            new_word = []
            i = 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                    new_word.extend(word[i:j])
                    i = j
                except ValueError:
                    new_word.extend(word[i:])
                    break
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new_word.append(first + second)
                    i += 2
                else:
                    new_word.append(word[i])
                    i += 1
            word = tuple(new_word)
            if len(word) == 1:
                break
            pairs = get_pairs(word)
        word = " ".join(word)
        self.cache[token] = word
        return word

    def encode_ordinary(self, text):
        bpe_tokens = []
        for token in re.findall(self.pat, text):
            token = "".join(self.byte_encoder[b] for b in token.encode("utf-8"))
            bpe_tokens.extend(self.encoder[t] for t in self.bpe(token).split(" "))
        return bpe_tokens

    def encode(self, text):
        ids = []
        pieces = text.split(END_OF_TEXT)
        for i, piece in enumerate(pieces):
            if i > 0:
                ids.append(self.encoder[END_OF_TEXT])
            ids.extend(self.encode_ordinary(piece))
        return ids

    def decode(self, tokens):
        text = "".join(self.decoder[t] for t in tokens)
        return bytearray(self.byte_decoder[c] for c in text).decode("utf-8", errors="replace")


def load_encoder(vocab_dir):
    with open(os.path.join(vocab_dir, "encoder.json"), encoding="utf-8") as f:
        encoder = json.load(f)
    with open(os.path.join(vocab_dir, "vocab.bpe"), encoding="utf-8") as f:
        bpe_data = f.read()
    bpe_merges = [tuple(s.split()) for s in bpe_data.split("\n")[1:-1]]
    return Encoder(encoder, bpe_merges)


# Hand-picked cases: each names a behaviour of the regex or of BPE.
FIXED_CASES = [
    "Hello world",
    "Once upon a time, there was a little girl named Lily.",
    "",
    " ",
    "a",
    "I'm sure they'll say it's what we've done, isn't it? You'd think so; we're 're.",
    "HE'S HERE. THEY'LL GO. I'M, YOU'D, WE'RE, 'S 'T 'Re 'sa",
    "'s's''s 'x rock'n'roll o'clock '",
    "Numbers: 1 12 123 1234 12345 123456789012 3.14159 -42 1,000,000 2024-01-01 0x1F",
    "Punctuation!!! ... ?!?! (parens) [brackets] {braces} <angle> --- ___ @#$%^&*~`|\\/",
    "a  b   c    d     e",
    "line one\nline two\n\nline four\n\n\n",
    "tabs\there\t\tand\t \t mixed \t\n \n",
    "trailing spaces   ",
    "   leading spaces",
    " \n \n  \n   ",
    "\r\n windows\r\nline\r\n",
    "emoji: 😀 😃😄 👍🏽 👨‍👩‍👧 🇫🇷 ❤️",
    "CJK: 日本語のテキスト、中文文本。한국어 텍스트",
    "Accents: café naïve résumé façade Ångström Ærøskøbing Łódź Čeština",
    "Cyrillic: Привет, как дела? Съешь же ещё этих мягких французских булок.",
    "Combining: e\u0301 a\u0308 n\u0303 Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f",
    "Greek and Arabic: αβγ Ωμέγα مرحبا بالعالم ١٢٣ ٤٥",
    "Other numbers: ² ³ ½ ¾ Ⅻ ⅷ ① ፳ 𝟙𝟚",
    "Spaces: a\u00a0b\u2003c\u3000d\u2028e\u0085f\u200bg",
    "before<|endoftext|>after",
    "a <|endoftext|> b<|endoftext|><|endoftext|>c",
    "<|endoftext|>",
    "<|endoftext|> <|endoftext |> <|endoftex",
    "mixedCase CamelCaseWord snake_case_word kebab-case-word SCREAMING_CASE",
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "def f(x):\n    return x ** 2  # comment\n\n\tif x: pass",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "  \"quoted\" 'single' “curly” ‘curly’ «guillemets» — en–dash … ellipsis",
    "\x00\x01\x7f control chars \x1b[0m",
    "word\n",
    "\n",
    "x\u0300\u0300\u0300 12\u0300 !\u0300",
]

# Characters the random cases are drawn from: every class the regex tells apart.
RANDOM_ALPHABET = (
    list("abcdefgXYZ") + list("0123459") + list(".,!?'\"-()/:;") + [" "] * 6 + ["\n", "\t", "\r"]
    + ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL"]
    + list("éüßñçÅø") + list("привет") + list("日本語中文한국") + ["😀", "👍", "🏽", "\u200d"]
    + ["\u0301", "\u0308", "\u00a0", "\u2003", "\u3000", "\u0085", "²", "½", "Ⅻ", "٣"]
    + ["<|endoftext|>", "hello", " world", "the", "ing", "  "]
)


def random_cases(count, seed):
    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        length = rng.randint(1, 40)
        cases.append("".join(rng.choice(RANDOM_ALPHABET) for _ in range(length)))
    return cases


def stress_lines():
    rng = random.Random(5)
    line = []
    for cp in range(0x20, 0x110000, 5):
        if 0xD800 <= cp <= 0xDFFF or cp == 0x0A:
            continue
        line.append(chr(cp))
        r = rng.random()
        if r < 0.15:
            line.append(" ")
        elif r < 0.2:
            line.append("a")
        elif r < 0.25:
            line.append("7")
        if len(line) > 40:
            yield "".join(line)
            line = []
    yield "".join(line)
    alphabet = [a for a in RANDOM_ALPHABET if "\n" not in a] + [
        "ing", "tion", "的", "Привет", "ﬁ", "Ⅻ", "🏳️‍🌈", "\u0300", "   ", "\t\t", "1234567", "''",
        "'ll've"]
    rng = random.Random(99)
    for _ in range(5000):
        yield "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))


def write_golden(enc, out_path):
    cases = FIXED_CASES + random_cases(300, seed=20261121)
    with open(out_path, "w", encoding="utf-8") as f:
        for text in cases:
            ids = enc.encode(text)
            assert enc.decode(ids) == text, repr(text)
            # The regex's own split of the whole text, "<|endoftext|>" included as
            # plain text: evidence for the pre-tokenizer on its own.
            pieces = re.findall(enc.pat, text)
            f.write(json.dumps({"text": text, "ids": ids, "pieces": pieces}, ensure_ascii=True)
                    + "\n")
    print(f"wrote {len(cases)} cases to {out_path}", file=sys.stderr)


def code_point_class(cp, letter, number, space):
    ch = chr(cp)
    classes = [name for name, pat in (("L", letter), ("N", number), ("S", space)) if pat.match(ch)]
    assert len(classes) <= 1, (hex(cp), classes)
    return classes[0] if classes else None


def write_unicode_table(out_path):
    letter, number, space = re.compile(r"\p{L}"), re.compile(r"\p{N}"), re.compile(r"\s")
    ranges = []  # [start, end] inclusive, class
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # surrogates never appear in decoded UTF-8
        cls = code_point_class(cp, letter, number, space)
        if cls is None:
            continue
        if ranges and ranges[-1][2] == cls and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, cls])
    names = {"L": "kLetter", "N": "kNumber", "S": "kSpace"}
    with open(out_path, "w", encoding="utf-8") as f:
        f.write("// GENERATED by scripts/gpt2_reference_tokenize.py unicode-table; do not edit.\n")
        f.write(f"// Source: Python `regex` module {re.__version__}: the code points matching\n")
        f.write("// \\p{L}, \\p{N} and \\s in GPT-2's pre-tokenization pattern. Every code point\n")
        f.write("// not listed is kOther.\n")
        f.write('#include "training/tokenizers/unicode_classes.h"\n\n')
        f.write("namespace trainscope::training {\n\n")
        f.write(f"const CodePointRange kCodePointRanges[{len(ranges)}] = {{\n")
        for start, end, cls in ranges:
            f.write(f"    {{0x{start:X}, 0x{end:X}, CodePointClass::{names[cls]}}},\n")
        f.write("};\n")
        f.write(f"const int kNumCodePointRanges = {len(ranges)};\n\n")
        f.write("}  // namespace trainscope::training\n")
    print(f"wrote {len(ranges)} ranges to {out_path}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", default=os.path.join(os.path.dirname(__file__),
                                                        "../../shared/data/gpt2"),
                        help="directory with encoder.json and vocab.bpe")
    parser.add_argument("mode", choices=["golden", "encode", "stress-text", "unicode-table"])
    parser.add_argument("out", nargs="?", help="output file (golden, unicode-table)")
    args = parser.parse_args()
    if args.mode == "unicode-table":
        write_unicode_table(args.out)
        return
    if args.mode == "stress-text":
        out = sys.stdout.buffer
        for line in stress_lines():
            out.write(line.encode("utf-8") + b"\n")
        return
    enc = load_encoder(args.vocab)
    if args.mode == "golden":
        write_golden(enc, args.out)
    else:
        # Bytes, not text mode, so no newline translation can differ from the C++ side.
        lines = sys.stdin.buffer.read().decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline ends the last line; it does not start another
        for line in lines:
            print(" ".join(str(i) for i in enc.encode(line)))


if __name__ == "__main__":
    main()
