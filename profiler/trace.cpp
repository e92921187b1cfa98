#include "profiler/trace.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "base/check.h"
#include "base/atomic_file.h"

namespace trainscope::profiler {

using nlohmann::json;

int64_t trace_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view track_name(Track track) { return track == Track::kComm ? "comm" : "compute"; }

TraceRecorder::TraceRecorder(int rank, std::string host, std::size_t reserve_events)
    : rank_(rank), host_(std::move(host)) {
  events_.reserve(reserve_events);
}

uint32_t TraceRecorder::intern(std::string_view name) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return static_cast<uint32_t>(i);
  names_.emplace_back(name);
  return static_cast<uint32_t>(names_.size() - 1);
}

void TraceRecorder::record(uint32_t name, Track track, int64_t start_ns, int64_t duration_ns,
                           int64_t step, TraceArgs args) {
  if (!enabled()) return;
  std::lock_guard lock(mutex_);
  events_.push_back(TraceEvent{name, track, start_ns, duration_ns, step, args});
}

void TraceRecorder::record_memory(int64_t time_ns, const kernels::MemorySnapshot& snapshot) {
  if (!enabled()) return;
  MemorySample sample{.time_ns = time_ns};
  for (int c = 0; c < kernels::kNumMemoryCategories; ++c) {
    sample.active[c] = snapshot.by_category[c].active;
  }
  std::lock_guard lock(mutex_);
  memory_.push_back(sample);
}

std::size_t TraceRecorder::size() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::vector<TraceEvent> TraceRecorder::events() const {
  std::lock_guard lock(mutex_);
  return events_;
}

std::vector<std::string> TraceRecorder::names() const {
  std::lock_guard lock(mutex_);
  return names_;
}

void TraceRecorder::clear() {
  std::lock_guard lock(mutex_);
  events_.clear();
  memory_.clear();
}

TraceRecorder::Tail TraceRecorder::tail(std::size_t events, std::size_t samples) const {
  std::lock_guard lock(mutex_);
  Tail out;
  out.events.assign(events_.begin() + std::min(events, events_.size()), events_.end());
  out.memory.assign(memory_.begin() + std::min(samples, memory_.size()), memory_.end());
  out.names = names_;
  return out;
}

std::string TraceRecorder::serialize() const {
  Tail all = tail(0, 0);
  json rows = json::array();
  for (const TraceEvent& e : all.events) {
    rows.push_back({e.name, static_cast<int>(e.track), e.start_ns, e.duration_ns, e.step,
                    e.args.bytes, e.args.bucket});
  }
  json memory = json::array();
  for (const MemorySample& m : all.memory) {
    json row = {m.time_ns};
    for (int64_t bytes : m.active) row.push_back(bytes);
    memory.push_back(std::move(row));
  }
  return json{{"rank", rank_},
              {"host", host_},
              {"names", std::move(all.names)},
              {"events", std::move(rows)},
              {"memory", std::move(memory)}}
      .dump();
}

void TraceRecorder::write_chrome_trace(const std::string& path) const {
  const RankTrace self{serialize(), 0};
  write_merged_chrome_trace(path, std::span(&self, 1));
}

