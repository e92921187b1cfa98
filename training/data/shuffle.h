// Deterministic randomness for the data pipeline: a tiny counter-based
// generator and the per-epoch permutations of the order contract.
//
// std::shuffle and std::uniform_int_distribution are implementation-defined,
// so the same seed could give different orders with another standard library;
// these functions give the same result everywhere. Pure functions and a
// value-type generator: thread-safe as long as each thread owns its SplitMix.
#ifndef TRAINSCOPE_TRAINING_DATA_SHUFFLE_H_
#define TRAINSCOPE_TRAINING_DATA_SHUFFLE_H_

#include <cstdint>
#include <span>

namespace trainscope::training {

// SplitMix64 (Steele et al.): statistically fine for shuffling and sampling
// words, and a pure function of its state, so story i can be generated alone.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0 (Lemire's multiply-shift; bias < n / 2^64).
  uint64_t below(uint64_t n) {
    __extension__ using Wide = unsigned __int128;
    return static_cast<uint64_t>((static_cast<Wide>(next()) * n) >> 64);
  }

 private:
  uint64_t state_;
};

// Mixes several words into one seed (so (seed, epoch) and (seed, epoch + 1)
// start unrelated streams).
uint64_t mix_seed(uint64_t a, uint64_t b);

// Fills `out` with the permutation of [0, out.size()) for (seed, epoch):
// Fisher-Yates driven by SplitMix(mix_seed(seed, epoch)).
void epoch_permutation(uint64_t seed, int64_t epoch, std::span<int64_t> out);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_SHUFFLE_H_
