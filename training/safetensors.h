// Reading and writing the safetensors format (Hugging Face): an 8-byte
// little-endian header length, a JSON header mapping tensor names to dtype,
// shape and byte range, then the raw data. Tensors are laid out by a
// ParamLayout; on disk F32, F16 or BF16 (pretrained checkpoints ship the
// latter two), always float in memory.
//
// Writes are atomic (base/atomic_file.h), so a crash never leaves a
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
#include <string_view>
#include <vector>

#include "training/param_layout.h"

namespace trainscope::training {

enum class Dtype { kF32, kF16, kBF16 };
// "F32", "F16", "BF16": as headers spell them.
std::string_view dtype_name(Dtype d);
// A flag's value (`what`, e.g. "--dtype"): those names in any case; Error
// "--dtype must be F32, F16 or BF16, got 'X'" for anything else.
Dtype parse_dtype(std::string_view name, std::string_view what);

// Writes the layout's tensors (or only those whose indices are in `only`)
// from `arena`, converted to `dtype` (rounded to nearest even).
void save_safetensors(const std::filesystem::path& path, const TensorTable& layout,
                      std::span<const float> arena,
                      const std::map<std::string, std::string>& metadata = {},
                      Dtype dtype = Dtype::kF32, std::span<const int> only = {});

// What a file holds, read from its header alone: each tensor's dtype and
// shape by name (the metadata left out). Error naming the file when the
// header cannot be read or a tensor has a dtype other than these three.
struct TensorInfo {
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
};
std::map<std::string, TensorInfo> read_safetensors_header(const std::filesystem::path& path);

// One tensor of the file as floats, its shape checked against `shape`
// (Error naming the file and the tensor otherwise); empty when the file does
// not hold it. For tensors outside a layout (a tied model's lm_head.weight).
std::vector<float> read_safetensors_tensor(const std::filesystem::path& path,
                                           const std::string& name,
                                           const std::vector<int64_t>& shape);

// Fills `arena` (layout.total() floats) from the file, which must hold every
// tensor of the layout.
void load_safetensors(const std::filesystem::path& path, const TensorTable& layout,
                      std::span<float> arena);

// Reads the layout's tensors that the file holds (one shard of a checkpoint)
// into `arena`; returns their layout indices. A tensor the layout does not
// have is an error, except the rotary tables some exporters save
// (`*.rotary_emb.inv_freq`), which the model computes itself, and the
// lm_head.weight some write beside a tied embedding (the layout has the
// embedding and no head), which read_safetensors_tensor reads.
std::vector<int> read_safetensors(const std::filesystem::path& path, const TensorTable& layout,
                                  std::span<float> arena);

}  // namespace trainscope::training

#endif  // TRAINSCOPE_TRAINING_SAFETENSORS_H_
