// The axes of a suite: hosts, cores and links; batch per rank; all-reduce
// algorithms, ZeRO and bf16 gradients; fine-tuning and LoRA; precision;
// starting weights: their cases, names, skips, records and command lines.
#include "suites/suite_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "kernels/blas_core.h"
#include "options/placement.h"
#include "base/check.h"
#include "suites/cpus.h"
#include "suites/launch_plan.h"
#include "tests/suites/suite_parse.h"
#include "tests/temp_dir.h"
#include "training/model_config.h"

namespace trainscope::suites {
namespace {

TEST(SuiteConfig, HostsCoresAndLinksAxes) {
  const Suite s = parse_test_suite(
      "name = \"m\"\n[base]\nmode = \"sharded\"\ncores_per_host = 1\n"
      "[grid]\nhosts = [1, 2, 64]\nlink = [\"gige\", \"500mbit\"]\n");
  EXPECT_EQ(case_names(s), (std::vector<std::string>{
                               "sharded-r1-fused-c1", "sharded-r2-fused-h2-c1-gige",
                               "sharded-r64-fused-h64-c1-gige", "sharded-r2-fused-h2-c1-500mbit",
                               "sharded-r64-fused-h64-c1-500mbit"}));
  EXPECT_EQ(s.cases[1].ranks, 2);
  EXPECT_EQ(s.cases[1].hosts, 2);
  EXPECT_EQ(s.cases[1].link, "gige");
  EXPECT_EQ(s.cases[0].link, "");
  EXPECT_NE(s.cases[2].skip_reason.find("64 hosts x 1 cores need 64 cores"), std::string::npos)
      << s.cases[2].skip_reason;
  EXPECT_EQ(s.cases[1].to_json()["link"], "gige");
  EXPECT_FALSE(s.cases[0].to_json().contains("hosts"));  // unset settings stay out of the config
  const Suite uneven = parse_test_suite(
      "name = \"m\"\n[base]\nmode = \"sharded\"\n[[case]]\nranks = 3\nhosts = 2\n");
  EXPECT_NE(uneven.cases[0].skip_reason.find("do not spread evenly"), std::string::npos);
}

// The placement table (options/placement.h) is all a key needs: every row
// set off its default is recorded in the case's config, read back as set by
// the report's reader, and named in the case's name.
TEST(SuiteConfig, EveryPlacementKeyIsRecordedReadBackAndNamedThroughItsRow) {
  SuiteCase c;
  options::Placement& where = c;
  for (const options::PlacementKey& row : options::placement_table()) {
    std::visit(
        [&](auto field) {
          using T = std::decay_t<decltype(where.*field)>;
          if constexpr (std::is_enum_v<T>) {
            where.*field = *parse_enum<T>(enum_names<T>().back());
          } else if constexpr (std::is_same_v<T, std::string>) {
            where.*field = row.choices.empty() ? "x" + std::string(row.key) : "tcp";
          } else if constexpr (std::is_same_v<T, double>) {
            where.*field = 0.5;
          } else {
            where.*field = 3;
          }
        },
        row.field);
    EXPECT_FALSE(options::placement_is_default(row, where)) << row.key;
  }
  const nlohmann::json config = c.to_json();
  const options::Placement back = options::placement_from_config(config);
  for (const options::PlacementKey& row : options::placement_table()) {
    EXPECT_TRUE(config.contains(std::string(row.key))) << row.key;
    EXPECT_EQ(options::placement_json(row, back), options::placement_json(row, where)) << row.key;
    EXPECT_FALSE(row.name_part(where, true).empty()) << row.key;
  }
  EXPECT_EQ(generated_case_name(c, {"tcp_interface"}),
            "naive-r3-fused-alg3-tcp-l3-h3-c3-f0.5-xlink-xtcp_interface-bpr3");
  // Unset, only ranks, transport and links are recorded (configs recorded
  // before the others existed still match).
  const nlohmann::json plain = SuiteCase{}.to_json();
  for (const options::PlacementKey& row : options::placement_table()) {
    EXPECT_EQ(plain.contains(std::string(row.key)), row.always_recorded) << row.key;
  }
}

TEST(SuiteConfig, BatchPerRankScalesWithTheRanksAndDoesNotGoWithBatch) {
  const Suite s = parse_test_suite(
      "name = \"w\"\n[base]\nmode = \"sharded\"\nbatch_per_rank = 2\n"
      "[grid]\nranks = [1, 2]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].train.batch, 2);
  EXPECT_EQ(s.cases[1].train.batch, 4);
  EXPECT_EQ(s.cases[1].name, "sharded-r2-fused-bpr2");
  const std::string e =
      suite_error("name = \"w\"\n[base]\nbatch = 4\n[[case]]\nbatch_per_rank = 2\n");
  EXPECT_NE(e.find("t.toml:5:"), std::string::npos) << e;
  EXPECT_NE(e.find("does not go with 'batch'"), std::string::npos) << e;
  const Suite grid = parse_test_suite(
      "name = \"g\"\n[base]\nmode = \"sharded\"\nranks = 2\n[grid]\nbatch = [2, 4]\n");
  EXPECT_EQ(case_names(grid),
            (std::vector<std::string>{"sharded-r2-fused-gb2", "sharded-r2-fused-gb4"}));
}

TEST(SuiteConfig, BadHostsCoresAndLinksNameTheLine) {
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"name = \"x\"\n[[case]]\nhosts = 2\nlink = \"dialup\"\n",
            "t.toml:4:8: unknown link 'dialup'"},
           {"name = \"x\"\n[[case]]\nlink = \"gige\"\n",
            "t.toml:3:8: 'link' applies between hosts"},
           {"name = \"x\"\n[[case]]\nhosts = 2\nlink = \"1bit\"\n",
            "t.toml:4:8: link '1bit' is 1 bit/s; the shaper of the virtual cluster takes 1mbit to "
            "1tbit"},
           {"name = \"x\"\n[[case]]\nhosts = 2\nlink = \"5tbit\"\n",
            "t.toml:4:8: link '5tbit' is 5e+12 bit/s"},
           {"name = \"x\"\n[[case]]\nhosts = 0\n", "'hosts' must be at least 1"},
           {"name = \"x\"\n[[case]]\ntcp_interface = \"\"\n",
            "'tcp_interface' must name an interface"},
       }) {
    EXPECT_NE(suite_error(text).find(needle), std::string::npos) << text << "\n"
                                                                 << suite_error(text);
  }
}

