#include "training/safetensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <tuple>
#include <nlohmann/json.hpp>
#include <vector>

#include "kernels/atomic_file.h"
#include "kernels/check.h"
#include "kernels/json_reader.h"

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

// The byte range [begin, end) of the data section that holds tensor `t`,
// after checking its header entry against the model's layout.
std::pair<int64_t, int64_t> data_range(const JsonReader& e, const TensorSpec& t) {
  const std::string dtype = e["dtype"].get<std::string>();
  if (dtype != "F32") throw Error(fmt::format("tensor '{}' has dtype {}, expected F32", t.name, dtype));
  const auto shape = int_list(e["shape"]);
  if (shape != t.shape) {
    throw Error(fmt::format("tensor '{}' has shape {} but the model config expects {}", t.name,
                            shape_string(shape), shape_string(t.shape)));
  }
  const auto offsets = int_list(e["data_offsets"]);
  // Sign and order first: then the subtraction cannot overflow.
  if (offsets.size() != 2 || offsets[0] < 0 || offsets[1] < offsets[0] ||
      offsets[1] - offsets[0] != t.numel * 4) {
    throw Error(fmt::format("tensor '{}' has inconsistent data_offsets", t.name));
  }
  return {offsets[0], offsets[1]};
}

}  // namespace

void save_safetensors(const fs::path& path, const ParamLayout& layout,
                      std::span<const float> arena,
                      const std::map<std::string, std::string>& metadata) {
  TS_CHECK(static_cast<int64_t>(arena.size()) == layout.total());
  json header = json::object();
  json meta = {{"format", "pt"}};
  for (const auto& [k, v] : metadata) meta[k] = v;
  header["__metadata__"] = meta;
  for (const TensorSpec& t : layout.tensors()) {
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {t.offset * 4, (t.offset + t.numel) * 4}}};
  }
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned, as the format recommends.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  const uint64_t n = text.size();
  char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  write_file_atomically(path, {std::string_view(len, 8), text,
                               std::string_view(reinterpret_cast<const char*>(arena.data()),
                                                arena.size_bytes())});
}

void load_safetensors(const fs::path& path, const ParamLayout& layout, std::span<float> arena) {
  TS_CHECK(static_cast<int64_t>(arena.size()) == layout.total());
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read checkpoint {}", name));
  in.seekg(0, std::ios::end);
  const int64_t file_size = in.tellg();
  in.seekg(0);
  unsigned char len[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len), 8)) {
    throw Error(fmt::format("{} is not a safetensors file: shorter than its 8-byte header length",
                            name));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n > static_cast<uint64_t>(file_size - 8)) {
    throw Error(fmt::format("{} is truncated or not a safetensors file: header length {} exceeds "
                            "the file size {}",
                            name, n, file_size));
  }
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  const json header = parse_json(text, fmt::format("{}: safetensors header", name));
  const int64_t data_start = 8 + static_cast<int64_t>(n);
  const int64_t data_size = file_size - data_start;
  JsonReader::rethrow_in(name, [&] {
    const JsonReader r(header);
    r.require_object();
    for (const auto& [key, value] : header.items()) {
      if (key != "__metadata__" && layout.find(key) < 0) {
        throw Error(fmt::format("unexpected tensor '{}' (not part of this model config)", key));
      }
    }
    // Where each tensor's bytes are; two tensors may not share any.
    std::vector<std::tuple<int64_t, int64_t, const TensorSpec*>> ranges;
    for (const TensorSpec& t : layout.tensors()) {
      if (!r.contains(t.name)) throw Error(fmt::format("missing tensor '{}'", t.name));
      const auto [begin, end] = data_range(r[t.name], t);
      if (end > data_size) {
        throw Error(fmt::format("truncated: tensor '{}' needs bytes up to {} but the data section "
                                "has {}",
                                t.name, end, data_size));
      }
      ranges.emplace_back(begin, end, &t);
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) {
      if (std::get<0>(ranges[i]) < std::get<1>(ranges[i - 1])) {
        throw Error(fmt::format("the data_offsets of tensors '{}' and '{}' overlap",
                                std::get<2>(ranges[i - 1])->name, std::get<2>(ranges[i])->name));
      }
    }
    for (const auto& [begin, end, t] : ranges) {
      in.seekg(data_start + begin);
      if (!in.read(reinterpret_cast<char*>(arena.data() + t->offset), t->numel * 4)) {
        throw Error(fmt::format("read failed for tensor '{}'", t->name));
      }
    }
  });
}

}  // namespace trainscope::training
