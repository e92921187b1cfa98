#include "training/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/atomic_file.h"
#include "base/check.h"
#include "kernels/float16.h"
#include "base/json_reader.h"
#include "base/quote.h"
#include "kernels/storage.h"

namespace trainscope::training {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::vector<int64_t> int_list(const JsonReader& r) {
  std::vector<int64_t> out(r.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = r[i].get<int64_t>();
  return out;
}

constexpr std::string_view kDtypeNames[] = {"F32", "F16", "BF16"};
int64_t dtype_bytes(Dtype d) { return d == Dtype::kF32 ? 4 : 2; }

// Headers spell dtypes exactly as the format does: no case folding here.
Dtype header_dtype(std::string_view name, const std::string& tensor) {
  for (int i = 0; i < 3; ++i) {
    if (kDtypeNames[i] == name) return static_cast<Dtype>(i);
  }
  throw Error(fmt::format("tensor {} has dtype {}; F32, F16 and BF16 are read",
                          quoted_for_terminal(tensor), terminal_safe(name)));
}

// The byte range [begin, end) of the data section that holds tensor `t`,
// and its dtype, after checking its header entry against the model's layout.
std::tuple<int64_t, int64_t, Dtype> data_range(const JsonReader& e, const TensorSpec& t) {
  const Dtype dtype = header_dtype(e["dtype"].get<std::string>(), t.name);
  const auto shape = int_list(e["shape"]);
  if (shape != t.shape) {
    throw Error(fmt::format("tensor '{}' has shape {} but the model config expects {}", t.name,
                            shape_string(shape), shape_string(t.shape)));
  }
  const auto offsets = int_list(e["data_offsets"]);
  // Sign and order first: then the subtraction cannot overflow.
  if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0] ||
      offsets[1] - offsets[0] != t.numel * dtype_bytes(dtype)) {
    throw Error(fmt::format("tensor '{}' has inconsistent data_offsets", t.name));
  }
  return {offsets[0], offsets[1], dtype};
}

// x rounded to F16 or BF16 bit patterns.
void to_half(std::span<const float> x, Dtype dtype, uint16_t* out) {
  for (std::size_t i = 0; i < x.size(); ++i) {
    out[i] = dtype == Dtype::kF16 ? kernels::float_to_f16(x[i]) : kernels::float_to_bf16(x[i]);
  }
}

// The length prefix and header of a file holding `chosen` as `dtype`, the
// header padded so the data starts 8-byte aligned (as the format recommends).
std::string header_bytes(const TensorTable& layout, std::span<const int> chosen,
                         const std::map<std::string, std::string>& metadata, Dtype dtype) {
  json header = json::object();
  json meta = {{"format", "pt"}};
  for (const auto& [k, v] : metadata) meta[k] = v;
  header["__metadata__"] = meta;
  int64_t at = 0;
  for (int i : chosen) {
    const TensorSpec& t = layout.tensors().at(i);
    const int64_t bytes = t.numel * dtype_bytes(dtype);
    header[t.name] = {
        {"dtype", dtype_name(dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  const uint64_t n = text.size();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + text;
}

// F16 or BF16 bytes to floats.
void decode(std::string_view bytes, Dtype dtype, float* out) {
  for (std::size_t i = 0; i < bytes.size() / 2; ++i) {
    const auto h = static_cast<uint16_t>(static_cast<unsigned char>(bytes[2 * i]) |
                                         static_cast<unsigned char>(bytes[2 * i + 1]) << 8);
    out[i] = dtype == Dtype::kF16 ? kernels::f16_to_float(h) : kernels::bf16_to_float(h);
  }
}

// The header of an open file, and where its data section starts and ends.
struct Header {
  json entries;
  int64_t data_start = 0, data_size = 0;
};

Header read_header(std::ifstream& in, const std::string& name) {
  in.seekg(0, std::ios::end);
  const int64_t file_size = in.tellg();
  in.seekg(0);
  unsigned char len[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len), 8)) {
    throw Error(
        fmt::format("{} is not a safetensors file: shorter than its 8-byte header length", name));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > static_cast<uint64_t>(file_size - 8)) {
    throw Error(
        fmt::format("{} is truncated or not a safetensors file: header length {} exceeds "
                    "the file size {}",
                    name, n, file_size));
  }
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  Header h;
  h.entries = parse_json(text, fmt::format("{}: safetensors header", name));
  h.data_start = 8 + static_cast<int64_t>(n);
  h.data_size = file_size - h.data_start;
  return h;
}

bool skipped_buffer(const std::string& key) { return key.ends_with(".rotary_emb.inv_freq"); }

// lm_head.weight beside a tied embedding: read apart (load_hf_weights).
bool tied_head(const TensorTable& layout, const std::string& key) {
  return key == "lm_head.weight" && layout.find(key) < 0 &&
         layout.find("model.embed_tokens.weight") >= 0;
}

}  // namespace

std::string_view dtype_name(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }

Dtype parse_dtype(std::string_view name, std::string_view what) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (int i = 0; i < 3; ++i) {
    if (kDtypeNames[i] == upper) return static_cast<Dtype>(i);
  }
  throw Error(fmt::format("{} must be F32, F16 or BF16, got '{}'", what, name));
}

