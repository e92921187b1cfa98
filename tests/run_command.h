// Runs the built trainscope binary for the end-to-end tests and captures its
// exit code and combined output (stdout and stderr, unless the command
// redirects stdout itself: `run_trainscope("tokenize >/dev/full")`).
#ifndef TRAINSCOPE_TESTS_RUN_COMMAND_H_
#define TRAINSCOPE_TESTS_RUN_COMMAND_H_

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace trainscope::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

inline std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

inline CommandResult run_shell(const std::string& command) {
  CommandResult r;
  // stderr joins the pipe before the command's own redirections apply.
  FILE* p = ::popen(("exec 2>&1; " + command).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline const std::string& trainscope_binary() {
  static const std::string path = TRAINSCOPE_BINARY_DIR "/trainscope";
  return path;
}

// trainscope with the given arguments (already quoted where needed).
inline CommandResult run_trainscope(const std::string& args) {
  return run_shell(shell_quote(trainscope_binary()) + " " + args);
}

}  // namespace trainscope::testing

#endif  // TRAINSCOPE_TESTS_RUN_COMMAND_H_
