#include "results/records.h"

#include <cmath>
#include <limits>
#include <sstream>

#include <fmt/format.h>

#include "kernels/atomic_file.h"
#include "kernels/check.h"

namespace trainscope::results {

using nlohmann::json;

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kRunning: return "running";
    case RunStatus::kOk: return "ok";
    case RunStatus::kFailed: return "failed";
    case RunStatus::kSkipped: return "skipped";
  }
  TS_CHECK(false) << "unknown RunStatus " << static_cast<int>(status);
  return "";
}

std::optional<RunStatus> parse_run_status(std::string_view text) {
  for (RunStatus s : {RunStatus::kRunning, RunStatus::kOk, RunStatus::kFailed,
                      RunStatus::kSkipped}) {
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

namespace {

// ---------------------------------------------------------------------------
// Strict reading. A Field is a JSON value plus the path that led to it, so
// every error can say exactly which field is wrong.

class Field {
 public:
  Field(const json& value, std::string path) : value_(value), path_(std::move(path)) {}

  const json& value() const { return value_; }
  const std::string& path() const { return path_; }

  [[noreturn]] void fail(std::string_view what) const {
    throw Error(fmt::format("field '{}' {}", path_.empty() ? "<top level>" : path_, what));
  }

  void require_object() const {
    if (!value_.is_object()) fail(fmt::format("must be an object, got {}", value_.type_name()));
  }

  // A required member.
  Field member(std::string_view key) const {
    require_object();
    auto it = value_.find(key);
    std::string path = child(key);
    if (it == value_.end()) {
      throw Error(fmt::format("missing required field '{}'", path));
    }
    return Field(*it, std::move(path));
  }

  // A member that may be absent or null.
  std::optional<Field> optional_member(std::string_view key) const {
    require_object();
    auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) return std::nullopt;
    return Field(*it, child(key));
  }

  Field element(size_t i) const { return Field(value_[i], fmt::format("{}[{}]", path_, i)); }

 private:
  std::string child(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

  const json& value_;
  std::string path_;
};

void read(const Field& f, double& out) {
  // JSON cannot hold NaN; writers store it as null (see records.h).
  if (f.value().is_null()) {
    out = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  if (!f.value().is_number()) f.fail(fmt::format("must be a number, got {}", f.value().type_name()));
  out = f.value().get<double>();
}

void read(const Field& f, int64_t& out) {
  const json& v = f.value();
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      f.fail("is out of range for a 64-bit integer");
    }
    out = static_cast<int64_t>(u);
    return;
  }
  if (!v.is_number_integer()) f.fail(fmt::format("must be an integer, got {}", v.type_name()));
  out = v.get<int64_t>();
}

void read(const Field& f, int& out) {
  int64_t wide = 0;
  read(f, wide);
  if (wide < std::numeric_limits<int>::min() || wide > std::numeric_limits<int>::max()) {
    f.fail("is out of range for a 32-bit integer");
  }
  out = static_cast<int>(wide);
}

void read(const Field& f, std::string& out) {
  if (!f.value().is_string()) f.fail(fmt::format("must be a string, got {}", f.value().type_name()));
  out = f.value().get<std::string>();
}

void read(const Field& f, std::map<std::string, std::string>& out) {
  f.require_object();
  out.clear();
  for (auto it = f.value().begin(); it != f.value().end(); ++it) {
    read(f.member(it.key()), out[it.key()]);
  }
}

template <typename T>
void read(const Field& f, std::vector<T>& out) {
  if (!f.value().is_array()) f.fail(fmt::format("must be an array, got {}", f.value().type_name()));
  out.clear();
  out.resize(f.value().size());
  for (size_t i = 0; i < out.size(); ++i) read(f.element(i), out[i]);
}

template <typename T>
void get(const Field& f, std::string_view key, T& out) {
  read(f.member(key), out);
}

void get_object(const Field& f, std::string_view key, json& out) {
  Field m = f.member(key);
  m.require_object();
  out = m.value();
}

// PhaseTimes and PhaseStats: one member per phase, keyed by its name.
template <typename Phases>
void read_phases(const Field& f, Phases& v) {
  const auto members = phase_members(v);
  for (size_t i = 0; i < members.size(); ++i) get(f, profiler::kPhaseNames[i], *members[i]);
}

void read(const Field& f, PhaseTimes& v) { read_phases(f, v); }

void read(const Field& f, StepRecord& v) {
  get(f, "step", v.step);
  get(f, "loss", v.loss);
  get(f, "lr", v.lr);
  get(f, "grad_norm", v.grad_norm);
  get(f, "tokens", v.tokens);
  get(f, "step_time_s", v.step_time_s);
  get(f, "phases", v.phases);
  get(f, "comm_calls", v.comm_calls);
  get(f, "comm_bytes", v.comm_bytes);
  get(f, "comm_exposed_s", v.comm_exposed_s);
  get(f, "mem_active", v.mem_active);
  get(f, "mem_peak", v.mem_peak);
}

void read(const Field& f, ValLoss& v) {
  get(f, "step", v.step);
  get(f, "loss", v.loss);
}

void read(const Field& f, TimeStats& v) {
  get(f, "mean", v.mean);
  get(f, "median", v.median);
  get(f, "p95", v.p95);
  get(f, "min", v.min);
  get(f, "max", v.max);
}

void read(const Field& f, PhaseStats& v) { read_phases(f, v); }

void read(const Field& f, MemoryByCategory& v) {
  get(f, "parameters", v.parameters);
  get(f, "gradients", v.gradients);
  get(f, "optimizer_state", v.optimizer_state);
  get(f, "activations", v.activations);
  get(f, "data", v.data);
  get(f, "comm", v.comm);
  get(f, "workspace", v.workspace);
  get(f, "other", v.other);
}

void read(const Field& f, DataStats& v) {
  get(f, "examples_held", v.examples_held);
  get(f, "tokens_held", v.tokens_held);
  get(f, "bytes_held", v.bytes_held);
  get(f, "bytes_read", v.bytes_read);
}

void read(const Field& f, CommStats& v) {
  get(f, "calls", v.calls);
  get(f, "bytes", v.bytes);
  get(f, "time_s", v.time_s);
  get(f, "exposed_s", v.exposed_s);
}

void read(const Field& f, RankResult& v) {
  get(f, "rank", v.rank);
  get(f, "host", v.host);
  get(f, "pid", v.pid);
  get(f, "tokens_per_s", v.tokens_per_s);
  get(f, "step_time", v.step_time);
  get(f, "phases", v.phases);
  get(f, "tracked_peak_total", v.tracked_peak_total);
  get(f, "tracked_peak_by_category", v.tracked_peak_by_category);
  get(f, "vm_hwm", v.vm_hwm);
  get(f, "vm_rss", v.vm_rss);
  get(f, "pss", v.pss);
  get(f, "data", v.data);
  get(f, "comm", v.comm);
}

void read(const Field& f, Totals& v) {
  get(f, "tokens_per_s", v.tokens_per_s);
  get(f, "step_time_median_s", v.step_time_median_s);
  get(f, "step_time_p95_s", v.step_time_p95_s);
}

void read(const Field& f, RunSummary& v) {
  get(f, "schema", v.schema);
  if (v.schema != kRunSummarySchema) {
    f.member("schema").fail(fmt::format("is '{}', expected '{}'", v.schema, kRunSummarySchema));
  }
  get(f, "trainscope_version", v.trainscope_version);
  get(f, "git_revision", v.git_revision);
  get_object(f, "model", v.model);
  get_object(f, "options", v.options);
  get(f, "world_size", v.world_size);
  if (v.world_size < 1) f.member("world_size").fail(fmt::format("must be >= 1, got {}", v.world_size));
  get(f, "threads_per_rank", v.threads_per_rank);
  get(f, "hosts", v.hosts);
  get(f, "transport", v.transport);
  v.transport_per_rank.clear();
  if (auto m = f.optional_member("transport_per_rank")) read(*m, v.transport_per_rank);
  std::string status;
  get(f, "status", status);
  auto parsed = parse_run_status(status);
  if (!parsed || (*parsed != RunStatus::kOk && *parsed != RunStatus::kFailed)) {
    f.member("status").fail(fmt::format("is '{}', expected 'ok' or 'failed'", status));
  }
  v.status = *parsed;
  get(f, "error", v.error);
  v.failed_step.reset();
  if (auto m = f.optional_member("failed_step")) read(*m, v.failed_step.emplace());
  get(f, "steps", v.steps);
  if (v.steps.size() > static_cast<size_t>(v.world_size)) {
    f.member("steps").fail(fmt::format("has {} per-rank lists for world_size {}", v.steps.size(),
                                       v.world_size));
  }
  get(f, "val", v.val);
  get(f, "ranks", v.ranks);
  for (size_t i = 0; i < v.ranks.size(); ++i) {
    if (v.ranks[i].rank < 0 || v.ranks[i].rank >= v.world_size) {
      f.member("ranks").element(i).fail(
          fmt::format("has rank {} outside world_size {}", v.ranks[i].rank, v.world_size));
    }
  }
  get(f, "totals", v.totals);
}

void read(const Field& f, AllReduceRow& v) {
  get(f, "transport", v.transport);
  get(f, "links", v.links);
  get(f, "world_size", v.world_size);
  get(f, "size_bytes", v.size_bytes);
  get(f, "count", v.count);
  get(f, "dtype", v.dtype);
  get(f, "redop", v.redop);
  get(f, "time_us", v.time_us);
  get(f, "algbw_gbps", v.algbw_gbps);
  get(f, "busbw_gbps", v.busbw_gbps);
  get(f, "wrong", v.wrong);
}


// ---------------------------------------------------------------------------
// Writing.

json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

json to_j(const TimeStats& v) {
  return {{"mean", num(v.mean)}, {"median", num(v.median)}, {"p95", num(v.p95)},
          {"min", num(v.min)},   {"max", num(v.max)}};
}

json phase_value(double seconds) { return num(seconds); }
json phase_value(const TimeStats& stats) { return to_j(stats); }

template <typename Phases>
json phases_to_j(const Phases& v) {
  json out = json::object();
  const auto members = phase_members(v);
  for (size_t i = 0; i < members.size(); ++i) {
    out[std::string(profiler::kPhaseNames[i])] = phase_value(*members[i]);
  }
  return out;
}

json to_j(const PhaseTimes& v) { return phases_to_j(v); }
json to_j(const PhaseStats& v) { return phases_to_j(v); }

json to_j(const MemoryByCategory& v) {
  return {{"parameters", v.parameters}, {"gradients", v.gradients},
          {"optimizer_state", v.optimizer_state}, {"activations", v.activations},
          {"data", v.data}, {"comm", v.comm}, {"workspace", v.workspace}, {"other", v.other}};
}

template <typename T>
std::vector<T> load_jsonl(const std::filesystem::path& path) {
  std::istringstream in(read_file(path));
  std::vector<T> rows;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      json j = json::parse(line);
      T row;
      read(Field(j, ""), row);
      rows.push_back(std::move(row));
    } catch (const json::parse_error& e) {
      throw Error(fmt::format("{}:{}: not valid JSON: {}", path.string(), line_no, e.what()));
    } catch (const Error& e) {
      throw Error(fmt::format("{}:{}: {}", path.string(), line_no, e.what()), e.exit_code());
    }
  }
  return rows;
}

}  // namespace

