#include "training/data/shuffle.h"

#include <numeric>
#include <utility>

namespace trainscope::training {

uint64_t mix_seed(uint64_t a, uint64_t b) {
  SplitMix first(a ^ 0x6a09e667f3bcc909ULL);
  SplitMix second(first.next() ^ b);
  return second.next();
}

void epoch_permutation(uint64_t seed, int64_t epoch, std::span<int64_t> out) {
  std::iota(out.begin(), out.end(), int64_t{0});
  SplitMix rng(mix_seed(seed, static_cast<uint64_t>(epoch)));
  for (std::size_t i = out.size(); i > 1; --i) {
    const std::size_t j = rng.below(i);
    std::swap(out[i - 1], out[j]);
  }
}

}  // namespace trainscope::training
