// The built-in story corpus ("builtin:stories"): short, simple English stories
// in the spirit of TinyStories, generated rather than downloaded.
//
// Story i is a pure function of (seed, i): a rank generates only the stories
// of its shard, and two runs with the same seed see the same corpus. Each
// story picks a hero and a friend (names, pronouns, kinds), a place, an object,
// feelings and one of several plots (a lost toy, sharing, helping an animal,
// a rainy day, being brave, building something, a race), each told with
// several sentence templates, with dialogue and a closing line. The grammar is
// small and regular on purpose: a small LM's loss falls quickly and a lot.
//
// Thread-safe: pure functions.
#ifndef TRAINSCOPE_TRAINING_DATA_STORIES_H_
#define TRAINSCOPE_TRAINING_DATA_STORIES_H_

#include <cstdint>
#include <string>

namespace trainscope::training {

// Story indices at or above this belong to the validation split, so the two
// splits never share a story whatever their sizes.
inline constexpr int64_t kValidationStoryBase = int64_t{1} << 40;

// Replaces *out with story `index` of the corpus `seed`.
void generate_story(uint64_t seed, int64_t index, std::string* out);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_STORIES_H_
