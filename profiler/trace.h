// Timeline events for Perfetto / chrome://tracing, per rank as the run goes
// and merged at its end.
//
// A TraceRecorder collects "complete" events (a name, a track, a start, a
// duration, and small numeric arguments: step, bytes, bucket id) while a run is
// traced (the trainer's --trace FILE), and samples of the tracked memory per
// category (counter tracks). Recording appends a fixed-size struct to a
// pre-reserved vector: no allocation or formatting per event until the
// reserve is used up; names are interned once (intern()) and referred to by id.
//
// Timestamps are trace_clock_ns(): steady_clock (CLOCK_MONOTONIC) nanoseconds,
// the same clock the step timers read. Each rank's clock has its own origin on
// another host, so cross-rank merging takes each rank's offset relative to rank
// 0 (estimate_clock_offset() over MPI ping-pong samples; 0 for ranks on rank
// 0's host, which share the monotonic clock).
//
// As the run goes, a TraceStream appends each rank's new events to its own
// file (rank_trace_path()) every half second, so that a job that dies or is
// killed still leaves a trace of every rank up to then, as Horovod's timeline
// does: after every flush the file is a whole, valid JSON document.
//
// Cross-rank flow at the end (the trainer owns the MPI part): every rank calls
// serialize(); rank 0 gathers the strings and the offsets and calls
// write_merged_chrome_trace(). The output has one process per rank (pid =
// rank, named "rank N (host)") with thread 1 = compute and thread 2 = comm, so
// communication shows on its own track under each rank's compute, and a
// "tracked memory" counter with one series per memory category. Both kinds of
// file carry the clock offsets in "otherData".
//
// Thread-safety: record() and intern() may be called from any thread (a mutex;
// uncontended it costs about as much as one clock read). serialize() and the
// writers may run concurrently with record() and see a consistent prefix.
#ifndef TRAINSCOPE_PROFILER_TRACE_H_
#define TRAINSCOPE_PROFILER_TRACE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/storage.h"
#include "profiler/periodic_thread.h"

namespace trainscope::profiler {

// Nanoseconds on steady_clock since its (per-boot) epoch.
int64_t trace_clock_ns();

enum class Track : int32_t { kCompute = 0, kComm = 1 };
std::string_view track_name(Track track);  // "compute", "comm"

// Optional numeric arguments of an event; negative means absent.
struct TraceArgs {
  int64_t bytes = -1;
  int32_t bucket = -1;
};

struct TraceEvent {
  uint32_t name = 0;  // id from TraceRecorder::intern()
  Track track = Track::kCompute;
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  int64_t step = -1;  // -1 outside a training step
  TraceArgs args;
};

// Tracked bytes active per memory category at one instant.
struct MemorySample {
  int64_t time_ns = 0;
  std::array<int64_t, kernels::kNumMemoryCategories> active{};
};

class TraceRecorder {
 public:
  // `host` labels the rank's process in the viewer. `reserve_events` sizes
  // the buffer up front (~48 bytes each) so steady-state recording does not
  // allocate; beyond it the vector grows geometrically.
  TraceRecorder(int rank, std::string host, std::size_t reserve_events = 1 << 16);

  TraceRecorder(const TraceRecorder&) = delete;
  TraceRecorder& operator=(const TraceRecorder&) = delete;

  // Disabled recorders drop events at the cost of one relaxed load.
  void set_enabled(bool enabled) { enabled_.store(enabled, std::memory_order_relaxed); }
  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }

  // Id of `name`, adding it on first use. Not for the hot path: intern at
  // setup and keep the id.
  uint32_t intern(std::string_view name);

  void record(uint32_t name, Track track, int64_t start_ns, int64_t duration_ns, int64_t step = -1,
              TraceArgs args = {});
  // The snapshot's active bytes per category, as of `time_ns`.
  void record_memory(int64_t time_ns, const kernels::MemorySnapshot& snapshot);

  int rank() const { return rank_; }
  const std::string& host() const { return host_; }
  std::size_t size() const;
  std::vector<TraceEvent> events() const;
  std::vector<std::string> names() const;
  // Drops events and memory samples, keeps names and the reserved capacity.
  // Not while a TraceStream follows this recorder.
  void clear();