namespace {

struct ParsedRank {
  int rank = 0;
  std::string host;
  std::vector<std::string> names;
  std::vector<TraceEvent> events;
  std::vector<MemorySample> memory;
  int64_t offset_ns = 0;
};

MemorySample parse_memory_sample(const json& row) {
  if (!row.is_array() || row.size() != 1 + kernels::kNumMemoryCategories) {
    throw Error("a memory sample is not a time and one figure per memory category");
  }
  MemorySample m{.time_ns = row[0].get<int64_t>()};
  for (int c = 0; c < kernels::kNumMemoryCategories; ++c) m.active[c] = row[1 + c].get<int64_t>();
  return m;
}

ParsedRank parse_rank(const RankTrace& in, std::size_t index) {
  ParsedRank out;
  out.offset_ns = in.clock_offset_ns;
  try {
    const json j = json::parse(in.serialized);
    out.rank = j.at("rank").get<int>();
    out.host = j.at("host").get<std::string>();
    out.names = j.at("names").get<std::vector<std::string>>();
    for (const json& row : j.at("events")) {
      if (!row.is_array() || row.size() != 7) throw Error("an event is not a 7-element array");
      TraceEvent e;
      e.name = row[0].get<uint32_t>();
      e.track = row[1].get<int>() == 1 ? Track::kComm : Track::kCompute;
      e.start_ns = row[2].get<int64_t>();
      e.duration_ns = row[3].get<int64_t>();
      e.step = row[4].get<int64_t>();
      e.args.bytes = row[5].get<int64_t>();
      e.args.bucket = row[6].get<int32_t>();
      if (e.name >= out.names.size())
        throw Error("an event names unknown id " + std::to_string(e.name));
      out.events.push_back(e);
    }
    if (j.contains("memory")) {
      for (const json& row : j.at("memory")) out.memory.push_back(parse_memory_sample(row));
    }
  } catch (const std::exception& e) {
    throw Error("trace data of rank entry " + std::to_string(index) + " is malformed: " + e.what());
  }
  return out;
}

// Chrome wants microseconds; keep nanosecond resolution as a fraction.
double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

// The Chrome events of one rank's trace (pid = rank): its process and track
// names, its complete events and its memory counter. `shift_ns` is
// subtracted from every time: the rank's clock offset, plus the merged
// trace's origin.
void add_rank_metadata(json& out, int rank, const std::string& host) {
  out.push_back({{"name", "process_name"},
                 {"ph", "M"},
                 {"pid", rank},
                 {"args", {{"name", "rank " + std::to_string(rank) + " (" + host + ")"}}}});
  out.push_back({{"name", "process_sort_index"},
                 {"ph", "M"},
                 {"pid", rank},
                 {"args", {{"sort_index", rank}}}});
  for (Track t : {Track::kCompute, Track::kComm}) {
    const int tid = static_cast<int>(t) + 1;
    out.push_back({{"name", "thread_name"},
                   {"ph", "M"},
                   {"pid", rank},
                   {"tid", tid},
                   {"args", {{"name", std::string(track_name(t))}}}});
    out.push_back({{"name", "thread_sort_index"},
                   {"ph", "M"},
                   {"pid", rank},
                   {"tid", tid},
                   {"args", {{"sort_index", tid}}}});
  }
}

void add_rank_events(json& out, int rank, std::span<const std::string> names,
                     std::span<const TraceEvent> events, std::span<const MemorySample> memory,
                     int64_t shift_ns) {
  for (const TraceEvent& e : events) {
    json args = json::object();
    if (e.step >= 0) args["step"] = e.step;
    if (e.args.bytes >= 0) args["bytes"] = e.args.bytes;
    if (e.args.bucket >= 0) args["bucket"] = e.args.bucket;
    out.push_back({{"name", names[e.name]},
                   {"cat", std::string(track_name(e.track))},
                   {"ph", "X"},
                   {"ts", to_us(e.start_ns - shift_ns)},
                   {"dur", to_us(e.duration_ns)},
                   {"pid", rank},
                   {"tid", static_cast<int>(e.track) + 1},
                   {"args", std::move(args)}});
  }
  for (const MemorySample& m : memory) {
    json bytes = json::object();
    for (int c = 0; c < kernels::kNumMemoryCategories; ++c) {
      bytes[std::string(kernels::kMemoryCategoryNames[c])] = m.active[c];
    }
    out.push_back({{"name", "tracked memory"},
                   {"cat", "memory"},
                   {"ph", "C"},
                   {"ts", to_us(m.time_ns - shift_ns)},
                   {"pid", rank},
                   {"args", std::move(bytes)}});
  }
}

// Origin: the earliest event or sample on rank 0's clock, so the viewer starts at 0.
int64_t merged_origin(const std::vector<ParsedRank>& parsed) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const ParsedRank& r : parsed) {
    for (const TraceEvent& e : r.events) origin = std::min(origin, e.start_ns - r.offset_ns);
    for (const MemorySample& m : r.memory) origin = std::min(origin, m.time_ns - r.offset_ns);
  }
  return origin == std::numeric_limits<int64_t>::max() ? 0 : origin;
}

}  // namespace

