// Learning-rate schedules: constant, or linear warm-up then cosine decay.
#ifndef TRAINSCOPE_TRAINING_LR_SCHEDULE_H_
#define TRAINSCOPE_TRAINING_LR_SCHEDULE_H_

#include <cstdint>
#include <string_view>

#include "options/choices.h"

namespace trainscope::training {

struct LrSchedule {
  using Kind = options::LrScheduleKind;  // its names: options/choices.h
  Kind kind = Kind::kConstant;
  double lr = 3e-4;     // peak learning rate
  int64_t warmup = 0;   // steps of linear warm-up from lr / warmup to lr
  int64_t total = 1;    // steps of the run (cosine reaches min_lr at the last)
  double min_lr = 0.0;  // cosine floor

  // Learning rate for 0-based `step`.
  double at(int64_t step) const;
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_LR_SCHEDULE_H_
