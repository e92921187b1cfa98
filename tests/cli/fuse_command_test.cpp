// `trainscope fuse` end to end against issue 25's faults: a signal in the
// middle of writing leaves nothing behind, and a later fuse removes what a
// killed one left.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <utility>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kernels/storage.h"
#include "profiler/supervise.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "training/adapters.h"
#include "training/hf_checkpoint.h"
#include "training/safetensors.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;
using testing::run_trainscope;
using testing::shell_quote;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// A Hugging Face base of `config` with zero weights at dir/base, and PEFT
// adapters for it (q and v, rank 8) at dir/adapters, zero too but for one
// NaN in the adapter tensor named `nan_in`, if any.
void write_base_and_adapters(const fs::path& dir, const training::ModelConfig& config,
                             const training::HfSaveOptions& save = {},
                             const std::string& nan_in = "") {
  const training::ParamLayout layout(config);
  kernels::Buffer<float> params(layout.total(), kernels::MemoryCategory::kParameters);
  training::save_hf_checkpoint(dir / "base", config, layout, params.span(), save);
  const options::LoraConfig lora;
  const training::LoraLayout lora_layout(config, lora);
  kernels::Buffer<float> adapters(lora_layout.total(), kernels::MemoryCategory::kParameters);
  if (!nan_in.empty()) {
    const int i = lora_layout.find(nan_in);
    ASSERT_GE(i, 0) << nan_in;
    adapters.data()[lora_layout.tensors()[static_cast<std::size_t>(i)].offset + 3] = std::nanf("");
  }
  fs::create_directories(dir / "adapters");
  training::write_adapter_files(dir / "adapters", config, lora, adapters.span(),
                                (dir / "base").string());
}

std::string fuse_args(const fs::path& dir, const std::string& extra = "") {
  return "fuse --model " + shell_quote((dir / "base").string()) + " --adapters " +
         shell_quote((dir / "adapters").string()) + " --out " + shell_quote((dir / "fz").string()) +
         extra;
}

// The names in `dir` that start with `prefix`.
std::vector<std::string> entries_starting(const fs::path& dir, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with(prefix)) names.push_back(e.path().filename());
  }
  return names;
}

// Item 2: SIGINT or SIGTERM while fuse writes a seed-size model (109 MB, 4
// shards) leaves neither the output nor its hidden temporary; the process
// still ends by that signal.
TEST(FuseCommandTest, ASignalWhileWritingLeavesNothingBehind) {
  testing::TempDir dir("fuse");
  write_base_and_adapters(dir.path(), training::model_preset("seed"));
  for (const int sig : {SIGINT, SIGTERM}) {
    SpawnOptions spawn;
    spawn.argv = {
        testing::trainscope_binary(), "fuse",  "--model",      dir.file("base"), "--adapters",
        dir.file("adapters"),         "--out", dir.file("fz"), "--shards",       "4"};
    spawn.stdout_file = dir / "stdout";
    spawn.stderr_file = dir / "stderr";
    ChildProcess fuse = trainscope::spawn(spawn);
    const fs::path tmp = dir / fmt::format(".fz.tmp-{}", fuse.pid());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!fs::exists(tmp) && !fuse.try_wait() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    ASSERT_TRUE(fs::exists(tmp)) << "fuse never began writing: " << dir.read("stderr");
    ::kill(fuse.pid(), sig);
    const std::optional<int> code = fuse.wait_for(30);
    ASSERT_TRUE(code.has_value()) << "fuse did not stop";
    EXPECT_EQ(*code, 128 + sig) << dir.read("stderr");
    EXPECT_EQ(entries_starting(dir.path(), ".fz"), std::vector<std::string>{}) << strsignal(sig);
    EXPECT_FALSE(fs::exists(dir / "fz")) << strsignal(sig);
  }
}

// Item 2: a temporary whose writer is gone (SIGKILL) is removed by the next
// fuse to the same output; a live writer's is not.
TEST(FuseCommandTest, TheNextFuseRemovesTheTemporaryOfADeadOne) {
  testing::TempDir dir("fuse");
  write_base_and_adapters(dir.path(), training::model_preset("tiny"));
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = fmt::format(".fz.tmp-{}", dead);
  const std::string live = fmt::format(".fz.tmp-{}", ::getpid());
  fs::create_directories(dir / stale);
  fs::create_directories(dir / live);
  dir.write(stale + "/model-00001-of-00004.safetensors", "half a shard");
  const auto r = run_trainscope(fuse_args(dir.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir / stale));
  EXPECT_TRUE(fs::exists(dir / live)) << "another live process's temporary was removed";
}

