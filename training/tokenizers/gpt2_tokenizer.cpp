#include "training/tokenizers/gpt2_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "base/atomic_file.h"
#include "base/json_reader.h"
#include "base/check.h"
#include "base/quote.h"
#include "training/tokenizers/gpt2_pretokenizer.h"
#include "training/tokenizers/unicode_classes.h"

namespace trainscope::training {

// Outside the anonymous namespace: Gpt2Tokenizer::CacheShard holds one, and a
// member of a class with linkage must not have a type without it.
namespace gpt2_cache {
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using WordMap = std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>>;
}  // namespace gpt2_cache

namespace {

using gpt2_cache::WordMap;

namespace fs = std::filesystem;
using Json = nlohmann::json;

// Words longer than this are rare (long digit or whitespace runs, unspaced
// CJK) and would only evict the common short ones.
constexpr std::size_t kMaxCachedWordBytes = 128;
// Per shard; a full shard is emptied, which is crude but keeps memory bounded
// (64 shards x 4096 words) without LRU bookkeeping on the hot path.
constexpr std::size_t kMaxWordsPerShard = 4096;

std::atomic<uint64_t> next_instance_id{1};

// WordCache::kThreadLocal: the words of the tokenizer this thread used last.
struct ThreadWordCache {
  uint64_t owner = 0;
  WordMap words;
};
thread_local ThreadWordCache thread_word_cache;
constexpr std::size_t kMaxWordsPerThread = 1 << 16;

// The inverse of gpt2_byte_to_unicode(): code point -> byte, -1 if none.
// Every code point of the alphabet is below 324 (256 + 68 remapped bytes).
const std::array<int16_t, 324>& unicode_to_byte() {
  static const std::array<int16_t, 324> table = [] {
    std::array<int16_t, 324> t;
    t.fill(-1);
    const auto& forward = gpt2_byte_to_unicode();
    for (int b = 0; b < 256; ++b) {
      const auto* s = reinterpret_cast<const unsigned char*>(forward[b].data());
      const uint32_t cp =
          forward[b].size() == 1 ? s[0] : (uint32_t(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
      t[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return table;
}

// A token as written in encoder.json -> its bytes; false (with the offending
// code point, or byte if not UTF-8) if a character is outside the alphabet.
bool token_to_bytes(std::string_view token, std::string* bytes, uint32_t* bad_cp) {
  const auto& table = unicode_to_byte();
  bytes->clear();
  for (std::size_t i = 0; i < token.size();) {
    const Utf8Char c = decode_utf8(token, i);
    if (c.cp >= table.size() || table[c.cp] < 0) {
      *bad_cp = c.cp == kInvalidCodePoint ? static_cast<unsigned char>(token[i]) : c.cp;
      return false;
    }
    bytes->push_back(static_cast<char>(table[c.cp]));
    i += c.len;
  }
  return true;
}

// encoder.json / vocab.json / tokenizer.json's model.vocab: an object mapping
// every token to a distinct id in 0..N-1.
std::vector<std::string> vocab_from_json(const Json& vocab, const std::string& source) {
  if (!vocab.is_object()) {
    throw Error(fmt::format("{}: expected a JSON object mapping token -> id, got {}", source,
                            vocab.type_name()));
  }
  const std::size_t n = vocab.size();
  std::vector<std::string> tokens(n);
  std::vector<bool> seen(n, false);
  for (const auto& [token, id_json] : vocab.items()) {
    if (!id_json.is_number_integer()) {
      throw Error(fmt::format("{}: token \"{}\" has id {}, expected an integer", source,
                              terminal_safe(token), terminal_safe(id_json.dump())));
    }
    const int64_t id = id_json.get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(n)) {
      throw Error(
          fmt::format("{}: token \"{}\" has id {}, outside [0, {}) (the {} ids must be "
                      "0..{})",
                      source, terminal_safe(token), id, n, n, n - 1));
    }
    if (seen[id]) {
      throw Error(fmt::format("{}: tokens \"{}\" and \"{}\" both have id {}", source,
                              terminal_safe(tokens[id]), terminal_safe(token), id));
    }
    seen[id] = true;
    tokens[id] = token;
  }
  return tokens;
}

// merges.txt / vocab.bpe: an optional "#version" header, then "left right"
// per line in rank order.
std::vector<Gpt2Tokenizer::Merge> merges_from_text(const fs::path& path) {
  const std::string text = read_file(path);
  std::vector<Gpt2Tokenizer::Merge> merges;
  std::size_t pos = 0;
  int line_number = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line_number == 1 && line.starts_with("#version")) continue;
    const std::size_t space = line.find(' ');
    if (space == 0 || space == std::string_view::npos || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      throw Error(fmt::format("{}:{}: expected two tokens separated by one space, got \"{}\"",
                              path.string(), line_number, terminal_safe(line)));
    }
    merges.push_back({std::string(line.substr(0, space)), std::string(line.substr(space + 1)),
                      fmt::format("{}:{}", path.string(), line_number)});
  }
  return merges;
}

// tokenizer.json's model.merges: "left right" strings, or [left, right] pairs
// in newer files.
std::vector<Gpt2Tokenizer::Merge> merges_from_json(const Json& merges_json,
                                                   const std::string& path) {
  if (!merges_json.is_array()) {
    throw Error(
        fmt::format("{}: model.merges is {}, expected an array", path, merges_json.type_name()));
  }
  std::vector<Gpt2Tokenizer::Merge> merges;
  merges.reserve(merges_json.size());
  for (std::size_t i = 0; i < merges_json.size(); ++i) {
    const Json& m = merges_json[i];
    const std::string origin = fmt::format("{}: model.merges[{}]", path, i);
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const std::size_t space = s.find(' ');
      if (space == 0 || space == std::string::npos || space + 1 == s.size() ||
          s.find(' ', space + 1) != std::string::npos) {
        throw Error(fmt::format("{}: expected two tokens separated by one space, got \"{}\"",
                                origin, terminal_safe(s)));
      }
      merges.push_back({s.substr(0, space), s.substr(space + 1), origin});
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.push_back({m[0].get<std::string>(), m[1].get<std::string>(), origin});
    } else {
      throw Error(fmt::format("{}: expected \"left right\" or [\"left\", \"right\"], got {}",
                              origin, terminal_safe(m.dump())));
    }
  }
  return merges;
}

std::unique_ptr<Gpt2Tokenizer> load_tokenizer_json(const fs::path& path, const std::string& spec,
                                                   Gpt2Options options) {
  const std::string name = path.string();
  const Json root = read_json_file(path);
  if (!root.is_object()) throw Error(fmt::format("{}: expected a JSON object", name));
  const auto model = root.find("model");
  if (model == root.end() || !model->is_object()) {
    throw Error(fmt::format("{}: no \"model\" object", name));
  }
  const std::string type = model->value("type", std::string("(missing)"));
  if (type != "BPE") {
    throw Error(
        fmt::format("{}: model.type is \"{}\", expected \"BPE\" (a byte-level BPE "
                    "tokenizer like GPT-2's)",
                    name, terminal_safe(type)));
  }
  // Options that would change the ids from GPT-2's.
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model->find(key);
    if (it != model->end() && !it->is_null() &&
        !(it->is_string() && it->get<std::string>().empty())) {
      throw Error(fmt::format("{}: model.{} is {}, which GPT-2 byte-level BPE does not use", name,
                              key, terminal_safe(it->dump())));
    }
  }
  if (model->value("ignore_merges", false)) {
    throw Error(fmt::format("{}: model.ignore_merges is true, which GPT-2 BPE does not do", name));
  }
  const auto pre = root.find("pre_tokenizer");
  const std::string pre_type = (pre != root.end() && pre->is_object())
                                   ? pre->value("type", std::string("(missing)"))
                                   : std::string("(missing)");
  if (pre_type != "ByteLevel") {
    throw Error(fmt::format("{}: pre_tokenizer.type is \"{}\", expected \"ByteLevel\"", name,
                            terminal_safe(pre_type)));
  }
  if (pre->value("add_prefix_space", false)) {
    throw Error(
        fmt::format("{}: pre_tokenizer.add_prefix_space is true; GPT-2 does not add a "
                    "space before the text",
                    name));
  }
  if (!pre->value("use_regex", true)) {
    throw Error(
        fmt::format("{}: pre_tokenizer.use_regex is false; GPT-2 splits with its regex", name));
  }
  const auto vocab = model->find("vocab");
  if (vocab == model->end()) throw Error(fmt::format("{}: no model.vocab", name));
  const auto merges = model->find("merges");
  if (merges == model->end()) throw Error(fmt::format("{}: no model.merges", name));
  const std::string vocab_source = name + " (model.vocab)";
  return std::make_unique<Gpt2Tokenizer>(vocab_from_json(*vocab, vocab_source),
                                         merges_from_json(*merges, name), vocab_source, spec,
                                         options);
}

std::unique_ptr<Gpt2Tokenizer> load_vocab_and_merges(const fs::path& vocab_path,
                                                     const fs::path& merges_path,
                                                     const std::string& spec, Gpt2Options options) {
  return std::make_unique<Gpt2Tokenizer>(
      vocab_from_json(read_json_file(vocab_path), vocab_path.string()),
      merges_from_text(merges_path), vocab_path.string(), spec, options);
}

}  // namespace

const std::array<std::string, 256>& gpt2_byte_to_unicode() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    auto utf8 = [](uint32_t cp) {
      std::string s;
      if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
      } else {
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
      return s;
    };
    // Printable bytes stand for themselves; the rest are moved to 256 + n.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable =
          (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = utf8(printable ? b : 256 + n++);
    }
    return t;
  }();
  return table;
}

