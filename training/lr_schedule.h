// Learning-rate schedules: constant, or linear warm-up then cosine decay.
#ifndef TRAINSCOPE_TRAINING_LR_SCHEDULE_H_
#define TRAINSCOPE_TRAINING_LR_SCHEDULE_H_

#include <cstdint>
#include <string_view>

namespace trainscope::training {

struct LrSchedule {
  enum class Kind { kConstant, kCosine };
  Kind kind = Kind::kConstant;
  double lr = 3e-4;     // peak learning rate
  int64_t warmup = 0;   // steps of linear warm-up from lr / warmup to lr
  int64_t total = 1;    // steps of the run (cosine reaches min_lr at the last)
  double min_lr = 0.0;  // cosine floor

  // Learning rate for 0-based `step`.
  double at(int64_t step) const;
};

// "constant" or "cosine"; trainscope::Error naming the flag otherwise.
LrSchedule::Kind parse_lr_schedule(std::string_view name);
std::string_view lr_schedule_name(LrSchedule::Kind kind);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_LR_SCHEDULE_H_