// Item 5: more shards than tensors is bad input naming the limit, not an
// abort; nothing is written.
TEST(FuseCommandTest, MoreShardsThanTensorsIsBadInput) {
  testing::TempDir dir("fuse");
  write_base_and_adapters(dir.path(), training::model_preset("tiny"));  // 21 tensors
  const auto r = run_trainscope(fuse_args(dir.path(), " --shards 1000"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--shards 1000: at most 21");
  EXPECT_EQ(entries_starting(dir.path(), ".fz"), std::vector<std::string>{});
  EXPECT_FALSE(fs::exists(dir / "fz"));
  EXPECT_EQ(run_trainscope(fuse_args(dir.path(), " --shards 21")).exit_code, 0);
}

// Issue 36 rows 9 and 10: a NaN in an adapter is named as that adapter
// tensor, by fuse (which wrote NaN weights silently) and by generate (which
// blamed the base's q_proj.weight, which is finite), before anything runs or
// is written.
TEST(FuseCommandTest, ANanInAnAdapterIsBadInputNamingTheAdapter) {
  testing::TempDir dir("fuse");
  const std::string tensor = "base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight";
  write_base_and_adapters(dir.path(), training::model_preset("tiny"), {}, tensor);
  const std::string said = "'" + tensor + "' (1 of ";
  const auto fused = run_trainscope(fuse_args(dir.path()));
  EXPECT_EQ(fused.exit_code, 2) << fused.output;
  EXPECT_CONTAINS(fused.output, said);
  EXPECT_FALSE(fs::exists(dir / "fz"));
  EXPECT_EQ(entries_starting(dir.path(), ".fz"), std::vector<std::string>{});
  const auto generated =
      run_trainscope("generate --model " + shell_quote((dir / "base").string()) + " --adapters " +
                     shell_quote((dir / "adapters").string()) + " --prompt Hello --max-tokens 2");
  EXPECT_EQ(generated.exit_code, 2) << generated.output;
  EXPECT_CONTAINS(generated.output, said);
  EXPECT_EQ(generated.output.find("q_proj.weight"), std::string::npos) << generated.output;
}

// The tensors of a checkpoint directory: name -> (file, dtype).
std::map<std::string, std::pair<std::string, training::Dtype>> stored_tensors(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, training::Dtype>> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".safetensors") continue;
    for (const auto& [name, info] : training::read_safetensors_header(e.path())) {
      out[name] = {e.path().filename().string(), info.dtype};
    }
  }
  return out;
}

// Item 16: by default the fused checkpoint is stored as its base is (dtype,
// files, which tensor in which file), and its config.json is the base's,
// every field kept, with the true dtype and floats in their shortest form.
TEST(FuseCommandTest, TheOutputKeepsTheBasesDtypeShardsAndConfigFields) {
  testing::TempDir dir("fuse");
  const training::ModelConfig tiny = training::model_preset("tiny");
  write_base_and_adapters(dir.path(), tiny, {.dtype = training::Dtype::kBF16, .shards = 3});
  nlohmann::json base_config = nlohmann::json::parse(dir.read("base/config.json"));
  base_config["transformers_version"] = "4.40.0";
  base_config["bos_token_id"] = 7;
  base_config["eos_token_id"] = 8;
  base_config["rms_norm_eps"] = 1e-05;
  base_config["torch_dtype"] = "bfloat16";
  dir.write("base/config.json", base_config.dump(2));
  const auto r = run_trainscope(fuse_args(dir.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(stored_tensors(dir / "fz"), stored_tensors(dir / "base"));
  const std::string text = dir.read("fz/config.json");
  const nlohmann::json fused = nlohmann::json::parse(text);
  for (const auto& [key, value] : base_config.items()) EXPECT_EQ(fused[key], value) << key;
  EXPECT_NE(text.find("\"rms_norm_eps\": 1e-05"), std::string::npos) << text;
  // Told otherwise: one F32 file, and config.json says so.
  const auto f32 =
      run_trainscope("fuse --model " + dir.file("base") + " --adapters " + dir.file("adapters") +
                     " --out " + dir.file("f32") + " --dtype F32 --shards 1");
  ASSERT_EQ(f32.exit_code, 0) << f32.output;
  const auto tensors = stored_tensors(dir / "f32");
  EXPECT_EQ(tensors.size(), 21u);
  for (const auto& [name, where] : tensors) {
    EXPECT_EQ(where, std::make_pair(std::string("model.safetensors"), training::Dtype::kF32))
        << name;
  }
  EXPECT_EQ(nlohmann::json::parse(dir.read("f32/config.json"))["torch_dtype"], "float32");
}

// Item 16: a checkpoint's config.json says the dtype of its weights, prints
// floats as short as they round-trip, and keeps the special tokens.
TEST(FuseCommandTest, WrittenConfigsSayTheTrueDtypeAndShortFloats) {
  testing::TempDir dir("fuse");
  training::ModelConfig tiny = training::model_preset("tiny");
  tiny.bos_token_id = 1;
  tiny.eos_token_id = 2;
  const training::ParamLayout layout(tiny);
  kernels::Buffer<float> params(layout.total(), kernels::MemoryCategory::kParameters);
  training::save_hf_checkpoint(dir / "bf16", tiny, layout, params.span(),
                               {.dtype = training::Dtype::kBF16});
  const std::string text = dir.read("bf16/config.json");
  const nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["torch_dtype"], "bfloat16");
  EXPECT_EQ(j["bos_token_id"], 1);
  EXPECT_EQ(j["eos_token_id"], 2);
  EXPECT_NE(text.find("\"rms_norm_eps\": 1e-05"), std::string::npos) << text;
  EXPECT_NE(text.find("\"rope_theta\": 10000.0"), std::string::npos) << text;
}

}  // namespace
}  // namespace trainscope
