// The program against a hostile user: each test is one fault a battery of
// bad inputs found (output that cannot be written, paths that are wrong,
// interrupted saves...), and checks the exit code scripts rely on (0 ok,
// 1 the work failed, 2 bad input), that the message names the culprit, and
// that nothing is lost or left half-written.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "base/atomic_file.h"
#include "results/results_db.h"
#include "tests/run_command.h"
#include "tests/temp_dir.h"
#include "tests/terminal_safe.h"

namespace trainscope {
namespace {

namespace fs = std::filesystem;
using testing::run_trainscope;
using testing::shell_quote;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

// A results database with one suite of no runs: what `report` needs.
std::string empty_suite_db(const testing::TempDir& dir) {
  const std::string path = dir.file("results.db");
  auto db = results::ResultsDb::open_for_writing(path);
  results::SuiteInfo info;
  info.name = "empty";
  db.finish_suite(db.begin_suite(info));
  return path;
}

// Item 4: a full disk under stdout is a failure (exit 1), not a success with
// a truncated or empty output.
TEST(FaultsTest, AFullStdoutIsAFailure) {
  testing::TempDir dir("faults");
  const std::string lines = dir.write("lines.txt", std::string(200000, 'x') + "\n");
  auto r = run_trainscope("tokenize <" + shell_quote(lines) + " >/dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "standard output");
  r = run_trainscope("report --db " + shell_quote(empty_suite_db(dir)) + " --format md >/dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_CONTAINS(r.output, "standard output");
}

// Item 14: a directory on stdin is bad input, not an empty success.
TEST(FaultsTest, ADirectoryOnStdinIsBadInput) {
  testing::TempDir dir("faults");
  const auto r = run_trainscope("tokenize <" + shell_quote(dir.path().string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "standard input");
}

std::string train_args(const std::string& extra) {
  return "train --model tiny --threads 1 --quiet " + extra;
}

// Item 5: a new run into a directory that holds another run's checkpoints
// would overwrite its step-N and move `latest` back: refused unless the run
// resumes or says --overwrite.
TEST(FaultsTest, ANewRunDoesNotOverwriteAnOlderRunsCheckpoints) {
  testing::TempDir dir("faults");
  const std::string ck = shell_quote(dir.file("ck"));
  ASSERT_EQ(run_trainscope(train_args("--steps 4 --checkpoint-dir " + ck)).exit_code, 0);
  const std::string latest = dir.read("ck/latest");
  const auto saved = fs::last_write_time(dir / "ck/step-00000004/model.safetensors");
  auto r = run_trainscope(train_args("--steps 2 --checkpoint-dir " + ck));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, dir.file("ck"));
  EXPECT_CONTAINS(r.output, "--overwrite");
  EXPECT_EQ(dir.read("ck/latest"), latest);
  EXPECT_EQ(fs::last_write_time(dir / "ck/step-00000004/model.safetensors"), saved);
  r = run_trainscope("train --threads 1 --quiet --steps 6 --resume " + ck + " --checkpoint-dir " +
                     ck);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_trainscope(train_args("--steps 2 --overwrite --checkpoint-dir " + ck));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(dir.read("ck/latest"), "step-00000002\n");
}

// Item 6: output paths are checked before step 0, so a typo does not cost
// the run: the error comes at once and names the flag.
TEST(FaultsTest, OutputPathsAreCheckedBeforeTraining) {
  for (const auto& [flag, path] : std::vector<std::pair<std::string, std::string>>{
           {"--summary", "/nonexistent-dir/summary.json"},
           {"--trace", "/nonexistent-dir/trace.json"},
           {"--checkpoint-dir", "/proc/self/no-checkpoints-here"},
       }) {
    const auto r =
        run_trainscope("train --model tiny --threads 1 --steps 100000 " + flag + " " + path);
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.output;
    EXPECT_CONTAINS(r.output, flag);
    EXPECT_CONTAINS(r.output, path);
    EXPECT_EQ(r.output.find("step "), std::string::npos) << "it trained first:\n" << r.output;
  }
}

// Item 7: a save a signal cut short (or SIGKILL) leaves a temporary step
// directory; the next run into the directory removes those of dead writers.
TEST(FaultsTest, TemporariesOfInterruptedSavesAreCleanedUp) {
  testing::TempDir dir("faults");
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string stale = fmt::format("ck/.step-00000002.tmp.{}", dead);
  const std::string live = fmt::format("ck/.step-00000003.tmp.{}", ::getpid());
  fs::create_directories(dir / stale);
  fs::create_directories(dir / live);
  dir.write(stale + "/model.safetensors", "half a tensor");
  const auto r =
      run_trainscope(train_args("--steps 2 --checkpoint-dir " + shell_quote(dir.file("ck"))));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(dir / stale));
  EXPECT_TRUE(fs::exists(dir / live)) << "another live process's save was removed";
}

// Item 13: options that were silently ignored or nonsensical.
TEST(FaultsTest, ConflictingOrIgnoredTrainOptionsAreErrors) {
  testing::TempDir dir("faults");
  const std::string ck = shell_quote(dir.file("ck"));
  ASSERT_EQ(run_trainscope(train_args("--steps 2 --checkpoint-dir " + ck)).exit_code, 0);
  std::string lines;
  for (int i = 0; i < 20; ++i)
    lines += "once upon a time there was a story number " + std::to_string(i) + "\n";
  const std::string text = shell_quote(dir.write("plain.txt", lines)) + " --one-per-line";
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--steps 4 --model tiny --resume " + ck, "--resume"},
           {"--steps 2 --data " + text + " --eval-every 1", "validation"},
           {"--steps 2 --lr 0.001 --min-lr 0.01", "--min-lr"},
       }) {
    const auto r = run_trainscope("train --threads 1 --quiet " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_CONTAINS(r.output, needle);
  }
}

// Item 14: flag values out of range say so in words (not CLI11's "not in
// range 0.000000 to 1.000000" or DBL_MAX), and a negative record limit is
// refused.
TEST(FaultsTest, OutOfRangeFlagsSaySoInWords) {
  testing::TempDir dir("faults");
  const std::string in = shell_quote(dir.write("in.jsonl", "{\"text\": \"x\"}\n"));
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"check --db x.db --alpha 0", "--alpha: must be above 0 and below 1, got 0"},
           {"suite run smoke --dry-run --repeat 0", "--repeat: must be at least 1, got 0"},
           {"prepare-data " + in + " --out " + shell_quote(dir.file("o")) +
                " --max-record-bytes -1",
            "--max-record-bytes: must be at least 1, got -1"},
           // A delay sleep_for cannot hold would not sleep at all.
           {"train --model tiny --steps 1 --inject-delay 0:1e300",
            "--inject-delay: the milliseconds must be at most 3600000"},
           {"train --model tiny --steps 1 --overwrite", "--overwrite requires --checkpoint-dir"},
       }) {
    const auto r = run_trainscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_CONTAINS(r.output, needle);
    EXPECT_EQ(r.output.find("0000000"), std::string::npos) << r.output;
  }
}

