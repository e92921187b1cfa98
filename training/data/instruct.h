// The built-in instruction corpus ("builtin:instruct"): chat pairs in the
// spirit of the walkthrough's pirate set (../shared/background/003_*), so a
// fine-tuning run works offline and a model visibly learns a style:
//     user:      "Tell this like a pirate: <sentence>"
//     assistant: the sentence with a fixed table of pirate substitutions
//                (hello -> ahoy, my -> me, you -> ye, friend -> matey ...)
//                and a closing "Arr!"
// rendered with the chat template of records.h. The sentences come from a
// small grammar (who, does what, to what, where, when). Pair i is a pure
// function of (seed, i), and validation pairs use indices from
// kValidationStoryBase on, as the stories do.
//
// Thread-safe: pure functions.
#ifndef TRAINSCOPE_TRAINING_DATA_INSTRUCT_H_
#define TRAINSCOPE_TRAINING_DATA_INSTRUCT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::training {

inline constexpr std::string_view kPiratePrompt = "Tell this like a pirate: ";

// The plain sentence of pair `index` and its pirate rewriting.
struct PiratePair {
  std::string sentence;
  std::string pirate;
};
PiratePair pirate_pair(uint64_t seed, int64_t index);

// Applies the substitution table word by word (case kept for a capital first
// letter), then appends " Arr!".
std::string to_pirate(std::string_view sentence);

// Replaces *out with pair `index` rendered as a chat (user, assistant).
void generate_instruction(uint64_t seed, int64_t index, std::string* out);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_INSTRUCT_H_