// Cases the machine cannot hold, or a transport cannot carry, are skipped
// with the reason: the suite still reads on a smaller machine.
TEST(SuiteConfig, MoreCoresThanTheMachineHasOrShmAcrossHostsAreSkipped) {
  const Suite s = parse_suite(
      "name = \"x\"\n[[case]]\nname = \"big\"\ncores_per_host = 100000\n"
      "[[case]]\nname = \"shm\"\nmode = \"sharded\"\nhosts = 2\ntransport = \"shm\"\n",
      "t.toml", ".");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_NE(s.cases[0].skip_reason.find("1 hosts x 100000 cores need 100000 cores"),
            std::string::npos)
      << s.cases[0].skip_reason;
  EXPECT_NE(s.cases[1].skip_reason.find("shm carries messages within one host"), std::string::npos)
      << s.cases[1].skip_reason;
}

// The all-reduce algorithm, Open MPI's algorithm and ZeRO-1: named in the
// case and its config only when not the default (configurations recorded
// before they existed still match), collapsed where they do not apply.
TEST(SuiteConfig, AllReduceAlgorithmAndZeroAxes) {
  const Suite s = parse_test_suite(
      "name = \"a\"\n[base]\nmode = \"sharded\"\nranks = 2\nreduce = \"fused\"\n[grid]\n"
      "allreduce = [\"mpi\", \"shm\", \"hier\"]\nmpi_algorithm = [0, 4]\nzero = [0, 1]\n");
  // mpi x {0, 4} + shm + hier (the Open MPI algorithm collapses), each x zero 0/1.
  EXPECT_EQ(case_names(s),
            (std::vector<std::string>{
                "sharded-r2-fused", "sharded-r2-fused-ar-shm", "sharded-r2-fused-ar-hier",
                "sharded-r2-fused-alg4", "sharded-r2-fused-zero1", "sharded-r2-fused-ar-shm-zero1",
                "sharded-r2-fused-ar-hier-zero1", "sharded-r2-fused-alg4-zero1"}));
  for (const auto& c : s.cases) {
    // The trainer refuses ZeRO-1 over hier: skipped with the reason, not run to fail.
    if (c.name == "sharded-r2-fused-ar-hier-zero1") {
      EXPECT_NE(c.skip_reason.find("ZeRO-1 is not offered with allreduce = \"hier\""),
                std::string::npos);
    } else {
      EXPECT_EQ(c.skip_reason, "") << c.name;
    }
    if (c.train.allreduce != options::AllReduceAlgorithm::kMpi) {
      EXPECT_EQ(c.mpi_algorithm, 0) << c.name;
    }
  }
  const nlohmann::json plain = s.cases[0].to_json();
  EXPECT_FALSE(plain.contains("allreduce"));
  EXPECT_FALSE(plain.contains("mpi_algorithm"));
  EXPECT_FALSE(plain.contains("zero"));
  EXPECT_EQ(s.cases[7].to_json()["mpi_algorithm"], 4);
  EXPECT_EQ(s.cases[7].to_json()["zero"], 1);
  EXPECT_EQ(s.cases[2].to_json()["allreduce"], "hier");
  // One rank all-reduces nothing: the naive case is one case, not three.
  const Suite one = parse_test_suite(
      "name = \"o\"\n[grid]\nallreduce = [\"mpi\", \"shm\", \"hier\"]\n"
      "mpi_algorithm = [0, 3]\n");
  ASSERT_EQ(case_names(one), (std::vector<std::string>{"naive-r1-fused"}));
  EXPECT_EQ(one.cases[0].train.allreduce, options::AllReduceAlgorithm::kMpi);
  EXPECT_EQ(one.cases[0].mpi_algorithm, 0);
  // The sweep has the algorithm axes but not ZeRO.
  const Suite sweep = parse_test_suite(
      "name = \"s\"\nkind = \"allreduce\"\n[base]\nranks = 2\n[grid]\n"
      "mpi_algorithm = [0, 6]\n[[case]]\nallreduce = \"shm\"\n");
  EXPECT_EQ(case_names(sweep),
            (std::vector<std::string>{"allreduce-r2", "allreduce-r2-alg6", "allreduce-r2-ar-shm"}));
  EXPECT_NE(
      suite_error("name = \"s\"\nkind = \"allreduce\"\n[grid]\nzero = [1]\n").find("t.toml:4:"),
      std::string::npos);
}