// Item 14: a suite whose case has bad extra_args, or a model config that is
// not valid, fails before anything runs (exit 2), naming the suite file.
TEST(FaultsTest, SuiteCasesAreCheckedBeforeAnyRuns) {
  testing::TempDir dir("faults");
  dir.write("bad-model.json", "{\"hidden_size\": \"wide\"}");
  const std::string base = "name = \"bad\"\n[base]\nmodel = \"tiny\"\nsteps = 2\n";
  for (const auto& [suite, needle] : std::vector<std::pair<std::string, std::string>>{
           {base + "extra_args = [\"--no-such-flag\"]\n[[case]]\nmode = \"naive\"\n",
            "--no-such-flag"},
           {base + "[[case]]\nmode = \"naive\"\nmodel = \"bad-model.json\"\n", "hidden_size"},
           // Issue 25 item 7: flag values too, with the file's line, and a
           // straggler rank the case does not have.
           {base + "[[case]]\nmode = \"naive\"\nextra_args = [\"--inject-delay\", \"1:abc\"]\n",
            "bad.toml:7:14: case 'naive-r1-fused': extra_args: --inject-delay: the milliseconds"},
           {base + "[[case]]\nmode = \"sharded\"\nranks = 2\n"
                   "extra_args = [\"--inject-delay\", \"2:5\"]\n",
            "bad.toml:8:14: case 'sharded-r2-fused': extra_args: --inject-delay: rank 2 is not "
            "in this case's 2 ranks"},
       }) {
    const std::string file = dir.write("bad.toml", suite);
    const auto r =
        run_trainscope("suite run " + shell_quote(file) + " --db " + shell_quote(dir.file("r.db")));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, needle);
    EXPECT_CONTAINS(r.output, file);
    EXPECT_FALSE(fs::exists(dir / "r.db")) << "the suite started before the error";
  }
}