struct Gpt2Tokenizer::PairSlot {
  uint64_t key = ~uint64_t{0};  // (left << 32) | right; all ones = empty
  int32_t rank = 0;
  int32_t merged = 0;
};

struct alignas(64) Gpt2Tokenizer::CacheShard {
  std::mutex mu;
  gpt2_cache::WordMap words;
};

namespace {
inline uint64_t pair_key(int32_t left, int32_t right) {
  return (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
}
}  // namespace

Gpt2Tokenizer::Gpt2Tokenizer(const std::vector<std::string>& tokens,
                             const std::vector<Merge>& merges, const std::string& vocab_source,
                             std::string spec, Gpt2Options options)
    : spec_(std::move(spec)), options_(options), instance_id_(next_instance_id++) {
  token_bytes_.resize(tokens.size());
  std::unordered_map<std::string, int32_t> id_of_bytes;
  id_of_bytes.reserve(tokens.size());
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    uint32_t bad_cp = 0;
    if (!token_to_bytes(tokens[id], &token_bytes_[id], &bad_cp)) {
      throw Error(
          fmt::format("{}: token \"{}\" (id {}) has character U+{:04X}, which is not in "
                      "GPT-2's byte-to-unicode alphabet",
                      vocab_source, terminal_safe(tokens[id]), id, bad_cp));
    }
    if (token_bytes_[id].empty()) {
      throw Error(fmt::format("{}: id {} is the empty token", vocab_source, id));
    }
    id_of_bytes.emplace(token_bytes_[id], static_cast<int32_t>(id));
  }
  for (int b = 0; b < 256; ++b) {
    const auto it = id_of_bytes.find(std::string(1, static_cast<char>(b)));
    if (it == id_of_bytes.end()) {
      throw Error(
          fmt::format("{}: no token for byte 0x{:02X} (\"{}\"); a byte-level vocabulary "
                      "needs all 256",
                      vocab_source, b, gpt2_byte_to_unicode()[b]));
    }
    byte_ids_[b] = it->second;
  }
  const auto eot = id_of_bytes.find(std::string(kEndOfText));
  if (eot == id_of_bytes.end()) {
    throw Error(fmt::format("{}: no \"{}\" token", vocab_source, kEndOfText));
  }
  eot_id_ = eot->second;

  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(2 * merges.size(), 16));
  pair_table_.assign(capacity, PairSlot{});
  pair_shift_ = 64 - std::countr_zero(capacity);
  std::unordered_map<uint64_t, std::size_t> first_rank;  // for duplicate reports
  first_rank.reserve(merges.size());
  std::string left_bytes, right_bytes;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const Merge& m = merges[rank];
    uint32_t bad_cp = 0;
    auto lookup = [&](const std::string& token, std::string* bytes) {
      const bool ok = token_to_bytes(token, bytes, &bad_cp);
      const auto it = ok ? id_of_bytes.find(*bytes) : id_of_bytes.end();
      if (it == id_of_bytes.end()) {
        throw Error(fmt::format("{}: merge \"{} {}\": token \"{}\" is not in the vocabulary ({})",
                                m.origin, terminal_safe(m.left), terminal_safe(m.right),
                                terminal_safe(token), vocab_source));
      }
      return it->second;
    };
    const int32_t left = lookup(m.left, &left_bytes);
    const int32_t right = lookup(m.right, &right_bytes);
    const auto merged = id_of_bytes.find(left_bytes + right_bytes);
    if (merged == id_of_bytes.end()) {
      throw Error(
          fmt::format("{}: merge \"{} {}\": the merged token \"{}{}\" is not in the "
                      "vocabulary ({})",
                      m.origin, terminal_safe(m.left), terminal_safe(m.right),
                      terminal_safe(m.left), terminal_safe(m.right), vocab_source));
    }
    const uint64_t key = pair_key(left, right);
    const auto [it, inserted] = first_rank.emplace(key, rank);
    if (!inserted) {
      throw Error(fmt::format("{}: merge \"{} {}\" repeats {}", m.origin, terminal_safe(m.left),
                              terminal_safe(m.right), merges[it->second].origin));
    }
    std::size_t slot = (key * 0x9E3779B97F4A7C15ull) >> pair_shift_;
    while (pair_table_[slot].key != ~uint64_t{0}) slot = (slot + 1) & (capacity - 1);
    pair_table_[slot] = {key, static_cast<int32_t>(rank), merged->second};
  }
  if (options_.cache == WordCache::kSharded) {
    cache_ = std::make_unique<CacheShard[]>(kNumCacheShards);
  }
}

