// build/apps/logistic_regression: the walkthrough's from-scratch example,
// logistic regression learning OR (1000 epochs, loss every 100).
#include "apps/logistic_regression.h"

int main() {
  trainscope::apps::train_logistic_or(1000, 0.1f, 100, stdout);
  return 0;
}
