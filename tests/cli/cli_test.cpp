// The trainscope program end to end: exit codes and messages that scripts
// and users rely on.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

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
           {"suite run smoke --dry-run --timeout 0", "--timeout: must be a positive number, got 0"},
           {"suite run smoke --dry-run --repeat 0", "--repeat"},
       }) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
  }
}

TEST(CliTest, BadTrainFlagsExitTwoAndNameTheFlag) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"train --batch 0", "--batch: must be at least 1, got 0"},
           {"train --block -4", "--block: must be at least 1, got -4"},
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
           {"train --model tiny --fine-tune half",
            "--fine-tune: unknown fine-tune mode 'half' (expected full, lora)"},
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

// The command paths under `path` ("" for the program), from --help: each
// subcommand's name, then its own subcommands.
std::vector<std::string> command_paths(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream help(run(path + " --help").output);
  bool listing = false;
  for (std::string line; std::getline(help, line);) {
    if (line == "Subcommands:") {
      listing = true;
    } else if (listing && line.size() > 2 && line.rfind("  ", 0) == 0 && line[2] != ' ') {
      const std::string sub =
          (path.empty() ? "" : path + " ") + line.substr(2, line.find(' ', 2) - 2);
      out.push_back(sub);
      for (const std::string& deeper : command_paths(sub)) out.push_back(deeper);
    } else if (listing && line.empty()) {
      listing = false;
    }
  }
  return out;
}

// Issue 36 row 8: every number flag of every command, found from --help (a
// flag added later is checked too), says what is wrong with a value that
// cannot be one in words, one way: "FLAG: must be ..., got VALUE", not
// CLI11's own ("Could not convert", "Value 0 not in range 0.000000 to 1797..."
// in 309 digits), nor taking -1 for 18446744073709551615. Each value goes with
// --help, which prints the help instead of running the command if it passes.
TEST(CliTest, EveryNumberFlagSaysABadValueInWords) {
  const std::regex number_flag(R"(^\s+(?:-\w,)?(--[a-z0-9-]+) (INT|UINT|FLOAT)\b)");
  int flags = 0;
  for (const std::string& path : command_paths("")) {
    std::istringstream help(run(path + " --help").output);
    for (std::string line; std::getline(help, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, number_flag)) continue;
      ++flags;
      const std::string flag = m[1], type = m[2];
      std::vector<std::string> bad = {"abc", "inf"};
      if (type != "FLOAT") bad = {"abc", "1.5", "99999999999999999999"};
      if (type == "UINT") bad.push_back("-1");
      for (const std::string& value : bad) {
        const std::string args = path + " " + flag + " " + value + " --help";
        const Result r = run(args);
        EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
        const std::string said = r.output.substr(0, r.output.find('\n'));
        EXPECT_EQ(said.rfind(flag + ": must be ", 0), 0u) << args << "\n" << said;
        EXPECT_TRUE(said.ends_with(", got " + value) && said.size() < 100) << args << "\n" << said;
      }
    }
  }
  EXPECT_GT(flags, 40);
}

// Row 8's flags: a flag's bounds in words ("--shards: must be at least 1").
TEST(CliTest, BoundsAreSaidInWords) {
  for (const auto& [args, said] : std::vector<std::pair<std::string, std::string>>{
           {"fuse --model b --adapters a --out o --shards 0",
            "--shards: must be at least 1, got 0"},
           {"fuse --model b --adapters a --out o --shards -1",
            "--shards: must be at least 1, got -1"},
           {"fuse --model b --adapters a --out o --shards abc",
            "--shards: must be a whole number, got abc"},
           {"cluster check --hostfile /dev/null --links 9", "--links: must be from 1 to 4, got 9"},
           {"suite run smoke --dry-run --order-seed -5",
            "--order-seed: must be at least 0, got -5"},
           {"train --seed -1", "--seed: must be at least 0, got -1"},
       }) {
    const Result r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(r.output.substr(0, r.output.find('\n')), said) << args << "\n" << r.output;
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
