#include "profiler/trace.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <nlohmann/json.hpp>

#include "kernels/check.h"
#include "kernels/atomic_file.h"

namespace trainscope::profiler {

using nlohmann::json;

int64_t trace_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view track_name(Track track) {
  return track == Track::kComm ? "comm" : "compute";
}

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
}

std::string TraceRecorder::serialize() const {
  std::vector<TraceEvent> events;
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    events = events_;
    names = names_;
  }
  json rows = json::array();
  for (const TraceEvent& e : events) {
    rows.push_back({e.name, static_cast<int>(e.track), e.start_ns, e.duration_ns, e.step,
                    e.args.bytes, e.args.bucket});
  }
  return json{{"rank", rank_}, {"host", host_}, {"names", names}, {"events", std::move(rows)}}
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
  int64_t offset_ns = 0;
};

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
      if (e.name >= out.names.size()) throw Error("an event names unknown id " + std::to_string(e.name));
      out.events.push_back(e);
    }
  } catch (const std::exception& e) {
    throw Error("trace data of rank entry " + std::to_string(index) + " is malformed: " + e.what());
  }
  return out;
}

// Chrome wants microseconds; keep nanosecond resolution as a fraction.
double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

std::string merge_chrome_traces(std::span<const RankTrace> ranks) {
  std::vector<ParsedRank> parsed;
  parsed.reserve(ranks.size());
  for (std::size_t i = 0; i < ranks.size(); ++i) parsed.push_back(parse_rank(ranks[i], i));

  // Origin: the earliest event on rank 0's clock, so the viewer starts at 0.
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const ParsedRank& r : parsed)
    for (const TraceEvent& e : r.events) origin = std::min(origin, e.start_ns - r.offset_ns);
  if (origin == std::numeric_limits<int64_t>::max()) origin = 0;

  json events = json::array();
  for (const ParsedRank& r : parsed) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r.rank},
                      {"args", {{"name", "rank " + std::to_string(r.rank) + " (" + r.host + ")"}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r.rank},
                      {"args", {{"sort_index", r.rank}}}});
    for (Track t : {Track::kCompute, Track::kComm}) {
      const int tid = static_cast<int>(t) + 1;
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", r.rank}, {"tid", tid},
                        {"args", {{"name", std::string(track_name(t))}}}});
      events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", r.rank},
                        {"tid", tid}, {"args", {{"sort_index", tid}}}});
    }
    for (const TraceEvent& e : r.events) {
      json args = json::object();
      if (e.step >= 0) args["step"] = e.step;
      if (e.args.bytes >= 0) args["bytes"] = e.args.bytes;
      if (e.args.bucket >= 0) args["bucket"] = e.args.bucket;
      events.push_back({{"name", r.names[e.name]},
                        {"cat", std::string(track_name(e.track))},
                        {"ph", "X"},
                        {"ts", to_us(e.start_ns - r.offset_ns - origin)},
                        {"dur", to_us(e.duration_ns)},
                        {"pid", r.rank},
                        {"tid", static_cast<int>(e.track) + 1},
                        {"args", std::move(args)}});
    }
  }
  return json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
}

void write_merged_chrome_trace(const std::string& path, std::span<const RankTrace> ranks) {
  write_file_atomically(path, merge_chrome_traces(ranks));
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
