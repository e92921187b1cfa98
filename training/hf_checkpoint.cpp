#include "training/hf_checkpoint.h"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "base/atomic_file.h"
#include "base/check.h"
#include "base/json_reader.h"
#include "base/quote.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"

namespace trainscope::training {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// The index's weight_map: tensor name -> shard file (a plain name inside dir).
std::map<std::string, std::string> read_weight_map(const fs::path& index) {
  std::map<std::string, std::string> map;
  const json j = read_json_file(index);
  JsonReader::rethrow_in(index.string(), [&] {
    const JsonReader r(j);
    r.require_object();
    const JsonReader weights = r["weight_map"];
    weights.require_object();
    for (const auto& [name, file] : j.at("weight_map").items()) {
      const std::string shard = weights[name].get<std::string>();
      if (shard.empty() || shard.find('/') != std::string::npos || shard == "." || shard == "..") {
        throw Error(fmt::format("weight_map.{}: shard {} is not a file name in the directory",
                                terminal_safe(name), quoted_for_terminal(shard)));
      }
      map[name] = shard;
    }
  });
  return map;
}

// Every shard the index names, each read once; every tensor must come from
// the shard the index gives it.
void load_sharded(const fs::path& dir, const ParamLayout& layout, std::span<float> params,
                  std::vector<int>* found) {
  const auto map = read_weight_map(dir / kIndexFile);
  std::map<std::string, std::vector<std::string>> by_shard;
  for (const auto& [name, shard] : map) by_shard[shard].push_back(name);
  for (const auto& [shard, names] : by_shard) {
    const fs::path file = dir / shard;
    if (!fs::exists(file)) {
      throw Error(fmt::format("{}: shard {} (named by {}) does not exist", dir.string(),
                              terminal_safe(shard), kIndexFile));
    }
    for (int index : read_safetensors(file, layout, params)) {
      const std::string& name = layout.tensors()[index].name;
      const auto where = map.find(name);
      if (where == map.end() || where->second != shard) {
        throw Error(fmt::format("{}: tensor '{}' is in {}, but {} puts it in {}", dir.string(),
                                name, terminal_safe(shard), kIndexFile,
                                where == map.end() ? "no shard" : terminal_safe(where->second)));
      }
      found->push_back(index);
    }
  }
}

// A tied model whose files also hold lm_head.weight (some exporters write
// it): transformers ties it to the embedding and ignores the file's, and so
// does trainscope; one that differs is said, once per job, not refused.
void check_tied_head(const fs::path& dir, const ParamLayout& layout,
                     std::span<const float> params) {
  const int e = layout.find("model.embed_tokens.weight");
  if (layout.find("lm_head.weight") >= 0 || e < 0) return;
  const TensorSpec& embed = layout.tensors()[e];
  fs::path file = dir / kSingleFile;
  if (fs::exists(dir / kIndexFile)) {
    const auto map = read_weight_map(dir / kIndexFile);
    const auto it = map.find("lm_head.weight");
    if (it == map.end()) return;
    file = dir / it->second;
  }
  const std::vector<float> head = read_safetensors_tensor(file, "lm_head.weight", embed.shape);
  if (head.empty()) return;
  const float* ours = params.data() + embed.offset;
  double largest = 0;
  for (std::size_t i = 0; i < head.size(); ++i) {
    largest = std::max(largest, std::fabs(static_cast<double>(head[i]) - ours[i]));
  }
  if (largest == 0) return;
  // Every rank of an mpirun job loads the same files: rank 0 says it.
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (rank != nullptr && std::strcmp(rank, "0") != 0) return;
  std::fprintf(stderr,
               "trainscope: warning: %s: the model ties its output projection to its embedding "
               "(tie_word_embeddings), but %s's lm_head.weight differs from "
               "model.embed_tokens.weight (by up to %g): the embedding is used, as transformers "
               "does\n",
               dir.string().c_str(), file.filename().string().c_str(), largest);
}

}  // namespace

ModelConfig read_hf_config(const fs::path& dir) {
  const fs::path path = dir / "config.json";
  if (!fs::exists(path)) {
    throw Error(
        fmt::format("{}: no config.json (a Hugging Face checkpoint directory has "
                    "config.json and model.safetensors or {})",
                    dir.string(), kIndexFile));
  }
  return from_hf_config(read_json_file(path), path.string());
}

void load_hf_weights(const fs::path& dir, const ParamLayout& layout, std::span<float> params) {
  TS_CHECK(static_cast<int64_t>(params.size()) == layout.total());
  std::vector<int> found;
  if (fs::exists(dir / kIndexFile)) {
    load_sharded(dir, layout, params, &found);
  } else if (fs::exists(dir / kSingleFile)) {
    found = read_safetensors(dir / kSingleFile, layout, params);
  } else {
    throw Error(
        fmt::format("{}: no weights (neither {} nor {})", dir.string(), kSingleFile, kIndexFile));
  }
  std::vector<int> seen(layout.tensors().size(), 0);
  for (int i : found) ++seen[i];
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] == 0) {
      throw Error(fmt::format("{}: missing tensor '{}'", dir.string(), layout.tensors()[i].name));
    }
  }
  check_tied_head(dir, layout, params);
}