// What gradients travel as: named in the case and its config only for bf16
// (fp32 configurations recorded before the key existed still match); with
// ZeRO-1 too (its reduce-scatter sends bf16); a train key only.
TEST(SuiteConfig, CommDtypeAxis) {
  const Suite s = parse_test_suite(
      "name = \"c\"\n[base]\nmode = \"sharded\"\nranks = 2\nreduce = \"fused\"\n[grid]\n"
      "comm_dtype = [\"fp32\", \"bf16\"]\nzero = [0, 1]\n");
  EXPECT_EQ(case_names(s), (std::vector<std::string>{"sharded-r2-fused", "sharded-r2-fused-zero1",
                                                     "sharded-r2-fused-comm-bf16",
                                                     "sharded-r2-fused-zero1-comm-bf16"}));
  for (const auto& c : s.cases) EXPECT_EQ(c.skip_reason, "") << c.name;
  EXPECT_FALSE(s.cases[0].to_json().contains("comm_dtype"));
  EXPECT_EQ(s.cases[2].to_json()["comm_dtype"], "bf16");
  EXPECT_EQ(s.cases[3].train.comm_dtype, options::CommDtype::kBf16);
  const std::string bad = suite_error("name = \"c\"\n[base]\ncomm_dtype = \"fp8\"\n");
  EXPECT_NE(bad.find("t.toml:3:"), std::string::npos) << bad;
  EXPECT_NE(bad.find("comm_dtype: unknown communication dtype 'fp8' (expected fp32, bf16)"),
            std::string::npos)
      << bad;
  EXPECT_NE(suite_error("name = \"s\"\nkind = \"allreduce\"\n[grid]\ncomm_dtype = [\"bf16\"]\n")
                .find("t.toml:4:"),
            std::string::npos);
}

