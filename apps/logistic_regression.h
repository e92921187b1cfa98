// The walkthrough's first model (../shared/background/003_*): logistic
// regression learning OR from its four examples with binary cross-entropy,
// full-batch gradient descent, w = 0 and b = 0 to start, on the project's
// own matmul kernels. Gradients as the walkthrough computes them by hand:
// dL/dz = (p - y) / n, then dL/dw through matmul_backward, dL/db their sum.
#ifndef TRAINSCOPE_APPS_LOGISTIC_REGRESSION_H_
#define TRAINSCOPE_APPS_LOGISTIC_REGRESSION_H_

#include <array>
#include <cstdio>
#include <vector>

namespace trainscope::apps {

struct LogisticRun {
  std::vector<float> losses;        // one per epoch, before that epoch's update
  std::array<bool, 4> predictions;  // p > 0.5 after training, for OR's four inputs
  float accuracy = 0;               // share of the four that are right
};

// Prints "Epoch    0 | Loss: 0.693147" every `print_every` epochs to `out`
// (null: silent), then the predictions and the accuracy, as the walkthrough.
LogisticRun train_logistic_or(int epochs = 1000, float learning_rate = 0.1f, int print_every = 100,
                              std::FILE* out = nullptr);

}  // namespace trainscope::apps

#endif  // TRAINSCOPE_APPS_LOGISTIC_REGRESSION_H_