  // What was recorded after the first `events` events and `samples` memory
  // samples, with every name so far: what a TraceStream appends next.
  struct Tail {
    std::vector<TraceEvent> events;
    std::vector<MemorySample> memory;
    std::vector<std::string> names;
  };
  Tail tail(std::size_t events, std::size_t samples) const;

  // This rank's events as a compact JSON string for the gather:
  // {"rank":R,"host":H,"names":[...],"events":[[name,track,start,dur,step,bytes,bucket],...],
  //  "memory":[[time,bytes of each category...],...]}
  std::string serialize() const;

  // Chrome trace of this rank alone (offset 0), written atomically.
  void write_chrome_trace(const std::string& path) const;

 private:
  const int rank_;
  const std::string host_;
  std::atomic<bool> enabled_{true};
  mutable std::mutex mutex_;
  std::vector<TraceEvent> events_;
  std::vector<MemorySample> memory_;
  std::vector<std::string> names_;
};

// The file rank `rank` streams to: "run.trace.json" -> "run.trace.rank1.json".
std::string rank_trace_path(const std::string& trace_path, int rank);

struct TraceStreamOptions {
  std::string path;             // rank_trace_path() of the run's --trace
  int64_t clock_offset_ns = 0;  // this rank's clock minus rank 0's
  double flush_interval_s = 0.5;
};

// One rank's Chrome trace, written as the run goes. The file is created at
// once as a valid trace with no events; every flush writes the events and
// memory samples recorded since the last one, followed by the document's
// closing text, over the previous closing text: between flushes the file is
// always a whole JSON document (a kill in the middle of a flush's one write
// can cut it; Chrome's viewer still opens it). Timestamps are microseconds on
// rank 0's clock (this rank's minus its offset), so the ranks' files line up.
//
// Thread-safety: a thread of its own flushes every flush_interval_s; flush()
// may also be called from any thread.
class TraceStream {
 public:
  // Creates the file (trainscope::Error naming it when it cannot) and starts
  // following `recorder`, which must outlive this.
  TraceStream(const TraceRecorder& recorder, TraceStreamOptions options);
  // Stops the thread and flushes what is left.
  ~TraceStream();
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;

  // Throws trainscope::Error naming the file when a write fails; later
  // flushes then do nothing.
  void flush();

 private:
  void write_at(int64_t offset, const std::string& text) const;

  const TraceRecorder& recorder_;
  const TraceStreamOptions options_;
  const std::string closing_;  // written after the events at every flush
  int fd_ = -1;
  std::mutex flush_mu_;
  int64_t events_end_ = 0;  // file offset just past the last event written
  std::size_t events_written_ = 0, samples_written_ = 0;
  bool failed_ = false;                   // a write failed: said once, nothing more written
  std::optional<PeriodicThread> thread_;  // last: starts after everything it touches exists
};

// One rank's contribution to a merged trace.
struct RankTrace {
  std::string serialized;       // TraceRecorder::serialize() of that rank
  int64_t clock_offset_ns = 0;  // that rank's clock minus rank 0's clock
};

// Chrome trace-event JSON of all ranks on rank 0's clock. Times are shifted
// so the earliest event starts at 0 and written in microseconds. Throws
// trainscope::Error naming the rank whose data does not parse.
std::string merge_chrome_traces(std::span<const RankTrace> ranks);
void write_merged_chrome_trace(const std::string& path, std::span<const RankTrace> ranks);

// One ping-pong exchange between rank 0 (the reference) and rank r:
// t0 rank 0 sends, t1 rank r receives, t2 rank r replies, t3 rank 0 receives;
// t0/t3 on rank 0's clock, t1/t2 on rank r's (trace_clock_ns()).
struct PingPongSample {
  int64_t t0 = 0, t1 = 0, t2 = 0, t3 = 0;
};
struct ClockOffset {
  int64_t offset_ns = 0;      // rank r's clock minus rank 0's clock
  int64_t round_trip_ns = 0;  // of the sample used; the error bound is half of it
};
// NTP's estimate, offset = ((t1 - t0) + (t2 - t3)) / 2, from the sample with
// the least round trip (t3 - t0) - (t2 - t1): the one least skewed by queueing
// in one direction. REQUIRES: samples not empty.
ClockOffset estimate_clock_offset(std::span<const PingPongSample> samples);

}  // namespace trainscope::profiler

#endif  // TRAINSCOPE_PROFILER_TRACE_H_