TEST(SuiteConfig, ZeroWithoutFusedOrOnOneRankAndShmAcrossHostsAreSkipped) {
  const Suite s = parse_test_suite(
      "name = \"z\"\n[base]\nmode = \"sharded\"\nzero = 1\n"
      "[[case]]\nranks = 2\nreduce = \"overlap\"\n"
      "[[case]]\nranks = 1\n"
      "[[case]]\nranks = 2\n"
      "[[case]]\nzero = 0\nhosts = 2\nallreduce = \"shm\"\n"
      "[[case]]\nzero = 0\nhosts = 2\nallreduce = \"hier\"\n");
  ASSERT_EQ(s.cases.size(), 5u);
  EXPECT_NE(s.cases[0].skip_reason.find("ZeRO-1 shards the optimizer state of the fused reduction "
                                        "(reduce = \"fused\"); this case reduces with overlap"),
            std::string::npos)
      << s.cases[0].skip_reason;
  EXPECT_NE(s.cases[1].skip_reason.find("this case has 1 rank"), std::string::npos)
      << s.cases[1].skip_reason;
  EXPECT_EQ(s.cases[2].skip_reason, "");
  EXPECT_EQ(s.cases[2].name, "sharded-r2-fused-zero1");
  EXPECT_EQ(s.cases[3].skip_reason,
            "shm reduces within one host; this case spans 2 hosts: use hier");
  EXPECT_EQ(s.cases[4].skip_reason, "");
}

TEST(SuiteConfig, BadAllReduceSettingsNameTheLine) {
  for (
      const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
          {"name = \"x\"\n[grid]\nallreduce = [\"mpi\", \"nccl\"]\n",
           "t.toml:3:21: allreduce: unknown all-reduce algorithm 'nccl' (expected mpi, shm, hier)"},
          {"name = \"x\"\n[[case]]\nmpi_algorithm = 7\n",
           "t.toml:3:17: unknown mpi_algorithm 7 (Open MPI's coll_tuned_allreduce_algorithm: 0 "
           "default, 1 basic linear, 2 nonoverlapping, 3 recursive doubling, 4 ring, 5 segmented "
           "ring, 6 rabenseifner)"},
          {"name = \"x\"\n[grid]\nmpi_algorithm = [-1]\n", "t.toml:3:18: unknown mpi_algorithm -1"},
          {"name = \"x\"\n[grid]\nmpi_algorithm = [\"ring\"]\n",
           "t.toml:3:18: 'mpi_algorithm' must be an integer"},
          {"name = \"x\"\n[base]\nzero = 2\n[grid]\nranks = [2]\n",
           "t.toml:3:8: 'zero' must be at most 1"},
          {"name = \"x\"\n[[case]]\nranks = 2\nallreduce = \"shm\"\nmpi_algorithm = 4\n",
           "t.toml:5:17: 'mpi_algorithm' chooses Open MPI's algorithm for allreduce = \"mpi\"; "
           "this case uses 'shm'"},
      }) {
    EXPECT_NE(suite_error(text).find(needle), std::string::npos) << text << "\n"
                                                                 << suite_error(text);
  }
}

// What trains: full or LoRA, and the adapters' settings, which collapse
// under full (a grid over them does not multiply the full cases) and name
// themselves in the case and its config only for LoRA.
TEST(SuiteConfig, FineTuneAndLoraAxes) {
  const Suite s = parse_test_suite(
      "name = \"f\"\n[base]\nlora_alpha = 32\n[grid]\nfine_tune = [\"full\", \"lora\"]\n"
      "lora_rank = [8, 16]\nlora_targets = [\"q_proj,v_proj\", \"v,q,k,o\"]\n");
  EXPECT_EQ(case_names(s),
            (std::vector<std::string>{"naive-r1-fused-full", "naive-r1-fused-lora-alpha32",
                                      "naive-r1-fused-lora-rank16-alpha32",
                                      "naive-r1-fused-lora-alpha32-q.k.v.o",
                                      "naive-r1-fused-lora-rank16-alpha32-q.k.v.o"}));
  const SuiteCase& full = s.cases[0];
  EXPECT_EQ(full.train.fine_tune, options::FineTune::kFull);
  EXPECT_EQ(full.train.lora, options::LoraConfig());  // the trainer's defaults: nothing to pass
  EXPECT_FALSE(full.to_json().contains("fine_tune"));
  EXPECT_FALSE(full.to_json().contains("lora"));
  const SuiteCase& lora = s.cases[4];
  EXPECT_EQ(lora.train.lora.rank, 16);
  EXPECT_EQ(lora.train.lora.alpha, 32);
  EXPECT_EQ(lora.train.lora.targets,
            (std::vector<options::LoraTarget>{options::LoraTarget::kQ, options::LoraTarget::kK,
                                              options::LoraTarget::kV, options::LoraTarget::kO}));
  EXPECT_EQ(lora.to_json()["fine_tune"], "lora");
  // The layout of the trainer's own options.lora, so the report reads either.
  EXPECT_EQ(lora.to_json()["lora"], options::lora_options_json(lora.train.lora));
  EXPECT_EQ(lora.to_json()["lora"]["targets"],
            nlohmann::json({"q_proj", "k_proj", "v_proj", "o_proj"}));
  // One fine-tune throughout: no part for it in the names.
  EXPECT_EQ(case_names(parse_test_suite("name = \"o\"\n[[case]]\nfine_tune = \"full\"\n")),
            (std::vector<std::string>{"naive-r1-fused"}));
}

