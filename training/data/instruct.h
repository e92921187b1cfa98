// The built-in instruction corpus ("builtin:instruct"): chat pairs in the
// spirit of the walkthrough's pirate set (../shared/background/003_*), so a
// fine-tuning run works offline and a model visibly learns a style:
//     user:      "Tell this like a pirate: <sentence>"
//     assistant: the sentence with a fixed table of pirate substitutions
//                (hello -> ahoy, my -> me, you -> ye, friend -> matey ...)
//                and a closing "Arr!"
// rendered with the chat template of records.h. The sentences come from a
// small grammar (who, does what, to what, where, when): 8 x 8 x 8 x 6 x 5 =
// 15,360 sentences. Pair i is a pure function of (seed, i), and validation
// pairs use indices from kValidationStoryBase on, as the stories do.
//
// The splits share no sentence: indices alone would not keep them apart
// (pairs are drawn from the grammar, so at docs=20000 most validation
// sentences were also training ones). A hash of the seed reserves one
// sentence in each block of 16 for validation: kInstructValidPairs (960)
// distinct validation pairs exist and kInstructTrainPairs (14,400) distinct
// training pairs. Each pair is drawn from its split's with replacement, so
// docs=N holds fewer than N distinct pairs.
//
// Thread-safe: pure functions.
#ifndef TRAINSCOPE_TRAINING_DATA_INSTRUCT_H_
#define TRAINSCOPE_TRAINING_DATA_INSTRUCT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::training {

inline constexpr std::string_view kPiratePrompt = "Tell this like a pirate: ";

// Distinct pairs in each split, for any seed.
inline constexpr int64_t kInstructTrainPairs = 14'400;
inline constexpr int64_t kInstructValidPairs = 960;

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
