// Reading and writing the safetensors format (Hugging Face): an 8-byte
// little-endian header length, a JSON header mapping tensor names to dtype,
// shape and byte range, then the raw data. Only F32 tensors, laid out by a
// ParamLayout, which is all trainscope stores.
//
// Writes are atomic (kernels/atomic_file.h), so a crash never leaves a
// half-written file under the final name. Reads check
// everything against the layout and throw trainscope::Error naming the file
// and the tensor: unreadable, truncated, bad header, missing or extra tensor,
// wrong dtype or shape.
#ifndef TRAINSCOPE_TRAINING_SAFETENSORS_H_
#define TRAINSCOPE_TRAINING_SAFETENSORS_H_

#include <filesystem>
#include <map>
#include <span>
#include <string>

#include "training/param_layout.h"

namespace trainscope::training {

void save_safetensors(const std::filesystem::path& path, const ParamLayout& layout,
                      std::span<const float> arena,
                      const std::map<std::string, std::string>& metadata = {});

// Fills `arena` (layout.total() floats) from the file.
void load_safetensors(const std::filesystem::path& path, const ParamLayout& layout,
                      std::span<float> arena);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_SAFETENSORS_H_