TEST(SuiteConfig, LoraOnMoreLayersThanTheModelHasIsSkipped) {
  const Suite s = parse_test_suite(
      "name = \"l\"\n[base]\nfine_tune = \"lora\"\n[grid]\n"
      "model = [\"seed\", \"narrow24.json\"]\nlora_layers = [8]\n");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].name, "seed-naive-r1-fused-lora-last8");
  EXPECT_EQ(s.cases[0].skip_reason, "--lora-layers 8: the model has 4 layers (0 adapts them all)");
  EXPECT_EQ(s.cases[1].skip_reason, "");
}

TEST(SuiteConfig, BadFineTuneSettingsNameTheLine) {
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"name = \"x\"\n[grid]\nfine_tune = [\"full\", \"qlora\"]\n",
            "t.toml:3:22: fine_tune: unknown fine-tune mode 'qlora' (expected full, lora)"},
           {"name = \"x\"\n[base]\nlora_rank = 0\n[[case]]\n",
            "t.toml:3:13: 'lora_rank' must be at least 1"},
           {"name = \"x\"\n[base]\nlora_alpha = 0\n[[case]]\n",
            "t.toml:3:14: 'lora_alpha' must be positive"},
           {"name = \"x\"\n[base]\nlora_dropout = 1.0\n[[case]]\n",
            "t.toml:3:16: 'lora_dropout' must be in [0, 1), got 1"},
           {"name = \"x\"\n[base]\nlora_targets = \"q,x_proj\"\n[[case]]\n",
            "t.toml:3:16: lora_targets: unknown target module 'x_proj'"},
           {"name = \"x\"\n[base]\nlora_targets = \"q,q_proj\"\n[[case]]\n",
            "t.toml:3:16: lora_targets: 'q_proj' is listed twice"},
           // Written on a case that trains every weight: a mistake, as the trainer's flags say.
           {"name = \"x\"\n[[case]]\nfine_tune = \"full\"\nlora_rank = 4\n",
            "t.toml:4:13: 'lora_rank' sets up LoRA adapters: it goes with fine_tune = \"lora\"; "
            "this "
            "case fine-tunes 'full'"},
           {"name = \"x\"\nkind = \"allreduce\"\n[grid]\nfine_tune = [\"lora\"]\n",
            "t.toml:4:1: unknown key 'fine_tune' in [grid]"},
       }) {
    EXPECT_NE(suite_error(text).find(needle), std::string::npos) << text << "\n"
                                                                 << suite_error(text);
  }
}

// The built-in finetune suite: full and LoRA, each on one rank (naive) and
// two (sharded, fused), on the instruction pairs with their validation split
// evaluated, each case's command saying so.
TEST(SuiteConfig, TheFinetuneSuiteIsFullAndLoraOnOneAndTwoRanks) {
  const Suite s = resolve_suite("finetune");
  EXPECT_EQ(case_names(s),
            (std::vector<std::string>{"naive-r1-fused-full", "naive-r1-fused-lora",
                                      "sharded-r2-fused-full", "sharded-r2-fused-lora"}));
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  ctx.slots = 2;
  const std::string lora_flags =
      " --fine-tune lora --lora-rank 8 --lora-alpha 16 --lora-dropout 0 --lora-layers 0 "
      "--lora-targets q_proj,v_proj ";
  for (const SuiteCase& c : s.cases) {
    EXPECT_EQ(c.skip_reason, "") << c.name;
    const LaunchPlan plan = plan_case(s, c, ctx, "/tmp/s.json");
    const std::string line = shell_join(plan.argv);
    const bool lora = c.name.ends_with("lora");
    const bool two = c.ranks == 2;
    EXPECT_EQ(plan.uses_mpirun, two) << line;
    EXPECT_NE(line.find(two ? "/usr/bin/mpirun -np 2 " : "/bin/trainscope train "),
              std::string::npos)
        << line;
    EXPECT_NE(line.find(two ? " train --model seed --mode sharded --reduce fused "
                            : " train --model seed --mode naive --reduce fused "),
              std::string::npos)
        << line;
    EXPECT_EQ(line.find(lora_flags) != std::string::npos, lora) << line;
    EXPECT_EQ(line.find("--fine-tune") != std::string::npos, lora) << line;  // full: the default
    for (const char* flag : {" --data builtin:instruct ", " --block 128 ", " --batch 8 ",
                             " --steps 30 ", " --eval-every 5 "}) {
      EXPECT_NE(line.find(flag), std::string::npos) << flag << " in " << line;
    }
    EXPECT_EQ(c.to_json().value("fine_tune", "full"), lora ? "lora" : "full") << c.name;
  }
}

