// The options most training tests start from: the tiny preset, one thread,
// quiet, lr 3e-3, `batch` rows of `block` tokens on `data` (a small built-in
// corpus unless told).
#ifndef TRAINSCOPE_TESTS_TINY_TRAINING_H_
#define TRAINSCOPE_TESTS_TINY_TRAINING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "training/trainer.h"

namespace trainscope::testing {

inline options::TrainOptions tiny_training(
    int64_t steps, int batch, int block,
    std::string data = "builtin:stories?docs=200&valid_docs=16") {
  options::TrainOptions o;
  o.model = "tiny";
  o.batch = batch;
  o.block = block;
  o.steps = steps;
  o.lr = 3e-3;
  o.threads = 1;
  o.quiet = true;
  o.data.source = std::move(data);
  return o;
}

// n token ids below vocab in a fixed pattern that `salt` shifts.
inline std::vector<int32_t> tokens(int n, int vocab, int salt) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = (i * 7 + salt * 3 + i * i) % vocab;
  return t;
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_TINY_TRAINING_H_
