#include "apps/logistic_regression.h"

#include <cmath>

#include "kernels/matmul.h"

namespace trainscope::apps {
namespace {

constexpr int kExamples = 4, kFeatures = 2;
// OR's truth table: inputs [4, 2] and labels.
constexpr float kX[kExamples * kFeatures] = {0, 0, 0, 1, 1, 0, 1, 1};
constexpr float kY[kExamples] = {0, 1, 1, 1};

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

// p = sigmoid(X w^T + b): the matmul kernel as a one-output linear layer.
void predict(const float* w, float b, float* p) {
  kernels::matmul_forward(p, kX, w, kExamples, kFeatures, 1);
  for (int i = 0; i < kExamples; ++i) p[i] = sigmoid(p[i] + b);
}

float binary_cross_entropy(const float* p, float eps = 1e-8f) {
  float sum = 0;
  for (int i = 0; i < kExamples; ++i) {
    sum += kY[i] * std::log(p[i] + eps) + (1 - kY[i]) * std::log(1 - p[i] + eps);
  }
  return -sum / kExamples;
}

}  // namespace

LogisticRun train_logistic_or(int epochs, float learning_rate, int print_every, std::FILE* out) {
  float w[kFeatures] = {0, 0}, b = 0;
  float p[kExamples], dz[kExamples];
  LogisticRun run;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    predict(w, b, p);
    const float loss = binary_cross_entropy(p);
    run.losses.push_back(loss);
    float dw[kFeatures] = {0, 0}, db = 0;
    for (int i = 0; i < kExamples; ++i) {
      dz[i] = (p[i] - kY[i]) / kExamples;
      db += dz[i];
    }
    kernels::matmul_backward<float>(nullptr, dw, dz, kX, w, kExamples, kFeatures, 1);
    for (int j = 0; j < kFeatures; ++j) w[j] -= learning_rate * dw[j];
    b -= learning_rate * db;
    if (out != nullptr && print_every > 0 && epoch % print_every == 0) {
      std::fprintf(out, "Epoch %4d | Loss: %.6f\n", epoch, loss);
    }
  }
  predict(w, b, p);
  int right = 0;
  for (int i = 0; i < kExamples; ++i) {
    run.predictions[i] = p[i] > 0.5f;
    right += run.predictions[i] == (kY[i] > 0.5f) ? 1 : 0;
  }
  run.accuracy = static_cast<float>(right) / kExamples;
  if (out != nullptr) {
    std::fprintf(out, "Final Predictions: [%s, %s, %s, %s]\nAccuracy: %.2f%%\n",
                 run.predictions[0] ? "True" : "False", run.predictions[1] ? "True" : "False",
                 run.predictions[2] ? "True" : "False", run.predictions[3] ? "True" : "False",
                 100.0 * run.accuracy);
  }
  return run;
}

}  // namespace trainscope::apps
