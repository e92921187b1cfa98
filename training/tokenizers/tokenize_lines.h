// Line-by-line tokenization, the work behind `trainscope tokenize`: each text
// line becomes one line of space-separated ids, and back.
//
// A line is the text between newlines ("\n" is not part of it; a final line
// without one still counts, a trailing newline does not start another), so a
// line's ids never include the newline's. Decoding writes each line's text and
// a newline; text whose ids themselves decode to newlines spans several lines.
//
// Thread-safety: as the streams passed in; the tokenizer is only read.
#ifndef TRAINSCOPE_TRAINING_TOKENIZERS_TOKENIZE_LINES_H_
#define TRAINSCOPE_TRAINING_TOKENIZERS_TOKENIZE_LINES_H_

#include <cstdint>
#include <iosfwd>
#include <string_view>

#include "training/tokenizers/tokenizer.h"

namespace trainscope::training {

// Returns the number of lines encoded.
int64_t encode_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out);

// Each input line holds ids separated by spaces or tabs (an empty line decodes
// to an empty line). Throws trainscope::Error naming `source` and the line
// number for anything that is not an id in [0, vocab_size()). Returns the
// number of lines decoded.
int64_t decode_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                     std::string_view source = "stdin");

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_TOKENIZERS_TOKENIZE_LINES_H_
