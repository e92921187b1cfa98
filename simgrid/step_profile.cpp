#include "simgrid/step_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace trainscope::simgrid {
namespace {

const char* collective_name(Collective c) { return c == Collective::kRing ? "ring" : "mpi"; }

template <typename T>
void append_list(std::ostringstream& out, const char* key, const std::vector<T>& values) {
  if (values.empty()) return;
  out << key;
  for (const T& v : values) out << ' ' << v;
  out << '\n';
}

// One line's words after its key, read as numbers; errors name the line.
class LineReader {
 public:
  LineReader(const std::string& source, int line, std::string key)
      : where_(source + ":" + std::to_string(line) + ": " + key + ": ") {}

  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(where_ + what); }

  double number(const std::string& word, double min) const {
    char* end = nullptr;
    const double v = std::strtod(word.c_str(), &end);
    if (word.empty() || *end != '\0' || !std::isfinite(v)) fail("not a number: " + word);
    if (v < min) fail("must be at least " + std::to_string(min) + ", got " + word);
    return v;
  }

  int64_t whole(const std::string& word, int64_t min) const {
    char* end = nullptr;
    const long long v = std::strtoll(word.c_str(), &end, 10);
    if (word.empty() || *end != '\0') fail("not a whole number: " + word);
    if (v < min) fail("must be at least " + std::to_string(min) + ", got " + word);
    return v;
  }

 private:
  std::string where_;
};

}  // namespace

std::string format_step_profile(const StepProfile& p) {
  std::ostringstream out;
  out.precision(17);
  out << "# trainscope step profile for SimGrid (simgrid/step_profile.h)\n";
  out << "forward_s " << p.forward_s << "\nbackward_s " << p.backward_s << "\nother_s " << p.other_s
      << '\n';
  append_list(out, "buckets", p.bucket_bytes);
  append_list(out, "ready", p.ready);
  out << "overlap " << (p.overlap ? 1 : 0) << "\ncollective " << collective_name(p.collective)
      << "\nsteps " << p.steps << '\n';
  append_list(out, "compute_samples", p.compute_samples);
  return out.str();
}

StepProfile parse_step_profile(const std::string& text, const std::string& source) {
  StepProfile p;
  std::istringstream in(text);
  std::string line;
  bool have_buckets = false;
  for (int n = 1; std::getline(in, line); ++n) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string key;
    if (!(words >> key)) continue;
    std::vector<std::string> values;
    for (std::string w; words >> w;) values.push_back(w);
    const LineReader r(source, n, key);
    const bool list = key == "buckets" || key == "ready" || key == "compute_samples";
    if (values.empty()) r.fail("no value");
    if (!list && values.size() != 1)
      r.fail("one value expected, got " + std::to_string(values.size()));
    if (key == "forward_s")
      p.forward_s = r.number(values[0], 0);
    else if (key == "backward_s")
      p.backward_s = r.number(values[0], 0);
    else if (key == "other_s")
      p.other_s = r.number(values[0], 0);
    else if (key == "overlap")
      p.overlap = r.whole(values[0], 0) != 0;
    else if (key == "steps")
      p.steps = static_cast<int>(r.whole(values[0], 1));
    else if (key == "collective") {
      if (values[0] == "ring")
        p.collective = Collective::kRing;
      else if (values[0] == "mpi")
        p.collective = Collective::kMpi;
      else
        r.fail("ring or mpi, got " + values[0]);
    } else if (key == "buckets") {
      for (const auto& v : values) p.bucket_bytes.push_back(r.whole(v, 4));
      have_buckets = true;
    } else if (key == "ready") {
      for (const auto& v : values) p.ready.push_back(r.number(v, 0));
    } else if (key == "compute_samples") {
      for (const auto& v : values) p.compute_samples.push_back(r.number(v, 0));
    } else {
      r.fail(
          "unknown key (forward_s, backward_s, other_s, buckets, ready, overlap, collective, "
          "steps, compute_samples)");
    }
  }
  if (!have_buckets) throw std::runtime_error(source + ": no buckets line");
  if (!p.ready.empty() && p.ready.size() != p.bucket_bytes.size()) {
    throw std::runtime_error(source + ": ready has " + std::to_string(p.ready.size()) +
                             " values for " + std::to_string(p.bucket_bytes.size()) + " buckets");
  }
  if (p.overlap && p.collective != Collective::kRing) {
    throw std::runtime_error(source + ": overlap needs collective ring (MPI_Allreduce blocks)");
  }
  return p;
}

std::vector<int64_t> split_into_buckets(int64_t grad_bytes, int64_t bucket_bytes) {
  const int64_t elements = grad_bytes / 4;
  const int64_t per = bucket_bytes <= 0 ? elements : std::max<int64_t>(1, bucket_bytes / 4);
  std::vector<int64_t> out;
  for (int64_t left = elements; left > 0; left -= per) out.push_back(4 * std::min(per, left));
  return out;
}

double ready_fraction(const StepProfile& p, std::size_t i) {
  if (!p.ready.empty()) return p.ready[i];
  const auto first = p.bucket_bytes.begin();
  const double done = std::accumulate(first, first + static_cast<std::ptrdiff_t>(i) + 1, 0.0);
  return done / std::accumulate(first, p.bucket_bytes.end(), 0.0);
}

double compute_factor(const StepProfile& p, int rank, int step) {
  if (p.compute_samples.empty()) return 1;
  const double mean = std::accumulate(p.compute_samples.begin(), p.compute_samples.end(), 0.0) /
                      static_cast<double>(p.compute_samples.size());
  if (!(mean > 0)) return 1;
  // splitmix64 of (rank, step): the same draws on every run.
  uint64_t x = (static_cast<uint64_t>(rank) << 32) ^ static_cast<uint64_t>(step);
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return p.compute_samples[x % p.compute_samples.size()] / mean;
}

}  // namespace trainscope::simgrid
