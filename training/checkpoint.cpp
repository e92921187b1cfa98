#include "training/checkpoint.h"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>

#include "base/atomic_file.h"
#include "base/json_reader.h"
#include "base/check.h"
#include "base/quote.h"
#include "profiler/proc_fs.h"
#include "profiler/supervise.h"
#include "training/adapters.h"
#include "training/safetensors.h"

namespace trainscope::training {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The pid in a save's temporary name, ".step-N.tmp.PID" or ".step-N.old.PID";
// 0 for any other name.
pid_t temporary_owner(const std::string& name) {
  if (!name.starts_with(".step-")) return 0;
  for (std::string_view kind : {".tmp.", ".old."}) {
    if (const auto at = name.find(kind); at != std::string::npos) {
      return static_cast<pid_t>(std::atoll(name.c_str() + at + kind.size()));
    }
  }
  return 0;
}

// Whether `dir` holds checkpoints: a `latest` or a step directory.
bool holds_checkpoints(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "latest", ec)) return true;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().starts_with("step-")) return true;
  }
  return false;
}

}  // namespace

void prepare_checkpoint_dir(const fs::path& dir, bool resuming, bool overwrite) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw Error(fmt::format("--checkpoint-dir {}: cannot create it{}", dir.string(),
                            ec ? ": " + ec.message() : ""));
  }
  check_writable(dir / "latest", "--checkpoint-dir");
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const pid_t owner = temporary_owner(e.path().filename().string());
    if (owner > 0 && !profiler::process_alive(owner)) fs::remove_all(e.path(), ec);
  }
  if (!resuming && !overwrite && holds_checkpoints(dir)) {
    throw Error(
        fmt::format("--checkpoint-dir {} holds another run's checkpoints: continue it "
                    "with --resume {}, replace them with --overwrite, or choose another "
                    "directory",
                    dir.string(), dir.string()));
  }
}

fs::path save_checkpoint(const fs::path& dir, int64_t step, const ModelConfig& config,
                         const TensorTable& layout, const CheckpointView& view, const json& state) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(fmt::format("--checkpoint-dir: cannot create {}: {}", dir.string(), ec.message()));
  }
  const std::string name = fmt::format("step-{:08d}", step);
  const fs::path final_dir = dir / name;
  const fs::path tmp_dir = dir / fmt::format(".{}.tmp.{}", name, ::getpid());
  // A signal now would leave the temporary half-written: it waits.
  const DeferredSignals hold_signals;
  fs::remove_all(tmp_dir, ec);
  fs::create_directory(tmp_dir, ec);
  if (ec) throw Error(fmt::format("cannot create {}: {}", tmp_dir.string(), ec.message()));
  try {
    if (view.lora != nullptr) {
      write_adapter_files(tmp_dir, config, *view.lora, view.params, view.base_model);
    } else {
      save_safetensors(tmp_dir / "model.safetensors", layout, view.params);
    }
    save_safetensors(tmp_dir / "optimizer.m.safetensors", layout, view.adam_m);
    save_safetensors(tmp_dir / "optimizer.v.safetensors", layout, view.adam_v);
    write_file_atomically(tmp_dir / "config.json", to_hf_config(config).dump(2) + "\n");
    json s = state;
    s["step"] = step;
    write_file_atomically(tmp_dir / "trainer_state.json", s.dump(2) + "\n");
    // Replace an existing step directory (a rerun) only once the new one is whole.
    const fs::path old_dir = dir / fmt::format(".{}.old.{}", name, ::getpid());
    if (fs::exists(final_dir)) fs::rename(final_dir, old_dir);
    fs::rename(tmp_dir, final_dir);
    fs::remove_all(old_dir, ec);
    write_file_atomically(dir / "latest", name + "\n");
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp_dir, ec);
    throw Error(fmt::format("saving checkpoint in {}: {}", dir.string(), e.what()), kExitFailure);
  } catch (...) {
    fs::remove_all(tmp_dir, ec);
    throw;
  }
  return final_dir;
}

CheckpointInfo find_checkpoint(const fs::path& path) {
  if (!fs::exists(path)) throw Error(fmt::format("--resume: {} does not exist", path.string()));
  fs::path step_dir = path;
  if (fs::exists(path / "latest")) {
    std::ifstream in(path / "latest");
    std::string name;
    std::getline(in, name);
    if (name.empty()) throw Error(fmt::format("{} is empty", (path / "latest").string()));
    if (!fs::is_directory(path / name)) {
      throw Error(fmt::format("{} names {}, which is not a step directory in {}",
                              (path / "latest").string(), quoted_for_terminal(name),
                              path.string()));
    }
    step_dir = path / name;
  }
  if (!fs::exists(step_dir / "trainer_state.json")) {
    throw Error(fmt::format("--resume: {} is not a checkpoint (no trainer_state.json, no latest)",
                            step_dir.string()));
  }
  CheckpointInfo info;
  info.step_dir = step_dir;
  info.config =
      from_hf_config(read_json_file(step_dir / "config.json"), (step_dir / "config.json").string());
  const fs::path state = step_dir / "trainer_state.json";
  info.state = read_json_file(state);
  info.adapters = fs::exists(step_dir / kAdapterConfigFile);
  info.step = JsonReader::rethrow_in(state.string(), [&] {
    const JsonReader r(info.state);
    const int64_t step = r["step"].get<int64_t>();
    if (step < 0) r["step"].fail(fmt::format("is {}, must not be negative", step));
    return step;
  });
  return info;
}

void load_checkpoint_tensors(const CheckpointInfo& info, const TensorTable& layout,
                             std::span<float> params, std::span<float> adam_m,
                             std::span<float> adam_v) {
  load_safetensors(info.step_dir / (info.adapters ? kAdapterWeightsFile : "model.safetensors"),
                   layout, params);
  if (!adam_m.empty()) load_safetensors(info.step_dir / "optimizer.m.safetensors", layout, adam_m);
  if (!adam_v.empty()) load_safetensors(info.step_dir / "optimizer.v.safetensors", layout, adam_v);
}

}  // namespace trainscope::training