std::string merge_chrome_traces(std::span<const RankTrace> ranks) {
  std::vector<ParsedRank> parsed;
  parsed.reserve(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) parsed.push_back(parse_rank(ranks[i], i));
  const int64_t origin = merged_origin(parsed);
  json events = json::array();
  json offsets = json::array();
  for (const ParsedRank& r : parsed) {
    add_rank_metadata(events, r.rank, r.host);
    add_rank_events(events, r.rank, r.names, r.events, r.memory, r.offset_ns + origin);
    offsets.push_back(r.offset_ns);
  }
  return json{{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData", {{"clock_offsets_ns", std::move(offsets)}}}}
      .dump();
}

void write_merged_chrome_trace(const std::string& path, std::span<const RankTrace> ranks) {
  write_file_atomically(path, merge_chrome_traces(ranks));
}

std::string rank_trace_path(const std::string& trace_path, int rank) {
  const std::filesystem::path path(trace_path);
  std::filesystem::path name = path.stem();
  name += ".rank" + std::to_string(rank);
  name += path.extension();
  return (path.parent_path() / name).string();
}

namespace {

// Where a rank's streamed trace ends: the events' closing bracket, and what
// a reader needs to line the ranks' files up.
std::string stream_closing(const TraceRecorder& recorder, int64_t clock_offset_ns) {
  const json other = {{"rank", recorder.rank()},
                      {"host", recorder.host()},
                      {"clock_offset_ns", clock_offset_ns},
                      {"timestamps", "microseconds on rank 0's steady clock"}};
  return "\n],\"displayTimeUnit\":\"ms\",\"otherData\":" + other.dump() + "}\n";
}

}  // namespace

TraceStream::TraceStream(const TraceRecorder& recorder, TraceStreamOptions options)
    : recorder_(recorder),
      options_(std::move(options)),
      closing_(stream_closing(recorder, options_.clock_offset_ns)) {
  fd_ = ::open(options_.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error("cannot write trace " + options_.path + ": " + std::strerror(errno));
  }
  json metadata = json::array();
  add_rank_metadata(metadata, recorder_.rank(), recorder_.host());
  std::string header = "{\"traceEvents\":[";
  for (std::size_t i = 0; i < metadata.size(); ++i) {
    header += (i ? ",\n" : "\n") + metadata[i].dump();
  }
  try {
    write_at(0, header + closing_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  events_end_ = static_cast<int64_t>(header.size());
  // A write error ends the streaming (said once) but not the run.
  thread_.emplace(options_.flush_interval_s, [this] {
    try {
      flush();
      return true;
    } catch (const Error& e) {
      std::fprintf(stderr, "trainscope: %s; the trace stops here\n", e.what());
      return false;
    }
  });
}

TraceStream::~TraceStream() {
  thread_.reset();
  try {
    flush();
  } catch (const Error& e) {
    std::fprintf(stderr, "trainscope: %s\n", e.what());
  }
  ::close(fd_);
}

void TraceStream::flush() {
  std::lock_guard lock(flush_mu_);
  if (failed_) return;
  const TraceRecorder::Tail tail = recorder_.tail(events_written_, samples_written_);
  if (tail.events.empty() && tail.memory.empty()) return;
  json events = json::array();
  add_rank_events(events, recorder_.rank(), tail.names, tail.events, tail.memory,
                  options_.clock_offset_ns);
  std::string text;
  for (const json& e : events) text += ",\n" + e.dump();
  // One write: the new events and, over the old closing text, the closing again.
  try {
    write_at(events_end_, text + closing_);
  } catch (const Error&) {
    failed_ = true;
    throw;
  }
  events_end_ += static_cast<int64_t>(text.size());
  events_written_ += tail.events.size();
  samples_written_ += tail.memory.size();
}

void TraceStream::write_at(int64_t offset, const std::string& text) const {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::pwrite(fd_, text.data() + done, text.size() - done,
                               static_cast<off_t>(offset + static_cast<int64_t>(done)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write trace " + options_.path + ": " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

ClockOffset estimate_clock_offset(std::span<const PingPongSample> samples) {
  TS_CHECK(!samples.empty()) << "no ping-pong samples to estimate a clock offset from";
  ClockOffset best;
  best.round_trip_ns = std::numeric_limits<int64_t>::max();
  for (const PingPongSample& s : samples) {
    const int64_t round_trip = (s.t3 - s.t0) - (s.t2 - s.t1);
    if (round_trip < best.round_trip_ns) {
      best.round_trip_ns = round_trip;
      best.offset_ns = ((s.t1 - s.t0) + (s.t2 - s.t3)) / 2;
    }
  }
  return best;
}

}  // namespace trainscope::profiler
