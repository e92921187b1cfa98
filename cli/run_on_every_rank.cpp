// run_on_every_rank: how a command that runs on every rank of a job ends
// when something throws, so no rank is left waiting in a collective.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "cli/commands.h"
#include "comm/communicator.h"
#include "base/check.h"

namespace trainscope::cli {
namespace {

// Only this rank failed: say which, and end the job so nobody hangs (the
// others may be blocked in a collective this rank will never join).
[[noreturn]] void fail_alone(comm::Communicator& comm, const char* what, int code) {
  std::fprintf(stderr, "trainscope: rank %d: error: %s\n", comm.rank(), what);
  std::fflush(stderr);
  comm.abort(code);
  std::_Exit(code);  // abort() is [[noreturn]], but GCC does not see it through the vtable
}

}  // namespace

void run_on_every_rank(comm::Communicator& comm, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const comm::CollectiveError& e) {
    // Every rank threw the same error: one message, from rank 0, clean exit.
    if (comm.rank() == 0) std::fprintf(stderr, "trainscope: error: %s\n", e.what());
    throw SilentExit{e.exit_code()};
  } catch (const Error& e) {
    if (comm.size() == 1) throw;
    fail_alone(comm, e.what(), e.exit_code());
  } catch (const std::exception& e) {
    if (comm.size() == 1) throw;
    fail_alone(comm, e.what(), kExitFailure);
  }
}

}  // namespace trainscope::cli
