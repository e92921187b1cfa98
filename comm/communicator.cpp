#include "comm/communicator.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/check.h"

extern char** environ;

namespace trainscope::comm {

std::unique_ptr<Communicator> make_local_communicator();
std::unique_ptr<Communicator> make_mpi_communicator();  // mpi_communicator.cpp or its stand-in

std::unique_ptr<Request> completed_request() {
  struct Done final : Request {
    bool test() override { return true; }
    void wait() override {}
  };
  return std::make_unique<Done>();
}

Slice slice_of(int64_t n, int ranks, int rank) {
  TS_CHECK(ranks > 0 && rank >= 0 && rank < ranks && n >= 0);
  const int64_t base = n / ranks, extra = n % ranks;
  // The first `extra` ranks own one element more.
  return {rank * base + std::min<int64_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

void Communicator::broadcast_string(std::string* s, int root) {
  int64_t n = static_cast<int64_t>(s->size());
  broadcast(std::as_writable_bytes(std::span<int64_t>(&n, 1)), root);
  s->resize(static_cast<std::size_t>(n));
  broadcast(std::as_writable_bytes(std::span<char>(s->data(), s->size())), root);
}

double Communicator::all_reduce_sum(double x) {
  all_reduce_sum(std::span<double>(&x, 1));
  return x;
}

int64_t Communicator::all_reduce_sum(int64_t x) {
  all_reduce_sum(std::span<int64_t>(&x, 1));
  return x;
}

void run_collectively(Communicator& comm, const std::function<void()>& fn) {
  std::string message;
  int code = kExitOk;
  try {
    fn();
  } catch (const Error& e) {
    message = e.what();
    code = e.exit_code();
    if (comm.size() == 1) throw CollectiveError(message, code);
  } catch (const std::exception& e) {
    // Out of memory, a library's exception...: still agreed on, or the other
    // ranks would wait in the all_gather below forever.
    message = e.what();
    code = kExitFailure;
    if (comm.size() == 1) throw CollectiveError(message, code);
  }
  if (comm.size() == 1) return;
  const std::vector<std::string> all = comm.all_gather(std::to_string(code) + " " + message);
  int first = -1, worst = kExitOk;
  bool same = true;
  for (int r = 0; r < comm.size(); ++r) {
    const int c = std::atoi(all[r].c_str());
    if (c == kExitOk) {
      same = false;
      continue;
    }
    worst = std::max(worst, c);
    if (first < 0) {
      first = r;
    } else if (all[r] != all[first]) {
      same = false;
    }
  }
  if (first < 0) return;
  std::string text = all[first].substr(all[first].find(' ') + 1);
  if (!same) text = "rank " + std::to_string(first) + ": " + text;
  throw CollectiveError(text, worst);
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "MPI_LOCALNRANKS"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

namespace {

// A non-negative integer environment variable; nullopt when unset or not one.
std::optional<int> env_count(const char* var) {
  const char* text = std::getenv(var);
  if (text == nullptr) return std::nullopt;
  int value = -1;
  const std::string_view v(text);
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec != std::errc() || end != v.data() + v.size() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

LaunchedPlace launched_place() {
  LaunchedPlace place;
  std::optional<int> rank, size;
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (!rank) rank = env_count(var);
  }
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (!size) size = env_count(var);
  }
  if (rank && size && *rank < *size) place = {*rank, *size};
  return place;
}

std::filesystem::path launcher_job_dir() {
  for (const char* var : {"PMIX_SERVER_TMPDIR", "OMPI_MCA_orte_jobfam_session_dir"}) {
    if (const char* dir = std::getenv(var); dir != nullptr && *dir == '/') return dir;
  }
  return {};
}

std::unique_ptr<Communicator> make_communicator(std::string_view backend) {
  if (backend == "local") return make_local_communicator();
  if (backend == "mpi") return make_mpi_communicator();
  if (backend == "auto") {
    return launched_by_mpi() ? make_mpi_communicator() : make_local_communicator();
  }
  throw Error("unknown communicator backend '" + std::string(backend) +
              "' (expected auto, mpi or local)");
}

std::vector<std::pair<std::string, std::string>> transport_settings() {
  std::vector<std::pair<std::string, std::string>> out;
  constexpr std::string_view kPrefix = "OMPI_MCA_";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    if (!kv.starts_with(kPrefix)) continue;
    const std::size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key(kv.substr(kPrefix.size(), eq - kPrefix.size()));
    // Open MPI's own bookkeeping variables are not transport settings; nor is
    // how the launcher wired its daemons (plm, routed: set on remote hosts
    // only, they would make ranks of one job look differently configured).
    if (key.starts_with("orte_") || key.starts_with("ess_") || key.starts_with("pmix") ||
        key == "plm" || key == "routed" || key == "mpi_yield_when_idle" ||
        key.starts_with("initial_wdir") || key.starts_with("shmem_RUNTIME")) {
      continue;
    }
    out.emplace_back(std::move(key), std::string(kv.substr(eq + 1)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace trainscope::comm