Gpt2Tokenizer::~Gpt2Tokenizer() = default;

std::unique_ptr<Gpt2Tokenizer> Gpt2Tokenizer::load(const std::string& path, Gpt2Options options) {
  const std::string spec = "gpt2:" + path;
  if (path.empty()) throw Error("gpt2 tokenizer: empty path (expected gpt2:PATH)");
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status status = fs::status(p, ec);
  if (!fs::exists(status)) {
    throw Error(
        fmt::format("gpt2 tokenizer: {} does not exist (expected a directory with "
                    "vocab.json + merges.txt, encoder.json + vocab.bpe or tokenizer.json, "
                    "or a tokenizer.json file)",
                    path));
  }
  if (!fs::is_directory(status)) return load_tokenizer_json(p, spec, options);
  for (const auto& [vocab, merges] :
       {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}}) {
    const bool has_vocab = fs::exists(p / vocab), has_merges = fs::exists(p / merges);
    if (has_vocab && has_merges) return load_vocab_and_merges(p / vocab, p / merges, spec, options);
    if (has_vocab != has_merges) {
      throw Error(fmt::format("gpt2 tokenizer: {} has {} but not {}", path,
                              has_vocab ? vocab : merges, has_vocab ? merges : vocab));
    }
  }
  if (fs::exists(p / "tokenizer.json"))
    return load_tokenizer_json(p / "tokenizer.json", spec, options);
  throw Error(
      fmt::format("gpt2 tokenizer: {} holds none of vocab.json + merges.txt, "
                  "encoder.json + vocab.bpe, tokenizer.json",
                  path));
}

