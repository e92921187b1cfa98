// The command-line flags of DataOptions, so every subcommand that reads data
// (train, eval, suites) spells and documents them the same way.
//
// add_data_flags registers the flags on `cmd`, bound to *options (which must
// outlive parsing); enum values are parsed by data_options.h's parse_* at
// parse time, so a bad value is a trainscope::Error naming the flag. Not
// thread-safe (CLI11 setup).
#ifndef TRAINSCOPE_TRAINING_DATA_DATA_FLAGS_H_
#define TRAINSCOPE_TRAINING_DATA_DATA_FLAGS_H_

#include <CLI/CLI.hpp>

#include "training/data/data_options.h"

namespace trainscope::training {

// Adds --data, --split, --text-field, --delimiter, --one-per-line,
// --batching, --mask-padding, --block, --global-batch, --data-seed,
// --no-shuffle, --data-mode, --shard, --skip-bad-records,
// --max-record-bytes, --stories, --valid-stories, --stories-seed and
// --data-threads. world_size and rank are not flags: they come from MPI.
void add_data_flags(CLI::App& cmd, DataOptions* options);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_DATA_DATA_FLAGS_H_