void save_safetensors(const fs::path& path, const TensorTable& layout, std::span<const float> arena,
                      const std::map<std::string, std::string>& metadata, Dtype dtype,
                      std::span<const int> only) {
  // Tensors go to disk as they lie in memory, which must be the file's order.
  static_assert(std::endian::native == std::endian::little);
  TS_CHECK(static_cast<int64_t>(arena.size()) == layout.total());
  std::vector<int> chosen(only.begin(), only.end());
  if (chosen.empty()) {
    for (int i = 0; i < static_cast<int>(layout.tensors().size()); ++i) chosen.push_back(i);
  }
  const std::string header = header_bytes(layout, chosen, metadata, dtype);
  // F32 is written from the arena itself: a checkpoint must not cost a
  // second copy of the weights. Half formats need their converted bytes.
  int64_t half_count = 0;
  if (dtype != Dtype::kF32) {
    for (int i : chosen) half_count += layout.tensors()[i].numel;
  }
  kernels::Buffer<uint16_t> half(static_cast<std::size_t>(half_count),
                                 kernels::MemoryCategory::kWorkspace);
  std::vector<std::string_view> pieces = {header};
  int64_t at = 0;
  for (int i : chosen) {
    const TensorSpec& t = layout.tensors()[i];
    const auto x =
        arena.subspan(static_cast<std::size_t>(t.offset), static_cast<std::size_t>(t.numel));
    const char* bytes = reinterpret_cast<const char*>(x.data());
    if (dtype != Dtype::kF32) {
      to_half(x, dtype, half.data() + at);
      bytes = reinterpret_cast<const char*>(half.data() + at);
      at += t.numel;
    }
    pieces.emplace_back(bytes, static_cast<std::size_t>(t.numel * dtype_bytes(dtype)));
  }
  write_file_atomically(path, pieces);
}

std::map<std::string, TensorInfo> read_safetensors_header(const fs::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}", name));
  const Header header = read_header(in, name);
  std::map<std::string, TensorInfo> tensors;
  JsonReader::rethrow_in(name, [&] {
    const JsonReader r(header.entries);
    r.require_object();
    for (const auto& [key, value] : header.entries.items()) {
      if (key == "__metadata__") continue;
      tensors[key] = {header_dtype(r[key]["dtype"].get<std::string>(), key),
                      int_list(r[key]["shape"])};
    }
  });
  return tensors;
}

