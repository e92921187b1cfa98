// Sizes checked before anything is allocated: a model config or LoRA rank
// whose tensors cannot fit in this machine's memory (vocab_size 2147483647,
// --lora-rank 2147483647) is bad input naming the field and the bytes, not
// "out of memory" in the middle of the setup. The check is on the weights
// alone, a lower bound of what any command needs (training adds gradients,
// optimizer state and activations), so it never refuses what could run.
//
// Sizes are computed in double: products of int fields overflow int64 for
// the configs this is meant to catch.
#ifndef TRAINSCOPE_TRAINING_MODEL_SIZE_H_
#define TRAINSCOPE_TRAINING_MODEL_SIZE_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace trainscope::training {

// This machine's physical memory in bytes; 0 when unknown.
int64_t physical_memory_bytes();

// Error (bad input) "`what` needs BYTES bytes (GIB), more than the MEM of
// this machine's memory" when `bytes` exceed it; `what` says which fields
// make them ("vocab_size 2147483647 x hidden_size 4096"), `detail` what they
// are. Nothing when the memory is unknown.
void check_fits_in_memory(std::string_view what, double bytes, std::string_view detail);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_MODEL_SIZE_H_