bool Gpt2Tokenizer::find_pair(int32_t left, int32_t right, int32_t* rank, int32_t* merged) const {
  const uint64_t key = pair_key(left, right);
  std::size_t slot = (key * 0x9E3779B97F4A7C15ull) >> pair_shift_;
  const std::size_t mask = pair_table_.size() - 1;
  while (true) {
    const PairSlot& s = pair_table_[slot];
    if (s.key == key) {
      *rank = s.rank;
      *merged = s.merged;
      return true;
    }
    if (s.key == ~uint64_t{0}) return false;
    slot = (slot + 1) & mask;
  }
}

void Gpt2Tokenizer::bpe(std::string_view word, std::vector<int32_t>* out) const {
  // The parts form a linked list over the word's bytes; a min-heap of
  // (rank, position) holds the candidate pairs. encoder.py merges, per round,
  // every left-to-right occurrence of the lowest-ranked pair and only then
  // looks at the pairs those merges made; pairs made in a round are therefore
  // held back until the round's rank is used up. This is O(n log n) where
  // encoder.py's loop is O(n^2), which matters for long unspaced runs.
  struct Node {
    int32_t id;  // -1 once merged into its left neighbour
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    int32_t rank;
    int32_t pos;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  thread_local std::vector<Node> nodes;
  thread_local std::vector<Candidate> heap;
  thread_local std::vector<Candidate> made;
  const int32_t n = static_cast<int32_t>(word.size());
  nodes.resize(n);
  heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    nodes[i] = {byte_ids_[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  int32_t rank, merged;
  for (int32_t i = 0; i + 1 < n; ++i) {
    if (find_pair(nodes[i].id, nodes[i + 1].id, &rank, &merged)) heap.push_back({rank, i});
  }
  const auto cmp = std::greater<Candidate>();
  std::make_heap(heap.begin(), heap.end(), cmp);
  while (!heap.empty()) {
    const int32_t round_rank = heap.front().rank;
    made.clear();
    while (!heap.empty() && heap.front().rank == round_rank) {
      std::pop_heap(heap.begin(), heap.end(), cmp);
      const int32_t pos = heap.back().pos;
      heap.pop_back();
      Node& node = nodes[pos];
      // Stale if this part was merged away or its pair changed since.
      if (node.id < 0 || node.next < 0) continue;
      if (!find_pair(node.id, nodes[node.next].id, &rank, &merged) || rank != round_rank) continue;
      Node& right = nodes[node.next];
      node.id = merged;
      right.id = -1;
      node.next = right.next;
      if (node.next >= 0) nodes[node.next].prev = pos;
      if (node.prev >= 0 && find_pair(nodes[node.prev].id, node.id, &rank, &merged)) {
        made.push_back({rank, node.prev});
      }
      if (node.next >= 0 && find_pair(node.id, nodes[node.next].id, &rank, &merged)) {
        made.push_back({rank, pos});
      }
    }
    for (const Candidate& c : made) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), cmp);
    }
  }
  for (int32_t i = 0; i >= 0; i = nodes[i].next) out->push_back(nodes[i].id);
}

