// The training loop end to end on the tiny preset: determinism, resume,
// checkpoints, failure on a non-finite loss, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "comm/communicator.h"
#include "base/check.h"
#include "training/checkpoint.h"
#include "training/llama_model.h"
#include "training/safetensors.h"
#include "training/trainer.h"
#include "tests/expect_error.h"
#include "tests/scoped_env.h"
#include "tests/tiny_training.h"

namespace trainscope::training {
namespace {
namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  const fs::path p = fs::temp_directory_path() /
                     ("trainscope_trainer_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

options::TrainOptions tiny_options(int64_t steps) {
  return testing::tiny_training(steps, 4, 16, "builtin:stories?docs=64&valid_docs=16");
}

std::vector<double> losses(const results::RunSummary& s) {
  std::vector<double> out;
  for (const auto& r : s.steps.at(0)) out.push_back(r.loss);
  return out;
}

TEST(TrainerTest, SameSeedGivesBitIdenticalLosses) {
  auto comm = comm::make_communicator("local");
  const auto a = run_training(tiny_options(6), *comm, stdout);
  const auto b = run_training(tiny_options(6), *comm, stdout);
  ASSERT_EQ(a.status, results::RunStatus::kOk);
  EXPECT_EQ(losses(a), losses(b));
  options::TrainOptions other = tiny_options(6);
  other.seed = 7;
  EXPECT_NE(losses(run_training(other, *comm, stdout)), losses(a));
}

TEST(TrainerTest, LossFallsOnTheStoryCorpus) {
  auto comm = comm::make_communicator("local");
  options::TrainOptions o = tiny_options(40);
  const auto s = run_training(o, *comm, stdout);
  const auto l = losses(s);
  EXPECT_NEAR(l.front(), std::log(260.0), 0.1 * std::log(260.0));
  EXPECT_LT(l.back(), l.front() - 1.0);
}

// One process has one host: its shm and hier "all-reduces" sum one region,
// so the run is the mpi run, bit for bit, and the gradients are still
// counted by the tracker (adopted, not allocated, by the reducer).
TEST(TrainerTest, SharedMemoryAlgorithmsOnOneProcessAreThePlainRun) {
  auto comm = comm::make_communicator("local");
  const auto plain = run_training(tiny_options(4), *comm, stdout);
  for (auto a : {options::AllReduceAlgorithm::kShm, options::AllReduceAlgorithm::kHier}) {
    options::TrainOptions o = tiny_options(4);
    o.allreduce = a;
    const auto s = run_training(o, *comm, stdout);
    EXPECT_EQ(losses(s), losses(plain)) << enum_name(a);
    EXPECT_EQ(s.ranks[0].tracked_peak_by_category[kernels::MemoryCategory::kGradients],
              plain.ranks[0].tracked_peak_by_category[kernels::MemoryCategory::kGradients]);
  }
}

TEST(TrainerTest, ZeroNeedsRanksToShardOverAndAStageThatExists) {
  auto comm = comm::make_communicator("local");
  options::TrainOptions o = tiny_options(2);
  o.zero = 1;
  try {
    run_training(o, *comm, stdout);
    FAIL() << "--zero 1 on one rank ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("this job has one rank"), std::string::npos) << e.what();
  }
  o.zero = 2;
  try {
    run_training(o, *comm, stdout);
    FAIL() << "--zero 2 ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--zero must be 0 or 1"), std::string::npos) << e.what();
  }
}

TEST(TrainerTest, ResumeContinuesTheSameRun) {
  auto comm = comm::make_communicator("local");
  const fs::path dir = temp_dir("resume");
  const auto full = run_training(tiny_options(8), *comm, stdout);

  options::TrainOptions first = tiny_options(4);
  first.checkpoint_dir = dir.string();
  run_training(first, *comm, stdout);
  EXPECT_TRUE(fs::exists(dir / "latest"));
  EXPECT_TRUE(fs::exists(dir / "step-00000004" / "model.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "step-00000004" / "config.json"));

  options::TrainOptions second = tiny_options(8);
  second.resume = dir.string();
  const auto resumed = run_training(second, *comm, stdout);
  const auto l_full = losses(full), l_res = losses(resumed);
  ASSERT_EQ(l_res.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(l_res[i], l_full[4 + i]) << "step " << 4 + i;

  // A resume must keep the batch shape: otherwise it is not the same run.
  options::TrainOptions changed = second;
  changed.batch = 8;
  EXPECT_THROW(run_training(changed, *comm, stdout), Error);
  // Resuming past --steps would train nothing and report success.
  options::TrainOptions fewer = tiny_options(2);
  fewer.resume = dir.string();
  try {
    run_training(fewer, *comm, stdout);
    FAIL() << "a resume beyond --steps was accepted";
  } catch (const Error& e) {
    // The resumed run saved its end (step 8) where it resumed from.
    EXPECT_NE(std::string(e.what()).find("--steps 2 is below step 8"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// Issue 25 item 1: a resumed run keeps saving into the directory it resumed
// from, at the cadence it was saved with unless told otherwise.
TEST(TrainerTest, AResumedRunKeepsSavingWhereAndAsOftenAsItDid) {
  auto comm = comm::make_communicator("local");
  const fs::path dir = temp_dir("resume_saves");
  options::TrainOptions first = tiny_options(4);
  first.checkpoint_dir = dir.string();
  first.save_every = 2;
  run_training(first, *comm, stdout);
  EXPECT_TRUE(fs::exists(dir / "step-00000002"));
  options::TrainOptions second = tiny_options(10);
  second.resume = (dir / "step-00000004").string();
  const auto resumed = run_training(second, *comm, stdout);
  ASSERT_EQ(resumed.status, results::RunStatus::kOk) << resumed.error;
  for (const char* step : {"step-00000006", "step-00000008", "step-00000010"}) {
    EXPECT_TRUE(fs::exists(dir / step / "model.safetensors")) << step;
  }
  EXPECT_EQ(find_checkpoint(dir).step, 10);
  // Told otherwise: every 3 steps from here (9), and the end (12).
  options::TrainOptions third = tiny_options(12);
  third.resume = dir.string();
  third.save_every = 3;
  run_training(third, *comm, stdout);
  EXPECT_TRUE(fs::exists(dir / "step-00000012"));
  EXPECT_FALSE(fs::exists(dir / "step-00000011"));
  fs::remove_all(dir);
}

// Issue 25 item 9: --save-every with nowhere to save is refused, as
// --overwrite without --checkpoint-dir is.
TEST(TrainerTest, SaveEveryWithoutACheckpointDirIsRefused) {
  auto comm = comm::make_communicator("local");
  options::TrainOptions o = tiny_options(4);
  o.save_every = 2;
  EXPECT_TRUE(THROWS_BAD_INPUT(run_training(o, *comm, stdout),
                               "--save-every 2 saves checkpoints, but there is no "
                               "--checkpoint-dir to save them in"));
}

// Issue 25 item 11: the weights a run starts from are recorded with an
// absolute path, so a resume from another directory finds them.
TEST(TrainerTest, InitFromIsRecordedAbsolute) {
  auto comm = comm::make_communicator("local");
  const fs::path dir = temp_dir("init_from_base");
  options::TrainOptions base = tiny_options(2);
  base.checkpoint_dir = dir.string();
  run_training(base, *comm, stdout);
  options::TrainOptions from = tiny_options(2);
  from.model.clear();
  from.init_from = fs::relative(dir / "step-00000002", fs::current_path()).string();
  ASSERT_TRUE(fs::path(from.init_from).is_relative());
  const auto s = run_training(from, *comm, stdout);
  ASSERT_EQ(s.status, results::RunStatus::kOk) << s.error;
  const std::string recorded = s.options["init_from"].get<std::string>();
  EXPECT_TRUE(fs::path(recorded).is_absolute()) << recorded;
  EXPECT_TRUE(fs::equivalent(recorded, dir / "step-00000002"));
  fs::remove_all(dir);
}

TEST(TrainerTest, SaveLoadGivesIdenticalLogits) {
  const fs::path dir = temp_dir("logits");
  const ModelConfig c = model_preset("tiny");
  LlamaModel<float> a(c, 2, 8), b(c, 2, 8);
  a.init_weights(11);
  b.init_weights(12);
  save_safetensors(dir / "model.safetensors", a.layout(), a.params());
  load_safetensors(dir / "model.safetensors", b.layout(), b.params());
  std::vector<int32_t> in(16);
  for (int i = 0; i < 16; ++i) in[i] = (i * 13) % 257;
  const float* la = a.forward_logits(in.data());
  std::vector<float> copy(la, la + 16 * c.vocab_size);
  const float* lb = b.forward_logits(in.data());
  EXPECT_EQ(0, std::memcmp(copy.data(), lb, copy.size() * sizeof(float)));
  fs::remove_all(dir);
}

// One tensor of `n` floats.
struct OneTensor : TensorTable {
  explicit OneTensor(int64_t n) { add("w", {n}); }
};

// The kB of /proc/self/status field `key` ("VmRSS:", "VmHWM:"); -1 if absent.
int64_t status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(key)) return std::stoll(line.substr(key.size()));
  }
  return -1;
}

// The copy that save_safetensors must not make is plain heap memory, which
// the storage tracker does not see: the process's resident peak (VmHWM,
// reset through clear_refs) does. Writing F32 from the arena adds only the
// header; a copy of the tensors would add their 64 MiB.
TEST(SafetensorsTest, F32SavesDoNotCopyTheArena) {
  const int64_t n = int64_t{16} << 20;
  const OneTensor layout(n);
  std::vector<float> arena(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) arena[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000);
  const fs::path dir = temp_dir("nocopy");
  const int64_t before = status_kb("VmRSS:");
  if (before < 0 || !(std::ofstream("/proc/self/clear_refs") << "5" << std::flush)) {
    GTEST_SKIP() << "no /proc/self/status or clear_refs: the resident peak cannot be measured";
  }
  save_safetensors(dir / "w.safetensors", layout, arena);
  const int64_t grew_kb = status_kb("VmHWM:") - before;
  EXPECT_LT(grew_kb, n * 4 / 1024 / 4) << "the resident peak grew by " << grew_kb << " kB";
  std::vector<float> back(arena.size());
  load_safetensors(dir / "w.safetensors", layout, back);
  EXPECT_EQ(back, arena);
  fs::remove_all(dir);
}

// Loading `file` against `layout` must fail with a bad-input Error that
// mentions `needle`.
void expect_load_error(const fs::path& file, const ParamLayout& layout, const std::string& needle) {
  std::vector<float> arena(layout.total());
  try {
    load_safetensors(file, layout, arena);
    ADD_FAILURE() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(e.exit_code(), kExitBadInput);
  }
}

TEST(TrainerTest, BadCheckpointsAreClearErrors) {
  const fs::path dir = temp_dir("badckpt");
  const ModelConfig c = model_preset("tiny");
  LlamaModel<float> m(c, 1, 4);
  m.init_weights(1);
  const fs::path file = dir / "model.safetensors";
  save_safetensors(file, m.layout(), m.params());
  // Unreadable.
  expect_load_error(dir / "missing.safetensors", m.layout(), "cannot read");
  // Truncated.
  const fs::path cut = dir / "cut.safetensors";
  fs::copy_file(file, cut);
  fs::resize_file(cut, fs::file_size(file) - 100);
  expect_load_error(cut, m.layout(), "truncated");
  // Shapes that do not match the config: the tensor is named.
  ModelConfig wider = c;
  wider.mlp_dim = 96;
  expect_load_error(file, ParamLayout(wider), "model.layers.0.mlp.gate_proj.weight");
  // Garbage.
  const fs::path junk = dir / "junk.safetensors";
  std::ofstream(junk) << "definitely not a checkpoint";
  expect_load_error(junk, m.layout(), junk.string());
  // A resume from a directory that is not a checkpoint.
  EXPECT_THROW(find_checkpoint(dir), Error);
  fs::remove_all(dir);
}

// Item 8: a negative step in trainer_state.json is bad input naming the
// file and the field, not an abort.
TEST(TrainerTest, ANegativeCheckpointStepIsBadInput) {
  auto comm = comm::make_communicator("local");
  const fs::path dir = temp_dir("negstep");
  options::TrainOptions o = tiny_options(2);
  o.checkpoint_dir = dir.string();
  run_training(o, *comm, stdout);
  const fs::path state = dir / "step-00000002" / "trainer_state.json";
  auto j = nlohmann::json::parse(std::ifstream(state));
  j["step"] = -5;
  std::ofstream(state) << j.dump();
  try {
    find_checkpoint(dir);
    ADD_FAILURE() << "a negative step was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitBadInput);
    EXPECT_NE(std::string(e.what()).find(state.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'step'"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// Item 13: two tensors claiming the same bytes is a corrupt file, not a model.
TEST(TrainerTest, OverlappingSafetensorsOffsetsAreAnError) {
  const fs::path dir = temp_dir("overlap");
  const ModelConfig c = model_preset("tiny");
  LlamaModel<float> m(c, 1, 4);
  m.init_weights(1);
  const fs::path file = dir / "model.safetensors";
  save_safetensors(file, m.layout(), m.params());
  // Point the second of two same-shaped tensors at the first one's bytes,
  // keeping the header's length so the data section stays where it was.
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  auto header = nlohmann::json::parse(bytes.substr(8, n));
  const std::string a = "model.layers.0.self_attn.q_proj.weight";
  const std::string b = "model.layers.0.self_attn.k_proj.weight";
  header[b]["data_offsets"] = header[a]["data_offsets"];
  std::string text = header.dump();
  ASSERT_LE(text.size(), n);
  text.append(n - text.size(), ' ');
  bytes.replace(8, n, text);
  std::ofstream(file, std::ios::binary) << bytes;
  expect_load_error(file, m.layout(), "overlap");
  fs::remove_all(dir);
}

// A tiny-preset checkpoint made of the 8-byte length, `header` and a zeroed
// data section of the right size must fail to load with an Error mentioning
// `needle`.
void expect_bad_header(const std::string& header, const std::string& needle) {
  const fs::path dir = temp_dir("header");
  const ParamLayout layout(model_preset("tiny"));
  const fs::path file = dir / "model.safetensors";
  {
    std::ofstream out(file, std::ios::binary);
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header << std::string(layout.total() * 4, '\0');
  }
  expect_load_error(file, layout, needle);
  fs::remove_all(dir);
}

// Found by tests/fuzz/safetensors_fuzz: a number beyond a double in the
// header escaped the JSON reader as nlohmann's out_of_range.
TEST(SafetensorsTest, NumberBeyondDoubleInHeaderIsBadInput) {
  expect_bad_header(
      R"({"lm_head.weight":{"data_offsets":[115840,149120],"dtype":"F32","shape":[260,321e400]}})",
      "number overflow");
}

// data_offsets at the ends of int64: their difference overflowed (undefined
// behaviour, flagged by UBSan in tests/fuzz/safetensors_fuzz). The second
// pair's wrapped difference is the tensor's size, so it passed the check and
// failed later with a misleading "read failed".
TEST(SafetensorsTest, DataOffsetsAtTheEndsOfInt64AreBadInput) {
  const std::string embed = R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[260,32],)";
  expect_bad_header(embed + R"("data_offsets":[-9223372036854775808,33280]}})",
                    "tensor 'model.embed_tokens.weight' has inconsistent data_offsets");
  expect_bad_header(embed + R"("data_offsets":[9223372036854775707,-9223372036854742629]}})",
                    "tensor 'model.embed_tokens.weight' has inconsistent data_offsets");
}

TEST(TrainerTest, NonFiniteLossStopsTheRunWithTheStep) {
  auto comm = comm::make_communicator("local");
  options::TrainOptions o = tiny_options(20);
  o.lr = 1e30;  // the first update overflows the weights
  o.grad_clip = 0;
  const auto s = run_training(o, *comm, stdout);
  EXPECT_EQ(s.status, results::RunStatus::kFailed);
  ASSERT_TRUE(s.failed_step.has_value());
  EXPECT_LT(*s.failed_step, 20);
  EXPECT_NE(s.error.find("step " + std::to_string(*s.failed_step)), std::string::npos) << s.error;
}

TEST(TrainerTest, BadOptionsNameTheCulprit) {
  auto comm = comm::make_communicator("local");
  auto expect_error = [&](options::TrainOptions o, const std::string& needle) {
    try {
      run_training(o, *comm, stdout);
      ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  options::TrainOptions o = tiny_options(1);
  o.model = "gigantic";
  expect_error(o, "gigantic");
  o = tiny_options(1);
  o.batch = -1;
  expect_error(o, "--batch");
  o = tiny_options(1);
  o.block = 1000;
  expect_error(o, "--block 1000");
  o = tiny_options(1);
  o.tokenizer = "gpt2:/nonexistent";
  expect_error(o, "/nonexistent");
  // A config whose heads do not divide its dims.
  const fs::path dir = temp_dir("config");
  nlohmann::json j = to_hf_config(model_preset("tiny"));
  j["num_attention_heads"] = 5;
  j["num_key_value_heads"] = 5;
  j.erase("head_dim");  // given, it would make any head count fit
  std::ofstream(dir / "config.json") << j.dump();
  o = tiny_options(1);
  o.model = (dir / "config.json").string();
  expect_error(o, "heads (5) must divide dims (32)");
  fs::remove_all(dir);
}

TEST(ModelConfigTest, HfConfigsThisModelCannotTrainAreErrorsNamingTheField) {
  const nlohmann::json good = to_hf_config(model_preset("tiny"));
  EXPECT_EQ(from_hf_config(good, "c.json").dim, model_preset("tiny").dim);
  struct Bad {
    const char* path;
    nlohmann::json value;
    const char* needle;
  };
  for (const Bad& b : std::vector<Bad>{
           {"/hidden_act", "gelu", "hidden_act \"gelu\" is not supported"},
           {"/attention_bias", true, "attention_bias is not supported"},
           {"/mlp_bias", true, "mlp_bias is not supported"},
           {"/rope_scaling",
            {{"type", "linear"}, {"factor", 2.0}},
            "rope_scaling is not supported"},
           {"/rope_theta", "x", "'rope_theta' must be a number"},
           {"/trainscope/default_batch", "4", "'trainscope.default_batch' must be an integer"},
           {"/trainscope/default_batch", 0, "default_batch must be positive"},
           {"/trainscope/default_block", 1000,
            "default_block 1000 is larger than max_position_embeddings"},
           // Items 9 and 12: library errors and silent wrap-arounds before.
           {"/tie_word_embeddings", "yes", "'tie_word_embeddings' must be true or false"},
           {"/rope_theta", std::numeric_limits<double>::infinity(),
            "'rope_theta' must be a finite number"},
           {"/rope_theta", 1e39, "'rope_theta' is 1e+39, out of range for a 32-bit float"},
           {"/hidden_size", 4294967328ll,
            "'hidden_size' is 4294967328, out of range for a 32-bit integer"},
           // Grouped-query settings that would silently mean the defaults, or not fit.
           {"/num_key_value_heads", 0, "num_key_value_heads must be positive, got 0"},
           {"/num_key_value_heads", 3, "key/value heads (3) must divide heads (4)"},
           {"/head_dim", 0, "head_dim must be positive, got 0"},
           {"/head_dim", 7, "head dims (7) must be even"},
       }) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(b.path)] = b.value;
    try {
      from_hf_config(j, "c.json");
      ADD_FAILURE() << b.path << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), kExitBadInput);
      EXPECT_NE(std::string(e.what()).find(std::string("c.json: ")), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(b.needle), std::string::npos) << e.what();
    }
  }
}

TEST(TrainerTest, SummaryHasStepsMemoryAndPhases) {
  auto comm = comm::make_communicator("local");
  const fs::path dir = temp_dir("summary");
  options::TrainOptions o = tiny_options(4);
  o.summary_path = (dir / "s.json").string();
  o.eval_every = 2;
  o.val_batches = 2;
  run_training(o, *comm, stdout);
  const results::RunSummary s = results::load_run_summary(dir / "s.json");
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_EQ(s.steps[0].size(), 4u);
  ASSERT_EQ(s.val.size(), 2u);
  EXPECT_EQ(s.val[0].step, 2);
  const auto& r = s.ranks.at(0);
  const ModelConfig c = model_preset("tiny");
  const int64_t param_bytes = ParamLayout(c).total() * 4;
  // Exact: the tracked peaks of parameters, gradients and AdamW state follow
  // from the config alone.
  EXPECT_EQ(r.tracked_peak_by_category[kernels::MemoryCategory::kParameters], param_bytes);
  EXPECT_EQ(r.tracked_peak_by_category[kernels::MemoryCategory::kGradients], param_bytes);
  EXPECT_EQ(r.tracked_peak_by_category[kernels::MemoryCategory::kOptimizerState], 2 * param_bytes);
  EXPECT_EQ(r.tracked_peak_by_category[kernels::MemoryCategory::kActivations],
            LlamaModel<float>::activation_elements(c, 4, 15) * 4);
  EXPECT_GT(r.vm_hwm, 0);
  // The rank's CPU time over its steps: some, and no more than its threads
  // could use in the wall time (with a little for the clocks' reads).
  EXPECT_GT(r.cpu_s, 0);
  EXPECT_GT(r.steps_wall_s, 0);
  EXPECT_LE(r.cpu_s, r.steps_wall_s * (o.threads > 0 ? o.threads : 2) * 1.05 + 0.01);
  EXPECT_GT(r.data.bytes_held, 0);
  EXPECT_GT(r.phases[profiler::Phase::kForward].median, 0);
  EXPECT_GT(r.phases[profiler::Phase::kBackward].median, 0);
  // The fused LM head's gradient GEMMs run in forward's pass but are booked
  // to backward (they showed as forward: seed's phase chart read forward
  // 1.6 s, backward 0.2 s), and each step says how long they took.
  for (const results::StepRecord& st : s.steps[0]) {
    EXPECT_GT(st.head_backward_s, 0) << st.step;
    EXPECT_GE(st.phases[profiler::Phase::kBackward], st.head_backward_s) << st.step;
  }
  // The host's load at start and end: this thread was runnable as it read it.
  for (const profiler::HostLoad& load : {r.load_start, r.load_end}) {
    EXPECT_GE(load.cores, 1);
    EXPECT_GE(load.runnable, 1);
    EXPECT_GE(load.other_runnable, 0);
    EXPECT_GE(load.loadavg_1m, 0.0);
  }
  fs::remove_all(dir);
}

// TRAINSCOPE_SLOWDOWN (results/environment.h) plants busy-waiting at the end
// of every step: the same losses and options (it is no configuration), the
// steps PCT% longer.
TEST(TrainerTest, ThePlantedSlowdownLengthensStepsAndChangesNothingElse) {
  auto comm = comm::make_communicator("local");
  const auto plain = run_training(tiny_options(6), *comm, stdout);
  const auto slowed = [&] {
    const testing::ScopedEnv slowdown("TRAINSCOPE_SLOWDOWN", "400");
    return run_training(tiny_options(6), *comm, stdout);
  }();
  EXPECT_EQ(losses(slowed), losses(plain));
  EXPECT_EQ(slowed.options, plain.options);
  // Each step waits 400% of its own training: about 5x. A step
  // of either run may be preempted, so the bound is well below.
  EXPECT_GT(slowed.ranks.at(0).step_time.median, 3 * plain.ranks.at(0).step_time.median);
  EXPECT_LT(slowed.ranks.at(0).phases[profiler::Phase::kBackward].median,
            2 * plain.ranks.at(0).phases[profiler::Phase::kBackward].median);
}

// The planted share is of the step's training (data through optimizer), not
// of its eval: a step with an eval is slowed PCT% of its training like any
// other, not PCT% of an eval many times a step. What a step spends outside
// its phases is what was planted.
TEST(TrainerTest, ThePlantedSlowdownLeavesTheEvalOut) {
  auto comm = comm::make_communicator("local");
  // Steps of tens of ms, so that a preemption outside the phases (a slice
  // of another process's) is small beside what is planted.
  options::TrainOptions o =
      testing::tiny_training(12, 16, 64, "builtin:stories?docs=64&valid_docs=64");
  o.eval_every = 2;
  o.val_batches = 16;  // an eval of several steps' forward passes
  const auto run = [&] {
    const testing::ScopedEnv slowdown("TRAINSCOPE_SLOWDOWN", "100");
    return run_training(o, *comm, stdout);
  }();
  ASSERT_EQ(run.status, results::RunStatus::kOk);
  const std::vector<results::StepRecord>& steps = run.steps.at(0);
  const auto phased = [](const results::StepRecord& r) {
    double sum = 0;
    for (double s : r.phases.values) sum += s;
    return sum;
  };
  using profiler::Phase;
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.at(v.size() / 2);
  };
  std::vector<double> ratios, evals, trains;  // planted over the step's training
  std::string seen;
  for (const results::StepRecord& r : steps) {
    if (r.phases[Phase::kEval] <= 0) continue;
    const double trained = phased(r) - r.phases[Phase::kEval] - r.phases[Phase::kCheckpoint];
    const double planted = r.step_time_s - phased(r);
    evals.push_back(r.phases[Phase::kEval]);
    trains.push_back(trained);
    ratios.push_back(planted / trained);
    seen += fmt::format(" {:.2f}", planted / trained);
  }
  ASSERT_GE(ratios.size(), 3u);
  ASSERT_GT(median(evals), 3 * median(trains)) << "the eval is too short to tell";
  EXPECT_LT(median(ratios), 2.0) << "planted / trained, in each step with an eval:" << seen;
}

}  // namespace
}  // namespace trainscope::training
