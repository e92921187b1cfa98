#include "options/data_options.h"

#include <fmt/core.h>

#include "base/check.h"

namespace trainscope::options {

void validate_options(const DataOptions& o) {
  if (o.block < 2) {
    throw Error(fmt::format(
        "block: {} tokens is too short (need at least 2: one input, one target)", o.block));
  }
  if (o.global_batch < 1) {
    throw Error(fmt::format("global batch: {} must be at least 1", o.global_batch));
  }
  if (o.world_size < 1) {
    throw Error(fmt::format("world size: {} must be at least 1", o.world_size));
  }
  if (o.rank < 0 || o.rank >= o.world_size) {
    throw Error(fmt::format("rank {} is outside [0, {}) for world size {}", o.rank, o.world_size,
                            o.world_size));
  }
  if (o.data_mode == DataMode::kNaive && o.world_size > 1) {
    throw Error(fmt::format(
        "data mode naive runs in one process, but the world size is {} (use duplicated or sharded)",
        o.world_size));
  }
  if (o.global_batch % o.world_size != 0) {
    throw Error(fmt::format("global batch {} is not divisible by the world size {}", o.global_batch,
                            o.world_size));
  }
  if (o.max_record_bytes < 1) {
    throw Error(fmt::format("max record bytes: {} must be positive", o.max_record_bytes));
  }
  if (o.builtin_docs < 0 || o.builtin_valid_docs < 0) {
    throw Error("builtin story counts must not be negative");
  }
  if (o.threads < 0) throw Error(fmt::format("threads: {} must not be negative", o.threads));
  if (o.mask_prompt && o.mode != BatchMode::kPad) {
    throw Error(
        "--mask-prompt needs --batching pad: a packed row mixes documents, so it has no "
        "one prompt to leave out");
  }
}

}  // namespace trainscope::options