// The built-in precision suite: fp32 and bf16 on one rank, then fp32, bf16 and
// bf16 with bf16 gradients on two; each case's command says so, and a CPU
// without bf16 GEMMs skips exactly the bf16 cases.
TEST(SuiteConfig, ThePrecisionSuiteSetsBf16BesideFp32) {
  const Suite s = resolve_suite("precision");
  EXPECT_EQ(case_names(s),
            (std::vector<std::string>{"naive-r1-fused", "naive-r1-fused-bf16", "sharded-r2-fused",
                                      "sharded-r2-fused-bf16", "sharded-r2-fused-bf16-comm-bf16"}));
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  ctx.mpirun = "/usr/bin/mpirun";
  ctx.slots = 2;
  const kernels::CpuIsa isa = kernels::detect_cpu_isa();
  const bool bf16_cpu = isa.avx512_bf16 || isa.amx_bf16;
  for (const SuiteCase& c : s.cases) {
    const std::string line = shell_join(plan_case(s, c, ctx, "/tmp/s.json").argv);
    const bool bf16 = c.name.find("bf16") != std::string::npos;
    EXPECT_EQ(line.find(" --precision bf16") != std::string::npos, bf16) << line;
    EXPECT_EQ(line.find(" --comm-dtype bf16") != std::string::npos, c.name.ends_with("comm-bf16"))
        << line;
    EXPECT_EQ(c.skip_reason.empty(), bf16_cpu || !bf16) << c.name << ": " << c.skip_reason;
    for (const char* flag : {" --model seed ", " --data builtin:stories ", " --steps 60 "}) {
      EXPECT_NE(line.find(flag), std::string::npos) << flag << " in " << line;
    }
  }
}

// A checkpoint to start from names the model; relative to the suite file.
TEST(SuiteConfig, InitFromACheckpointDirectory) {
  testing::TempDir dir("suite-init-from");
  std::filesystem::create_directories(dir / "ckpt/step-00000010");
  std::ofstream(dir / "ckpt/step-00000010/config.json")
      << training::to_hf_config(training::model_preset("tiny")).dump();
  const Suite s = parse_suite(
      "name = \"i\"\n[base]\ninit_from = \"ckpt/step-00000010\"\n"
      "fine_tune = \"lora\"\n[[case]]\n[[case]]\nname = \"random\"\n"
      "model = \"tiny\"\n",
      "t.toml", dir.path());
  ASSERT_EQ(s.cases.size(), 2u);
  const std::string step = std::filesystem::weakly_canonical(dir / "ckpt/step-00000010").string();
  EXPECT_EQ(s.cases[0].train.init_from, step);
  EXPECT_EQ(s.cases[0].train.model, step);
  EXPECT_EQ(s.cases[0].to_json()["init_from"], step);
  EXPECT_EQ(s.cases[1].train.init_from, "");  // a case's model replaces [base]'s checkpoint
  EXPECT_EQ(s.cases[1].train.model, "tiny");
  EXPECT_FALSE(s.cases[1].to_json().contains("init_from"));
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  const std::string line = shell_join(plan_case(s, s.cases[0], ctx, "/tmp/s.json").argv);
  EXPECT_NE(line.find("/bin/trainscope train --init-from " + step + " --mode naive "),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("--model"), std::string::npos) << line;  // the trainer refuses both
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"name = \"x\"\n[base]\ninit_from = \"nowhere\"\n[[case]]\n",
            "t.toml:3:13: init_from 'nowhere' is not a directory"},
           {"name = \"x\"\n[base]\ninit_from = \"ckpt\"\n[[case]]\n", "t.toml:3:13: "},
           {"name = \"x\"\n[base]\nmodel = \"seed\"\ninit_from = "
            "\"ckpt/step-00000010\"\n[[case]]\n",
            "t.toml:4:13: 'init_from' names the model (its config.json): it does not go with "
            "'model'"},
       }) {
    std::string e;
    try {
      parse_suite(text, "t.toml", dir.path());
    } catch (const Error& err) {
      e = err.what();
    }
    EXPECT_NE(e.find(needle), std::string::npos) << text << "\n" << e;
  }
}