void to_json(json& j, const StepRecord& v) {
  j = {{"step", v.step},
       {"loss", num(v.loss)},
       {"lr", num(v.lr)},
       {"grad_norm", num(v.grad_norm)},
       {"tokens", v.tokens},
       {"step_time_s", num(v.step_time_s)},
       {"phases", to_j(v.phases)},
       {"comm_calls", v.comm_calls},
       {"comm_bytes", v.comm_bytes},
       {"comm_exposed_s", num(v.comm_exposed_s)},
       {"mem_active", v.mem_active},
       {"mem_peak", v.mem_peak}};
}

void from_json(const json& j, StepRecord& v) { read(Field(j, ""), v); }

void to_json(json& j, const RankResult& v) {
  j = {{"rank", v.rank},
       {"host", v.host},
       {"pid", v.pid},
       {"tokens_per_s", num(v.tokens_per_s)},
       {"step_time", to_j(v.step_time)},
       {"phases", to_j(v.phases)},
       {"tracked_peak_total", v.tracked_peak_total},
       {"tracked_peak_by_category", to_j(v.tracked_peak_by_category)},
       {"vm_hwm", v.vm_hwm},
       {"vm_rss", v.vm_rss},
       {"pss", v.pss},
       {"data",
        {{"examples_held", v.data.examples_held},
         {"tokens_held", v.data.tokens_held},
         {"bytes_held", v.data.bytes_held},
         {"bytes_read", v.data.bytes_read}}},
       {"comm",
        {{"calls", v.comm.calls},
         {"bytes", v.comm.bytes},
         {"time_s", num(v.comm.time_s)},
         {"exposed_s", num(v.comm.exposed_s)}}}};
}