std::vector<float> read_safetensors_tensor(const fs::path& path, const std::string& name,
                                           const std::vector<int64_t>& shape) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}", path.string()));
  const Header header = read_header(in, path.string());
  TensorSpec t{name, shape, 0, 1};
  for (int64_t d : shape) t.numel *= d;
  std::vector<float> out;
  JsonReader::rethrow_in(path.string(), [&] {
    const JsonReader r(header.entries);
    r.require_object();
    if (!r.contains(name)) return;
    const auto [begin, end, dtype] = data_range(r[name], t);
    if (end > header.data_size) throw Error(fmt::format("truncated: tensor '{}'", name));
    std::string bytes(static_cast<std::size_t>(end - begin), '\0');
    in.seekg(header.data_start + begin);
    if (!in.read(bytes.data(), end - begin)) {
      throw Error(fmt::format("read failed for tensor '{}'", name));
    }
    out.resize(static_cast<std::size_t>(t.numel));
    if (dtype == Dtype::kF32)
      std::memcpy(out.data(), bytes.data(), bytes.size());
    else
      decode(bytes, dtype, out.data());
  });
  return out;
}

std::vector<int> read_safetensors(const fs::path& path, const TensorTable& layout,
                                  std::span<float> arena) {
  TS_CHECK(static_cast<int64_t>(arena.size()) == layout.total());
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read checkpoint {}", name));
  const Header header = read_header(in, name);
  std::vector<int> found;
  JsonReader::rethrow_in(name, [&] {
    const JsonReader r(header.entries);
    r.require_object();
    // Where each tensor's bytes are; two tensors may not share any.
    std::vector<std::tuple<int64_t, int64_t, Dtype, int>> ranges;
    for (const auto& [key, value] : header.entries.items()) {
      if (key != "__metadata__" && !skipped_buffer(key) && !tied_head(layout, key) &&
          layout.find(key) < 0) {
        throw Error(fmt::format("unexpected tensor {} (not part of this model config)",
                                quoted_for_terminal(key)));
      }
    }
    for (int index = 0; index < static_cast<int>(layout.tensors().size()); ++index) {
      const TensorSpec& t = layout.tensors()[index];
      if (!r.contains(t.name)) continue;
      const std::string& key = t.name;
      const auto [begin, end, dtype] = data_range(r[key], t);
      if (end > header.data_size) {
        throw Error(
            fmt::format("truncated: tensor '{}' needs bytes up to {} but the data section "
                        "has {}",
                        t.name, end, header.data_size));
      }
      ranges.emplace_back(begin, end, dtype, index);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) {
      if (std::get<0>(ranges[i]) < std::get<1>(ranges[i - 1])) {
        throw Error(fmt::format("the data_offsets of tensors '{}' and '{}' overlap",
                                layout.tensors()[std::get<3>(ranges[i - 1])].name,
                                layout.tensors()[std::get<3>(ranges[i])].name));
      }
    }
    std::string bytes;
    for (const auto& [begin, end, dtype, index] : ranges) {
      const TensorSpec& t = layout.tensors()[index];
      // F32 goes straight into the arena; half formats through one buffer.
      char* into = reinterpret_cast<char*>(arena.data() + t.offset);
      if (dtype != Dtype::kF32) {
        bytes.resize(static_cast<std::size_t>(end - begin));
        into = bytes.data();
      }
      in.seekg(header.data_start + begin);
      if (!in.read(into, end - begin)) {
        throw Error(fmt::format("read failed for tensor '{}'", t.name));
      }
      if (dtype != Dtype::kF32) decode(bytes, dtype, arena.data() + t.offset);
      found.push_back(index);
    }
  });
  return found;
}

void load_safetensors(const fs::path& path, const TensorTable& layout, std::span<float> arena) {
  std::vector<int> found = read_safetensors(path, layout, arena);
  std::sort(found.begin(), found.end());
  for (int i = 0, j = 0; i < static_cast<int>(layout.tensors().size()); ++i) {
    if (j < static_cast<int>(found.size()) && found[j] == i) {
      ++j;
      continue;
    }
    throw Error(fmt::format("{}: missing tensor '{}'", path.string(), layout.tensors()[i].name));
  }
}

}  // namespace trainscope::training