void Gpt2Tokenizer::encode_word(std::string_view word, std::vector<int32_t>* out) const {
  if (word.size() == 1) {
    out->push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (options_.cache == WordCache::kNone || word.size() > kMaxCachedWordBytes) {
    bpe(word, out);
    return;
  }
  if (options_.cache == WordCache::kThreadLocal) {
    ThreadWordCache& cache = thread_word_cache;
    if (cache.owner != instance_id_) {
      cache.words.clear();
      cache.owner = instance_id_;
    }
    const auto it = cache.words.find(word);
    if (it != cache.words.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
    const std::size_t start = out->size();
    bpe(word, out);
    if (cache.words.size() >= kMaxWordsPerThread) cache.words.clear();
    cache.words.emplace(word, std::vector<int32_t>(out->begin() + start, out->end()));
    return;
  }
  const std::size_t hash = gpt2_cache::StringHash{}(word);
  CacheShard& shard = cache_[(hash >> 20) % kNumCacheShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    const auto it = shard.words.find(word);
    if (it != shard.words.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t start = out->size();
  bpe(word, out);
  std::vector<int32_t> ids(out->begin() + start, out->end());
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.words.size() >= kMaxWordsPerShard) shard.words.clear();
  shard.words.emplace(word, std::move(ids));
}

void Gpt2Tokenizer::encode(std::string_view text, std::vector<int32_t>* out) const {
  // Roughly 4 bytes per token in English; one reserve saves the regrowths.
  out->reserve(out->size() + text.size() / 4 + 1);
  std::size_t pos = 0;
  while (true) {
    const std::size_t eot = text.find(kEndOfText, pos);
    const std::string_view segment =
        text.substr(pos, eot == std::string_view::npos ? std::string_view::npos : eot - pos);
    std::size_t i = 0;
    while (i < segment.size()) {
      const std::size_t len = gpt2_piece_length(segment, i);
      encode_word(segment.substr(i, len), out);
      i += len;
    }
    if (eot == std::string_view::npos) break;
    out->push_back(eot_id_);
    pos = eot + kEndOfText.size();
  }
}

std::string Gpt2Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string text;
  text.reserve(ids.size() * 4);
  const int32_t n = vocab_size();
  for (int32_t id : ids) {
    if (id < 0 || id >= n) {
      throw Error(fmt::format("gpt2 tokenizer: token id {} is outside [0, {})", id, n));
    }
    text += token_bytes_[id];
  }
  return text;
}

}  // namespace trainscope::training