void from_json(const json& j, RankResult& v) { read(Field(j, ""), v); }

void to_json(json& j, const RunSummary& v) {
  json steps = json::array();
  for (const auto& per_rank : v.steps) steps.push_back(per_rank);
  json val = json::array();
  for (const auto& p : v.val) val.push_back({{"step", p.step}, {"loss", num(p.loss)}});
  j = {{"schema", v.schema},
       {"trainscope_version", v.trainscope_version},
       {"git_revision", v.git_revision},
       {"model", v.model},
       {"options", v.options},
       {"world_size", v.world_size},
       {"threads_per_rank", v.threads_per_rank},
       {"hosts", v.hosts},
       {"transport", v.transport},
       {"transport_per_rank", v.transport_per_rank},
       {"status", to_string(v.status)},
       {"error", v.error},
       {"failed_step", v.failed_step ? json(*v.failed_step) : json(nullptr)},
       {"steps", std::move(steps)},
       {"val", std::move(val)},
       {"ranks", v.ranks},
       {"totals",
        {{"tokens_per_s", num(v.totals.tokens_per_s)},
         {"step_time_median_s", num(v.totals.step_time_median_s)},
         {"step_time_p95_s", num(v.totals.step_time_p95_s)}}}};
}

void from_json(const json& j, RunSummary& v) { read(Field(j, ""), v); }