// Item 15: hosts with different core counts give their ranks different
// thread counts; the replicas must still end identical (the trainer checks
// a hash of every rank's parameters and fails the run otherwise).
TEST(FaultsTest, RanksWithDifferentThreadCountsStayIdentical) {
  if (run_trainscope("version").exit_code != 0 ||
      testing::run_shell("command -v mpirun").exit_code != 0) {
    GTEST_SKIP() << "mpirun not found";
  }
  const std::string train = shell_quote(testing::trainscope_binary()) +
                            " train --model tiny --steps 10 --mode sharded --quiet";
  const auto r = testing::run_shell(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe "
      "--bind-to none --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo -np 1 " +
      train + " --threads 1 : -np 1 " + train + " --threads 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("parameters different"), std::string::npos) << r.output;
}

// Item 8 (issue 25): --db naming a device node or a FIFO is refused before
// any work, as bad input naming the flag and the file; SQLite never opens it
// (it would write NODE-journal beside it, or block on the FIFO). The device
// is one this test makes (mknod needs root; the FIFO does not).
TEST(FaultsTest, ADbThatIsNotARegularFileIsRefusedUpFront) {
  testing::TempDir dir("faults");
  std::vector<std::pair<std::string, std::string>> nodes;
  if (::mkfifo(dir.file("fifo").c_str(), 0600) == 0) nodes.emplace_back("fifo", "a FIFO");
  if (::mknod(dir.file("null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0) {
    nodes.emplace_back("null", "a character device");
  }
  ASSERT_FALSE(nodes.empty()) << "neither a FIFO nor a device node could be made";
  for (const auto& [name, kind] : nodes) {
    for (const char* command :
         {"doctor --skip-mpi --db ", "suite run smoke --no-limits --db ", "report --db ",
          "check --baseline b.json --db ", "monitor --pid 1 --db "}) {
      // A FIFO would block the open before the fix: 20 s at most.
      const auto r = testing::run_shell("timeout 20 " + shell_quote(testing::trainscope_binary()) +
                                        " " + command + shell_quote(dir.file(name)));
      EXPECT_EQ(r.exit_code, 2) << command << name << "\n" << r.output;
      EXPECT_CONTAINS(r.output, "--db: " + dir.file(name) + " is " + kind);
      EXPECT_EQ(r.output.find("sgemm"), std::string::npos) << "it measured first:\n" << r.output;
    }
    EXPECT_FALSE(fs::exists(dir.file(name) + "-journal"));
  }
}

// Item 10 (issue 25): a vocabulary or a LoRA rank beyond the machine is bad
// input naming the field and the bytes, found before anything is allocated.
TEST(FaultsTest, HugeSizesAreBadInputNamingTheFieldAndTheBytes) {
  testing::TempDir dir("faults");
  dir.write("config.json",
            R"({"hidden_size":4096,"intermediate_size":64,"num_attention_heads":4,)"
            R"("num_hidden_layers":2,"vocab_size":2147483647,"max_position_embeddings":64})");
  auto r = run_trainscope("train --threads 1 --quiet --steps 1 --init-from " +
                          shell_quote(dir.path().string()));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "vocab_size 2147483647 x hidden_size 4096 needs 70368744144896 bytes");
  r = run_trainscope(train_args("--steps 1 --fine-tune lora --lora-rank 2147483647"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--lora-rank 2147483647: above 32");
}

// Issue 36 row 4: a bad test hook is bad input like a bad suite file: exit 2,
// and no results database is made.
TEST(FaultsTest, ABadSlowdownHookLeavesNoDatabase) {
  testing::TempDir dir("faults");
  const std::string suite = dir.write(
      "one.toml", "name = \"one\"\n[base]\nmodel = \"tiny\"\nsteps = 3\n[[case]]\nname = \"a\"\n");
  const auto r = testing::run_shell(
      "TRAINSCOPE_SLOWDOWN=abc " + shell_quote(testing::trainscope_binary()) + " suite run " +
      shell_quote(suite) + " --no-limits --db " + shell_quote(dir.file("new.db")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "TRAINSCOPE_SLOWDOWN='abc'");
  EXPECT_FALSE(fs::exists(dir.file("new.db"))) << r.output;
}

// Issue 36 row 5: an empty level list is bad usage (exit 2), not "every
// level". The ctest filter matches no test, so the script cannot run the
// suite here whatever it does with the levels.
TEST(FaultsTest, TheCpuMatrixRefusesAnEmptyLevelList) {
  const auto r = testing::run_shell(
      shell_quote(TRAINSCOPE_SOURCE_DIR "/scripts/check-cpu-matrix.sh") +
      " --levels '' --build-dir " + shell_quote(TRAINSCOPE_BINARY_DIR) + " -- -R '^no such test$'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_CONTAINS(r.output, "--levels");
}

// Issue 36 row 6: gate-calibration.sh takes flags only; a stray argument
// (once "ROUNDS", now gone) is bad usage before a run of hours starts, as is
// a number that is not one or a lane that does not exist.
TEST(FaultsTest, TheGateCalibrationRefusesStrayArgumentsBeforeRunning) {
  const std::string script = shell_quote(TRAINSCOPE_SOURCE_DIR "/scripts/gate-calibration.sh");
  for (const char* args : {"1 2", "1", "--aa 0", "--power x", "--small -1", "--small x",
                           "--lanes timed,fast", "--aa"}) {
    const auto r = testing::run_shell(script + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_CONTAINS(r.output, "gate-calibration.sh");
    EXPECT_EQ(r.output.find("=="), std::string::npos) << args << ": it started\n" << r.output;
  }
  const auto help = testing::run_shell(script + " --help");
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_CONTAINS(help.output, "A/A");
}

// Issue 36 row 7: TRAINSCOPE_PYTHON names the interpreter for the PyTorch
// peer; one that does not run is said, naming the variable, never replaced
// by another Python found elsewhere.
TEST(FaultsTest, ATrainscopePythonThatDoesNotRunIsNamed) {
  testing::TempDir dir("faults");
  const std::string suite =
      dir.write("py.toml",
                "name = \"py\"\n[base]\nmodel = \"tiny\"\nsteps = 2\n[[case]]\nname = "
                "\"p\"\nengine = \"pytorch\"\nmode = \"naive\"\nthreads = 1\n");
  const auto r = testing::run_shell("TRAINSCOPE_PYTHON=/nonexistent/python " +
                                    shell_quote(testing::trainscope_binary()) + " suite run " +
                                    shell_quote(suite) + " --dry-run");
  EXPECT_CONTAINS(r.output,
                  "p: SKIPPED (TRAINSCOPE_PYTHON='/nonexistent/python' cannot import torch");
}

// The doctor's --db is checked before its probes (about 10 s of them): a
// directory that does not exist, a file that is not a results database.
TEST(FaultsTest, TheDoctorRefusesABadDbBeforeMeasuring) {
  testing::TempDir dir("faults");
  const std::string garbage = dir.write("garbage.db", "not a database\n");
  for (const std::string& db : {dir.file("no/such/dir/r.db"), garbage}) {
    const auto r = run_trainscope("doctor --skip-mpi --db " + shell_quote(db));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_CONTAINS(r.output, db);
    EXPECT_EQ(r.output.find("sgemm"), std::string::npos) << "it measured first:\n" << r.output;
  }
  EXPECT_EQ(read_file(garbage), "not a database\n");
}

// A safetensors file whose header is `header` and data 4 zero bytes.
std::string safetensors_with_header(const std::string& header) {
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return file + header + std::string(4, '\0');
}

// Item 13 (issue 25): what an input file holds is quoted escaped in errors:
// a config that is not JSON, a tensor name in a safetensors header, names
// in a checkpoint's index.
TEST(FaultsTest, JsonAndSafetensorsContentIsQuotedEscaped) {
  testing::TempDir dir("faults");
  const std::string not_json = dir.write("bad.json", "{\"hidden_size\": \xff\xc2\x9b\x1b[2J}");
  const std::string config =
      R"({"hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,)"
      R"( "num_hidden_layers": 2, "vocab_size": 300, "max_position_embeddings": 64})";
  fs::create_directories(dir / "one");
  dir.write("one/config.json", config);
  dir.write("one/model.safetensors",
            safetensors_with_header(
                R"({"\u001b[2Jevil\u0007":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"));
  fs::create_directories(dir / "index");
  dir.write("index/config.json", config);
  dir.write("index/model.safetensors.index.json",
            R"({"weight_map": {"\u001b]0;x\u0007": "\u009b2J"}})");
  for (const std::string& args :
       {"train --steps 1 --model " + shell_quote(not_json),
        "generate --prompt x --model " + shell_quote(dir.file("one")),
        "generate --prompt x --model " + shell_quote(dir.file("index"))}) {
    const auto r = run_trainscope(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(testing::terminal_unsafe(r.output), "") << args;
  }
}

}  // namespace
}  // namespace trainscope