// A training option the table makes a suite key (here AdamW's beta2) is an
// axis with nothing else written for it: checked, named, passed and recorded.
TEST(SuiteConfig, AnOptionOfTheTableIsAnAxisByItsRowAlone) {
  const Suite s = parse_test_suite("name = \"x\"\n[grid]\nbeta2 = [0.95, 0.999]\n");
  ASSERT_EQ(case_names(s),
            (std::vector<std::string>{"naive-r1-fused-beta2-0.95", "naive-r1-fused"}));
  EXPECT_EQ(s.cases[0].train.beta2, 0.95);
  EXPECT_EQ(s.cases[0].to_json()["beta2"], 0.95);
  EXPECT_FALSE(s.cases[1].to_json().contains("beta2")) << "the default is not written";
  PlanContext ctx;
  ctx.trainscope_binary = "/bin/trainscope";
  const std::string line = shell_join(plan_case(s, s.cases[0], ctx, "/tmp/s.json").argv);
  EXPECT_NE(line.find(" --beta2 0.95 "), std::string::npos) << line;
  EXPECT_NE(suite_error("name = \"x\"\n[grid]\nbeta2 = [1.5]\n")
                .find("t.toml:3:10: 'beta2' must be in [0, 1), got 1.5"),
            std::string::npos);
}

}  // namespace
}  // namespace trainscope::suites

namespace trainscope::suites {
namespace {

// cpu_share: a number, or "C/hosts" resolved per case (two cores shared by
// however many hosts); named and recorded when below 1, gone on one host;
// more hosts than the cores hold at that share is a skip; bad values are
// errors at their line.
TEST(SuiteConfig, CpuShareDilatesVirtualHosts) {
  const Suite s = parse_test_suite(
      "name = \"x\"\n[base]\nmode = \"sharded\"\ncores_per_host = 1\ncpu_share = \"2/hosts\"\n"
      "[grid]\nhosts = [1, 2, 4]\n"
      "[[case]]\nname = \"half\"\nmode = \"sharded\"\nhosts = 2\ncpu_share = 0.5\n"
      "[[case]]\nname = \"many\"\nmode = \"sharded\"\nhosts = 250\ncpu_share = 0.5\n");
  ASSERT_EQ(s.cases.size(), 5u);
  EXPECT_DOUBLE_EQ(s.cases[0].cpu_share, 1);  // one host: nothing to dilate
  EXPECT_FALSE(s.cases[0].to_json().contains("cpu_share"));
  EXPECT_DOUBLE_EQ(s.cases[1].cpu_share, 1);  // 2 cores over 2 hosts: a whole core each
  EXPECT_DOUBLE_EQ(s.cases[2].cpu_share, 0.5);
  EXPECT_EQ(s.cases[2].to_json()["cpu_share"], 0.5);
  EXPECT_NE(s.cases[2].name.find("h4-c1-f0.5"), std::string::npos) << s.cases[2].name;
  if (cores_available() >= 2) {
    EXPECT_EQ(s.cases[2].skip_reason, "");  // 4 halves on 2 cores
  }
  EXPECT_DOUBLE_EQ(s.cases[3].cpu_share, 0.5);
  EXPECT_NE(s.cases[4].skip_reason.find("250 hosts at a CPU share of 0.5 need 125 cores"),
            std::string::npos)
      << s.cases[4].skip_reason;

  EXPECT_NE(suite_error("name = \"x\"\n[base]\ncpu_share = 1.5\n")
                .find("t.toml:3:13: 'cpu_share' must be within 0.01..1, got 1.5"),
            std::string::npos);
  EXPECT_NE(suite_error("name = \"x\"\n[base]\ncpu_share = \"half\"\n")
                .find("t.toml:3:13: 'cpu_share' must be a number in (0, 1]"),
            std::string::npos);
}

}  // namespace
}  // namespace trainscope::suites