namespace {

// Where a save into `dir` by process `pid` writes first: a hidden sibling.
fs::path temporary_for(const fs::path& dir, pid_t pid) {
  return dir.parent_path() / fmt::format(".{}.tmp-{}", dir.filename().string(), pid);
}

// Removes the temporaries of saves into `dir` whose writer is gone (SIGKILL,
// a crash); a live process's is its own.
void remove_dead_writers_temporaries(const fs::path& dir) {
  const std::string prefix = fmt::format(".{}.tmp-", dir.filename().string());
  std::error_code ec;
  const fs::path parent = dir.parent_path().empty() ? "." : dir.parent_path();
  for (const auto& e : fs::directory_iterator(parent, ec)) {
    const std::string name = e.path().filename().string();
    pid_t writer = 0;
    if (name.starts_with(prefix) &&
        profiler::parse_pid(std::string_view(name).substr(prefix.size()), &writer) &&
        !profiler::process_alive(writer)) {
      fs::remove_all(e.path(), ec);
    }
  }
}

// The file of every tensor: `o.weight_map`, or `o.shards` even parts in
// layout order.
std::map<std::string, std::string> files_of_tensors(const ParamLayout& layout,
                                                    const HfSaveOptions& o) {
  const int n = static_cast<int>(layout.tensors().size());
  std::map<std::string, std::string> files;
  for (int s = 0; s < o.shards; ++s) {
    const std::string file =
        o.shards == 1 ? std::string(kSingleFile)
                      : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, o.shards);
    for (int i = s * n / o.shards; i < (s + 1) * n / o.shards; ++i) {
      const std::string& name = layout.tensors()[i].name;
      if (o.weight_map.empty()) {
        files[name] = file;
        continue;
      }
      const auto it = o.weight_map.find(name);
      TS_CHECK(it != o.weight_map.end()) << "no file for " << name;
      files[name] = it->second;
    }
  }
  return files;
}

// The files of the checkpoint, written into `tmp`; `stop` is asked between
// files (and throws to abandon the save).
void write_checkpoint_files(const fs::path& tmp, const ModelConfig& config,
                            const ParamLayout& layout, std::span<const float> params,
                            const HfSaveOptions& o, const std::function<void()>& stop) {
  json fields = o.config_fields.is_object() ? o.config_fields : to_hf_config(config);
  fields["torch_dtype"] = torch_dtype_name(o.dtype);
  write_file_atomically(tmp / "config.json", fields.dump(2) + "\n");
  const std::map<std::string, std::string> files = files_of_tensors(layout, o);
  std::map<std::string, std::vector<int>> by_file;  // in layout order within each file
  for (int i = 0; i < static_cast<int>(layout.tensors().size()); ++i) {
    by_file[files.at(layout.tensors()[i].name)].push_back(i);
  }
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  for (const auto& [file, mine] : by_file) {
    stop();
    save_safetensors(tmp / file, layout, params, meta, o.dtype, mine);
  }
  if (by_file.size() == 1 && by_file.begin()->first == kSingleFile) return;
  const int64_t bytes = layout.total() * (o.dtype == Dtype::kF32 ? 4 : 2);
  write_file_atomically(
      tmp / kIndexFile,
      json{{"metadata", {{"total_size", bytes}}}, {"weight_map", files}}.dump(2) + "\n");
}

}  // namespace

std::string_view torch_dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kF16: return "float16";
    case Dtype::kBF16: return "bfloat16";
    default: return "float32";
  }
}

HfStorage read_hf_storage(const fs::path& dir) {
  HfStorage storage;
  if (fs::exists(dir / kIndexFile)) {
    storage.weight_map = read_weight_map(dir / kIndexFile);
  } else {
    for (const auto& [name, info] : read_safetensors_header(dir / kSingleFile)) {
      storage.weight_map[name] = kSingleFile;
    }
  }
  std::set<std::string> files;
  std::set<Dtype> dtypes;
  for (const auto& [name, file] : storage.weight_map) files.insert(file);
  for (const std::string& file : files) {
    for (const auto& [name, info] : read_safetensors_header(dir / file)) dtypes.insert(info.dtype);
  }
  storage.files = static_cast<int>(files.size());
  storage.dtype = dtypes.size() == 1 ? *dtypes.begin() : Dtype::kF32;
  return storage;
}

void save_hf_checkpoint(const fs::path& dir, const ModelConfig& config, const ParamLayout& layout,
                        std::span<const float> params, const HfSaveOptions& o) {
  const int n = static_cast<int>(layout.tensors().size());
  TS_CHECK(o.shards >= 1 && o.shards <= n) << o.shards << " shards for " << n << " tensors";
  if (fs::exists(dir))
    throw Error(fmt::format("{} exists: a checkpoint goes into a new directory", dir.string()));
  remove_dead_writers_temporaries(dir);
  const fs::path tmp = temporary_for(dir, ::getpid());
  // SIGINT/SIGTERM/SIGHUP while the temporary exists: it is removed first,
  // then the signal takes effect (as the scope ends).
  const DeferredSignals hold_signals;
  auto stop_if_signalled = [&] {
    if (const int sig = hold_signals.pending(); sig != 0) {
      throw Error(fmt::format("{}: interrupted by signal {}", dir.string(), sig), 128 + sig);
    }
  };
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  try {
    write_checkpoint_files(tmp, config, layout, params, o, stop_if_signalled);
    stop_if_signalled();
    fs::rename(tmp, dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
}

}  // namespace trainscope::training