void to_json(json& j, const AllReduceRow& v) {
  j = {{"transport", v.transport}, {"links", v.links},         {"world_size", v.world_size},
       {"size_bytes", v.size_bytes}, {"count", v.count},       {"dtype", v.dtype},
       {"redop", v.redop},         {"time_us", num(v.time_us)}, {"algbw_gbps", num(v.algbw_gbps)},
       {"busbw_gbps", num(v.busbw_gbps)}, {"wrong", v.wrong}};
}

void from_json(const json& j, AllReduceRow& v) { read(Field(j, ""), v); }


RunSummary load_run_summary(const std::filesystem::path& path) {
  std::string text = read_file(path);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("run summary {} is not valid JSON: {}", path.string(), e.what()));
  }
  RunSummary summary;
  try {
    read(Field(j, ""), summary);
  } catch (const Error& e) {
    throw Error(fmt::format("run summary {}: {}", path.string(), e.what()), e.exit_code());
  }
  return summary;
}

void save_run_summary(const RunSummary& summary, const std::filesystem::path& path) {
  json j = summary;
  write_file_atomically(path, j.dump(2) + "\n");
}

std::vector<AllReduceRow> load_allreduce_rows(const std::filesystem::path& path) {
  return load_jsonl<AllReduceRow>(path);
}

}  // namespace trainscope::results
