// The trainscope program end to end: exit codes and messages that scripts
// and users rely on.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "results/records.h"
#include "tests/run_command.h"

namespace {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string cmd = fmt::format("{}/trainscope {} 2>&1", TRAINSCOPE_BINARY_DIR, args);
  FILE* pipe = popen(cmd.c_str(), "r");
  Result r{-1, ""};
  std::array<char, 4096> buf;
  while (fgets(buf.data(), buf.size(), pipe) != nullptr) r.output += buf.data();
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TEST(CliTest, BadSuiteFlagsExitTwoAndNameTheFlag) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"suite run smoke --dry-run --timeout 0", "--timeout must be positive, got 0"},
           {"suite run smoke --dry-run --repeat 0", "--repeat"},
       }) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(CliTest, BadTrainFlagsExitTwoAndNameTheFlag) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"train --batch 0", "--batch: must be a positive number, got 0"},
           {"train --block -4", "--block: must be a positive number"},
           {"train --lr 0", "--lr: must be a positive number"},
           {"train --lr inf", "--lr: must be a positive number, got inf"},
           {"train --weight-decay -5", "--weight-decay: must be a non-negative number"},
           {"train --bucket-mb nan", "--bucket-mb: must be a finite number, got nan"},
           {"train --model nonesuch", "unknown model preset 'nonesuch'"},
           {"train --model tiny --reduce ring", "--reduce: unknown strategy 'ring'"},
           {"train --model tiny --comm-dtype fp8",
            "--comm-dtype: unknown communication dtype 'fp8' (expected fp32, bf16)"},
           {"train --model tiny --mode halfway", "halfway"},
           {"train --model tiny --block 65",
            "--block 65 is larger than the model's max sequence 64"},
           {"train --model tiny --data /nonexistent/corpus.txt", "/nonexistent/corpus.txt"},
           {"train --resume /nonexistent/ckpt", "/nonexistent/ckpt"},
           {"train --model tiny --inject-delay 1:-5",
            "--inject-delay: the milliseconds must be a non-negative number, got '1:-5'"},
           {"train --model tiny --inject-delay 1", "--inject-delay: no ':'"},
           {"train --model tiny --inject-delay x:5", "--inject-delay: the rank must be"},
           {"train --model tiny --inject-delay 1:50",
            "--inject-delay: rank 1 is not in this job of 1 rank(s)"},
           {"train --model tiny --stall-timeout 0", "--stall-timeout: must be a positive number"},
           {"train --model tiny --fine-tune half", "--fine-tune must be full or lora, got 'half'"},
           {"train --model tiny --lora-rank 4",
            "--lora-rank sets up LoRA adapters: it goes with --fine-tune lora"},
           {"train --model tiny --fine-tune lora --lora-rank 0", "--lora-rank must be positive"},
           {"train --model tiny --fine-tune lora --lora-targets q,lm_head",
            "--lora-targets: unknown target module 'lm_head'"},
       }) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(CliTest, TrainWritesASummaryAndExitsZero) {
  const auto dir = std::filesystem::temp_directory_path() / "trainscope_cli_test";
  std::filesystem::create_directories(dir);
  const auto summary = dir / "summary.json";
  const Result r = run("train --model tiny --steps 3 --threads 1 --summary " + summary.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step     3/3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tracked peak memory by category"), std::string::npos);
  const auto s = trainscope::results::load_run_summary(summary);
  EXPECT_EQ(s.steps.at(0).size(), 3u);
  std::filesystem::remove_all(dir);
}

TEST(CliTest, NonFiniteLossExitsOne) {
  const Result r = run("train --model tiny --steps 20 --threads 1 --lr 1e30 --grad-clip 0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("loss is"), std::string::npos) << r.output;
}

TEST(CliTest, HelpAndVersion) {
  EXPECT_EQ(run("--help").exit_code, 0);
  const Result v = run("version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.output.find("openblas"), std::string::npos);
  EXPECT_NE(v.output.find("cpu: "), std::string::npos) << v.output;
  EXPECT_NE(v.output.find(" (level "), std::string::npos) << v.output;
  EXPECT_EQ(run("no-such-command").exit_code, 2);
}

// The ISA cap of scripts/check-cpu-matrix.sh: what version reports, and a bad
// value refused before anything runs.
TEST(CliTest, TheCpuIsaCapIsReportedAndABadOneRefused) {
  using trainscope::testing::run_shell, trainscope::testing::shell_quote,
      trainscope::testing::trainscope_binary;
  const auto capped =
      run_shell("TRAINSCOPE_MAX_CPU_ISA=avx2 " + shell_quote(trainscope_binary()) + " version");
  EXPECT_EQ(capped.exit_code, 0) << capped.output;
  EXPECT_NE(capped.output.find("(level avx2)"), std::string::npos) << capped.output;
  const auto bad =
      run_shell("TRAINSCOPE_MAX_CPU_ISA=avx9 " + shell_quote(trainscope_binary()) + " version");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("trainscope: error: TRAINSCOPE_MAX_CPU_ISA=avx9: unknown ISA level"),
            std::string::npos)
      << bad.output;
}

}  // namespace
