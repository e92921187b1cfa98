// What every room of a training run shares (training/run/): the options, the
// communicator, who this rank is, and rank 0's console. The coordinator
// (training/trainer.cpp) makes one per run_training() call; configure_run()
// fills in the options' defaults, and from then on the rooms only read it.
#ifndef TRAINSCOPE_TRAINING_RUN_RUN_CONTEXT_H_
#define TRAINSCOPE_TRAINING_RUN_RUN_CONTEXT_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "training/lora.h"
#include "options/train_options.h"

namespace trainscope::training {

struct RunContext {
  RunContext(const options::TrainOptions& options, comm::Communicator& comm, std::FILE* out)
      : options(options),
        comm(comm),
        out(out),
        rank(comm.rank()),
        world(comm.size()),
        lead(rank == 0) {}
  RunContext(const RunContext&) = delete;
  RunContext& operator=(const RunContext&) = delete;

  options::TrainOptions options;  // as given, with the batch and block defaults filled in
  comm::Communicator& comm;       // every collective of the run goes through it
  std::FILE* out;                 // rank 0's progress lines and tables
  const int rank, world;
  const bool lead;  // rank 0: prints, and writes the outputs

  // Rank 0 prints `text`, unless --quiet.
  void say(const std::string& text) const {
    if (lead && !options.quiet) {
      std::fputs(text.c_str(), out);
      std::fflush(out);
    }
  }
  bool is_last(int64_t step) const { return step + 1 == options.steps; }
  // The adapters' settings when --fine-tune lora; none when every weight trains.
  std::optional<LoraConfig> lora() const {
    return options.fine_tune == options::FineTune::kLora ? std::optional(options.lora)
                                                         : std::nullopt;
  }
};

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_RUN_RUN_CONTEXT_H_
