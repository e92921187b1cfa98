#include "training/lr_schedule.h"

#include <cmath>
#include <numbers>
#include <string>

#include "base/check.h"

namespace trainscope::training {

double LrSchedule::at(int64_t step) const {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (kind == Kind::kConstant) return lr;
  const int64_t decay_steps = total - warmup;
  if (decay_steps <= 1) return lr;
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(decay_steps - 1));
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace trainscope::training
