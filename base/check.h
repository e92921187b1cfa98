// Error reporting used across trainscope.
//
// Two kinds of failure, two mechanisms:
//  * trainscope::Error: something the user can fix (a bad flag, file, config or
//    rank). Thrown with a message that names the culprit; the CLI prints it and
//    exits with the code it carries (kBadInput unless said otherwise).
//  * TS_CHECK(cond) << "...": an internal invariant. Failing one is a bug in
//    trainscope; it aborts with file:line, like llm.c's *Check and BM_CHECK.
#ifndef TRAINSCOPE_BASE_CHECK_H_
#define TRAINSCOPE_BASE_CHECK_H_

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace trainscope {

// Process exit codes that scripts can rely on.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,   // the work ran and failed (NaN loss, failed case, regression)
  kExitBadInput = 2,  // bad flag, file, config, database...
  // A rank's stall watchdog ended a job that had stopped making progress
  // (--stall-action abort): mpirun then ends the others.
  kExitStalled = 3,
};

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = kExitBadInput)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

namespace internal {
// Collects the streamed message, then aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": check failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::fprintf(stderr, "%s\n", stream_.str().c_str());
    std::fflush(stderr);
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};
struct Voidify {
  void operator&(std::ostream&) {}
};
}  // namespace internal
}  // namespace trainscope

#define TS_CHECK(condition)                         \
  (condition) ? (void)0                             \
              : ::trainscope::internal::Voidify() & \
                    ::trainscope::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()

#endif  // TRAINSCOPE_BASE_CHECK_H_
