// `trainscope train`: one training run, alone or as every rank of an mpirun
// job (the communicator is picked from the environment mpirun gives).
//
//   trainscope train --model seed --steps 50
//   mpirun -np 2 trainscope train --mode sharded --reduce overlap --summary s.json
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>

#include "cli/commands.h"
#include "cli/validators.h"
#include "comm/communicator.h"
#include "base/check.h"
#include "profiler/proc_fs.h"
#include "profiler/stall_watchdog.h"
#include "training/run/stall.h"
#include "options/train_option_table.h"
#include "training/model_config.h"
#include "training/trainer.h"

namespace trainscope::cli {
namespace {

template <typename... F>
struct Overloaded : F... {
  using F::operator()...;
};

struct TrainFlags {
  options::TrainOptions o;
  std::string backend = "auto";
  // Text options (enumerations, lists) and negated switches by flag, read
  // here and set on `o` by apply_text_flags().
  std::map<std::string_view, std::string> text;
  std::map<std::string_view, bool> negated;
  std::map<std::string_view, CLI::Option*> added;
};

// The check of a number flag of type T, from its row: a whole number of T
// (at least 1, at least 0 or any), or a floating-point one (positive,
// non-negative or any finite number).
template <typename T>
CLI::Validator number_check(options::Check c) {
  const bool positive = c == options::Check::kPositive;
  const bool non_negative = c == options::Check::kNonNegative;
  if constexpr (std::is_integral_v<T>) {
    return positive ? whole_number<T>(1) : non_negative ? whole_number<T>(0) : whole_number<T>();
  } else {
    return positive ? kPositive : non_negative ? kNonNegative : kFinite;
  }
}

// One row of the option table as a flag of `cmd`.
CLI::Option* add_row(CLI::App* cmd, const options::TrainOption& row, TrainFlags& f) {
  const std::string flag(row.flag);
  CLI::Option* opt =
      std::visit(Overloaded{
                     [&](const options::TextRef& ref) {
                       std::string& text = f.text[row.flag] = ref.get(f.o);
                       return cmd->add_option(flag, text, row.help);
                     },
                     [&](options::Ref<bool> ref) {
                       return row.negates ? cmd->add_flag(flag, f.negated[row.flag], row.help)
                                          : cmd->add_flag(flag, ref(f.o), row.help);
                     },
                     [&](auto ref) {
                       auto& value = ref(f.o);
                       using T = std::remove_reference_t<decltype(value)>;
                       CLI::Option* added = cmd->add_option(flag, value, row.help);
                       if constexpr (std::is_arithmetic_v<T>)
                         added->check(number_check<T>(row.check));
                       return added;
                     },
                 },
                 row.ref);
  // Defaults worth showing: not an empty path, nor 0 for "the preset's".
  const std::string shown = options::option_text(row, f.o);
  const bool is_switch = std::holds_alternative<options::Ref<bool>>(row.ref);
  if (!is_switch && !shown.empty() && !(row.check == options::Check::kPositive && shown == "0")) {
    opt->capture_default_str();
  }
  return opt;
}

// The flags of `train`, on `cmd`, from the option table (and --comm).
void add_train_flags(CLI::App* cmd, TrainFlags& f) {
  for (const options::TrainOption& row : options::train_option_table()) {
    if (!row.flag.empty()) f.added[row.flag] = add_row(cmd, row, f);
  }
  cmd->add_option("--comm", f.backend, "Communicator: auto (MPI under mpirun), mpi or local")
      ->capture_default_str();
  // The presets are the model library's; the table knows only the flag.
  f.added["--model"]->description(fmt::format("{} (presets: {})",
                                              f.added["--model"]->get_description(),
                                              fmt::join(training::model_preset_names(), ", ")));
  f.added["--overwrite"]->needs(f.added["--checkpoint-dir"]);
  f.added["--resume"]->excludes(f.added["--model"]);
  f.added["--init-from"]->excludes(f.added["--model"])->excludes(f.added["--resume"]);
}

// The text options and negated switches given, onto `f.o`; then the flags
// that only mean something with others.
void apply_text_flags(TrainFlags& f) {
  for (const options::TrainOption& row : options::train_option_table()) {
    if (row.flag.empty() || f.added[row.flag]->count() == 0) continue;
    if (const auto* ref = std::get_if<options::TextRef>(&row.ref)) {
      ref->set(f.o, f.text[row.flag], row.flag);
    } else if (row.negates) {
      std::get<options::Ref<bool>>(row.ref)(f.o) = false;
    }
  }
  for (const options::TrainOption& row : options::train_option_table()) {
    if (row.summary.starts_with("lora.") && f.added[row.flag]->count() > 0 &&
        f.o.fine_tune != options::FineTune::kLora) {
      throw Error(fmt::format("{} sets up LoRA adapters: it goes with --fine-tune lora", row.flag));
    }
  }
}

// The communicator, under the run's watchdog: MPI's start-up waits for
// every rank, so a rank stopped or stuck before it ends is named too.
std::unique_ptr<comm::Communicator> start_communicator(const std::string& backend,
                                                       profiler::StallWatchdog& watchdog) {
  const profiler::StallWatchdog::Wait wait = watchdog.wait("MPI_Init");
  return comm::make_communicator(backend);
}

void run(TrainFlags& f) {
  apply_text_flags(f);
  options::TrainOptions& o = f.o;
  const comm::LaunchedPlace place = comm::launched_place();
  profiler::StallWatchdog watchdog(training::watchdog_options(
      o, {.rank = place.rank, .world = place.size, .host = profiler::host_name()}));
  auto comm = start_communicator(f.backend, watchdog);
  run_on_every_rank(*comm, [&] {
    if (o.inject_delay && o.inject_delay->rank >= comm->size()) {
      // Every rank sees the same job: one message, from rank 0.
      throw comm::CollectiveError(
          fmt::format("--inject-delay: rank {} is not in this job of {} "
                      "rank(s)",
                      o.inject_delay->rank, comm->size()));
    }
    const results::RunSummary s = training::run_training(o, *comm, watchdog);
    if (s.status == results::RunStatus::kFailed) {
      if (comm->rank() == 0) std::fprintf(stderr, "trainscope: error: %s\n", s.error.c_str());
      throw SilentExit{kExitFailure};
    }
  });
}

}  // namespace

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  auto* cmd = app.add_subcommand(
      "train",
      "Train the Llama-style model and report loss, step time, tokens/s, memory by category and "
      "phase times. Run it directly, or under mpirun for data parallelism (every rank runs this "
      "same command; --batch is the global batch).");
  add_train_flags(cmd, *flags);
  cmd->callback([flags] { run(*flags); });
}

options::TrainOptions check_train_args(const std::vector<std::string>& args) {
  CLI::App app;
  TrainFlags flags;
  add_train_flags(&app, flags);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw Error(e.what());
  }
  apply_text_flags(flags);
  return flags.o;
}

}  // namespace trainscope::cli
