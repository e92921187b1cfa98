#include "suites/allreduce_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <span>

#include "comm/all_reducer.h"
#include "kernels/storage.h"
#include "base/check.h"
#include "profiler/copy_probe.h"

namespace trainscope::suites {
namespace {

std::string setting(std::string_view key) {
  for (const auto& [k, v] : comm::transport_settings()) {
    if (k == key) return v;
  }
  return "";
}

// Verification values: element i of rank r holds (r + 1) * (i % 7 + 1), so
// the sum is (i % 7 + 1) * n(n+1)/2: small integers, exact in float.
float fill_value(int rank, int64_t i) { return static_cast<float>((rank + 1) * (i % 7 + 1)); }

// The timed loop: the mean time per call, then each call's time, seconds.
// Consecutive clock reads make the calls' times add up to the loop's.
std::vector<double> time_calls(comm::AllReducer& reducer, int64_t count, int iters) {
  std::vector<double> t(1 + static_cast<size_t>(iters));
  const auto start = std::chrono::steady_clock::now();
  auto last = start;
  for (int i = 0; i < iters; ++i) {
    reducer.sum(0, count);
    const auto now = std::chrono::steady_clock::now();
    t[1 + i] = std::chrono::duration<double>(now - last).count();
    last = now;
  }
  t[0] = std::chrono::duration<double>(last - start).count() / iters;
  return t;
}

}  // namespace

double copy_probe_gbps(comm::Communicator& comm, int64_t bytes, int reps) {
  const int64_t n = std::max<int64_t>(1, bytes);
  // Every rank copies at once, as every rank reduces at once; each copy's
  // time is the slowest rank's.
  std::vector<double> times =
      profiler::time_copies({.bytes = n, .reps = reps, .category = kernels::MemoryCategory::kComm},
                            [&comm] { comm.barrier(); });
  comm.all_reduce_max(times);
  return profiler::copy_gbps(n, times);
}

void validate(const AllReduceOptions& o) {
  if (const int64_t element = comm::comm_dtype_bytes(o.dtype); o.min_bytes < element) {
    throw Error(fmt::format("--min-bytes must be at least {} (one {} element), got {}", element,
                            enum_name(o.dtype), o.min_bytes));
  }
  if (o.max_bytes < o.min_bytes)
    throw Error(fmt::format("--max-bytes {} is below --min-bytes {}", o.max_bytes, o.min_bytes));
  if (o.max_bytes > (int64_t{1} << 34))
    throw Error(fmt::format("--max-bytes {} is above 16 GiB", o.max_bytes));
  if (o.factor < 2) throw Error(fmt::format("--factor must be at least 2, got {}", o.factor));
  if (o.iters < 1) throw Error(fmt::format("--iters must be at least 1, got {}", o.iters));
  if (o.warmup < 0) throw Error(fmt::format("--warmup must be 0 or more, got {}", o.warmup));
}

std::vector<int64_t> sweep_sizes(const AllReduceOptions& o) {
  const int64_t element = comm::comm_dtype_bytes(o.dtype);
  std::vector<int64_t> sizes;
  for (int64_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) {
    sizes.push_back(std::max<int64_t>(element, b / element * element));
    if (b > o.max_bytes / o.factor) break;
  }
  return sizes;
}

double bus_bandwidth(double algbw, int ranks) {
  // Each rank sends and receives 2(n-1)/n of the buffer in a ring all-reduce.
  if (ranks <= 1) return algbw;
  return algbw * 2.0 * (ranks - 1) / ranks;
}

std::string transport_label(const comm::Communicator& comm) {
  if (comm.backend() == "local") return "local";
  const std::string btl = setting("btl");
  if (btl.empty()) return "auto";
  const bool tcp = btl.find("tcp") != std::string::npos;
  const bool shm = btl.find("vader") != std::string::npos || btl.find("sm") != std::string::npos;
  if (tcp && !shm) return "tcp";
  if (shm && !tcp) return "shm";
  return btl;
}

std::string links_label() { return setting("btl_tcp_links"); }

std::string format_sweep_header(const comm::Communicator& comm, const AllReduceOptions& o) {
  const std::string links = links_label();
  std::string s = fmt::format(
      "# trainscope allreduce-bench: {} rank{}, backend {}, algorithm {}, transport {}{}{}\n"
      "#  min bytes {} max bytes {} step: {}(factor) warmup iters: {} iters: {} validation: 1\n"
      "#\n",
      comm.size(), comm.size() == 1 ? "" : "s", comm.backend(), enum_name(o.algorithm),
      transport_label(comm), links.empty() ? "" : ", links " + links,
      o.dtype == options::CommDtype::kBf16 ? ", float buffers sent as bf16 (--comm-dtype)" : "",
      o.min_bytes, o.max_bytes, o.factor, o.warmup, o.iters);
  return s + format_sweep_columns("#", "#");
}

std::string format_sweep_columns(std::string_view lead_names, std::string_view lead_units) {
  return fmt::format("{}{:>11} {:>12} {:>8} {:>6} {:>10} {:>8} {:>8} {:>7}\n", lead_names, "size",
                     "count", "type", "redop", "time", "algbw", "busbw", "#wrong") +
         fmt::format("{}{:>11} {:>12} {:>8} {:>6} {:>10} {:>8} {:>8} {:>7}\n", lead_units, "(B)",
                     "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
}

std::string format_sweep_row(const results::AllReduceRow& r) {
  return fmt::format(" {:>11} {:>12} {:>8} {:>6} {:>10.1f} {:>8.3f} {:>8.3f} {:>7}\n", r.size_bytes,
                     r.count, r.dtype == "bfloat16" ? "bf16" : "float", r.redop, r.time_us,
                     r.algbw_gbps, r.busbw_gbps, r.wrong);
}

std::string format_sweep_footer(const std::vector<results::AllReduceRow>& rows) {
  int64_t wrong = 0;
  double busbw = 0;
  for (const auto& r : rows) {
    wrong += r.wrong;
    busbw += r.busbw_gbps;
  }
  return fmt::format("# Out of bounds values : {} {}\n# Avg bus bandwidth    : {:.3f}\n#\n", wrong,
                     wrong == 0 ? "OK" : "FAILED", rows.empty() ? 0.0 : busbw / rows.size());
}

std::string format_copy_probe(const results::AllReduceRow& largest, double copy_gbps, int ranks) {
  return fmt::format(
      "# Copy probe           : {:.3f} GB/s per rank ({} rank{} copying {} B at once, memcpy)\n"
      "# busbw / copy probe   : {:.0f}% at {} B\n#\n",
      copy_gbps, ranks, ranks == 1 ? "" : "s", largest.size_bytes,
      copy_gbps > 0 ? 100.0 * largest.busbw_gbps / copy_gbps : 0.0, largest.size_bytes);
}

std::vector<results::AllReduceRow> run_allreduce_sweep(comm::Communicator& comm,
                                                       const AllReduceOptions& o, std::FILE* out) {
  validate(o);
  const bool printer = out != nullptr && comm.rank() == 0;
  const std::vector<int64_t> sizes = sweep_sizes(o);
  const int64_t element = comm::comm_dtype_bytes(o.dtype);
  auto reducer = comm::make_all_reducer(comm, {.algorithm = o.algorithm,
                                               .dtype = o.dtype,
                                               .numel = sizes.back() / element,
                                               .category = kernels::MemoryCategory::kComm});
  const std::span<float> buffer = reducer->buffer();
  const std::string transport = transport_label(comm);
  const std::string links = links_label();
  if (printer) {
    std::fputs(format_sweep_header(comm, o).c_str(), out);
    std::fflush(out);
  }
  std::vector<results::AllReduceRow> rows;
  for (int64_t bytes : sizes) {
    const int64_t count = bytes / element;
    std::span<float> data = buffer.first(static_cast<size_t>(count));
    // Zeros keep the repeated in-place sums finite however many iterations.
    std::fill(data.begin(), data.end(), 0.0f);
    comm.barrier();
    for (int i = 0; i < o.warmup; ++i) reducer->sum(0, count);
    comm.barrier();
    // t[0]: the rank's mean over the loop; t[1 + i]: its call i. Then the
    // slowest rank's of each.
    std::vector<double> t = time_calls(*reducer, count, o.iters);
    comm.all_reduce_max(t);

    // Verification, outside the timed region.
    for (int64_t i = 0; i < count; ++i) data[i] = fill_value(comm.rank(), i);
    reducer->sum(0, count);
    const int64_t n = comm.size();
    int64_t wrong = 0;
    // bf16 holds integers up to 256 exactly: with up to 7 ranks every partial
    // sum a rank or hop passes on is exact. Beyond, each of at most n - 1
    // roundings is within 2^-9 of the sum.
    const bool exact = o.dtype == options::CommDtype::kFp32 || 7 * n * (n + 1) / 2 <= 256;
    const double tolerance = exact ? 0.0 : static_cast<double>(n - 1) * std::ldexp(1.0, -9);
    for (int64_t i = 0; i < count; ++i) {
      const double expected = static_cast<double>((i % 7 + 1) * n * (n + 1) / 2);
      if (std::abs(data[i] - expected) > tolerance * expected) ++wrong;
    }
    wrong = comm.all_reduce_sum(wrong);

    results::AllReduceRow row;
    row.algorithm = std::string(enum_name(o.algorithm));
    row.transport = transport;
    row.links = links;
    row.world_size = comm.size();
    row.size_bytes = bytes;
    row.count = count;
    row.dtype = o.dtype == options::CommDtype::kBf16 ? "bfloat16" : "float32";
    row.redop = "sum";
    row.time_us = t[0] * 1e6;
    row.algbw_gbps = t[0] > 0 ? bytes / t[0] / 1e9 : 0.0;
    row.busbw_gbps = bus_bandwidth(row.algbw_gbps, comm.size());
    row.wrong = wrong;
    for (size_t i = 1; i < t.size(); ++i) row.call_time_us.push_back(t[i] * 1e6);
    if (printer) {
      std::fputs(format_sweep_row(row).c_str(), out);
      std::fflush(out);
    }
    rows.push_back(row);
  }
  if (printer) std::fputs(format_sweep_footer(rows).c_str(), out);
  if (o.copy_probe && !rows.empty()) {
    const double copy = copy_probe_gbps(comm, rows.back().size_bytes, 5);
    if (printer) std::fputs(format_copy_probe(rows.back(), copy, comm.size()).c_str(), out);
  }
  if (printer) std::fflush(out);
  return rows;
}

}  // namespace trainscope::suites
