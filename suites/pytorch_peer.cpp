#include "suites/pytorch_peer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "base/check.h"
#include "base/quote.h"
#include "options/train_option_table.h"
#include "profiler/supervise.h"

#ifndef TRAINSCOPE_PYTORCH_SOURCE_DIR
#define TRAINSCOPE_PYTORCH_SOURCE_DIR "bench/pytorch"
#endif

namespace trainscope::suites {
namespace {

namespace fs = std::filesystem;
using options::TrainOptions;

// Why `python` cannot import torch: its last line of stderr, or why it
// does not run at all; "" when it can.
std::string torch_import_problem(const std::string& python) {
  try {
    SpawnOptions o;
    o.argv = {python, "-c", "import torch"};
    const profiler::CompletedRun r = profiler::run_to_completion(o, 60);
    if (r.exit_code == 0 && !r.timed_out) return "";
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    const std::size_t line = err.rfind('\n');
    return err.empty() ? fmt::format("exit {}", r.exit_code)
                       : err.substr(line == std::string::npos ? 0 : line + 1);
  } catch (const Error& e) {
    return e.what();  // not found, not executable
  }
}

struct PythonChoice {
  std::string python;   // "" when none imports torch
  std::string problem;  // then why
};

const PythonChoice& pytorch_choice() {
  static const PythonChoice choice = [] {
    if (const char* p = std::getenv("TRAINSCOPE_PYTHON"); p && *p) {
      std::string why = torch_import_problem(p);
      if (why.empty()) return PythonChoice{p, ""};
      return PythonChoice{"", fmt::format("TRAINSCOPE_PYTHON={} cannot import torch ({}): set it "
                                          "to a Python that can, or unset it",
                                          quoted_for_terminal(p), why)};
    }
    for (const char* p : {"/usr/bin/python3", "python3"}) {
      if (torch_import_problem(p).empty()) return PythonChoice{p, ""};
    }
    return PythonChoice{"",
                        "PyTorch is not installed: no Python here imports torch (Debian's "
                        "python3-torch, scripts/install-deps.sh; or set TRAINSCOPE_PYTHON)"};
  }();
  return choice;
}

// What the peer does not do, as the reason a case is skipped: a training
// option its row does not opt in to the peer (options/train_option_rows.cpp),
// or a placement it has no counterpart for.
std::string unsupported_setting(const SuiteCase& c) {
  if (std::string why = options::pytorch_unsupported(c.train); !why.empty()) return why;
  if (c.mpi_algorithm > 0) {
    return "DDP reduces over gloo; trainscope's and Open MPI's all-reduce algorithms do not apply";
  }
  if (c.transport != options::Transport::kAuto) {
    return fmt::format("DDP's gloo has its own TCP transport; Open MPI's {} does not apply",
                       enum_name(c.transport));
  }
  if (!c.extra_args.empty()) return "extra_args are trainscope's flags; the PyTorch peer has none";
  return "";
}

// "" when this PyTorch's gloo all-reduces bf16 (1.13's does not); asked once.
const std::string& bf16_allreduce_problem() {
  static const std::string problem = [] {
    SpawnOptions o;
    o.argv = {pytorch_python(), pytorch_peer_script().string(), "--check-bf16-allreduce"};
    o.env = {"GLOO_SOCKET_IFNAME=lo"};
    try {
      const profiler::CompletedRun r = profiler::run_to_completion(o, 60);
      if (r.exit_code == 0) return std::string();
      const std::string said = r.out.substr(0, r.out.find('\n'));
      return said.empty() ? "the PyTorch peer could not check its bf16 all-reduce" : said;
    } catch (const Error& e) {
      return std::string(e.what());
    }
  }();
  return problem;
}

}  // namespace

std::filesystem::path pytorch_peer_script() {
  return fs::path(TRAINSCOPE_PYTORCH_SOURCE_DIR) / "ddp_train.py";
}

const std::string& pytorch_python() { return pytorch_choice().python; }

const std::string& pytorch_problem() { return pytorch_choice().problem; }

std::string pytorch_skip_reason(const SuiteCase& c) {
  if (c.kind != CaseKind::kTrain || c.train.engine != options::Engine::kPytorch) return "";
  if (std::string why = unsupported_setting(c); !why.empty()) return why;
  if (pytorch_python().empty()) return pytorch_problem();
  if (c.train.comm_dtype == options::CommDtype::kBf16 && c.ranks > 1)
    return bf16_allreduce_problem();
  return "";
}

}  // namespace trainscope::suites
