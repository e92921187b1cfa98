// trainscope-smpi-step: one rank of a simulated data-parallel job, run by
// SimGrid's smpirun (one rank per simulated host). Each rank replays a
// measured step profile (simgrid/step_profile.h) for `steps` steps: it
// computes the measured forward, backward and other durations (simulated
// compute on a host of 1 Gflop/s, so a second is 1e9 flops; nothing runs on
// the real CPU) and all-reduces the profile's buckets in order:
//
//  * collective ring: reduce-scatter then all-gather around the ring of
//    hosts, 2 (N - 1) messages of a bucket / N each, carried by a helper
//    actor on the rank's host (the engine's communication thread), which
//    takes bucket i once backward has reached it (overlap) or after backward;
//    the messages are SimGrid's own (s4u mailboxes), sized, with no payload,
//    so 64 hosts of 100+ MiB buckets need no memory;
//  * collective mpi: MPI_Allreduce of each bucket after backward, with the
//    algorithm smpirun is given (--cfg=smpi/allreduce:lr is a ring); its
//    algorithms allocate their buffers, so this is for checks at small N.
//
// Rank 0 prints one line per step, read by simgrid/simulation.cpp:
//   trainscope-smpi-step step=K step_s=T comm_s=C
// (C: seconds its bucket all-reduces ran, hidden by backward or not).
//
// Usage: smpirun -np N -platform P.xml -hostfile H trainscope-smpi-step PROFILE
#include <mpi.h>
#include <smpi/smpi.h>

#include <cstdio>
#include <fstream>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "simgrid/step_profile.h"

namespace sg4 = simgrid::s4u;
using trainscope::simgrid::Collective;
using trainscope::simgrid::StepProfile;

namespace {

constexpr double kFlopsPerSecond = 1e9;  // the platform's host speed (simgrid/platform.cpp)

void compute(double seconds) {
  if (seconds > 0) smpi_execute_flops(seconds * kFlopsPerSecond);
}

// Bytes of chunk `c` of a bucket of `bytes` split over `n` hosts.
double chunk_bytes(int64_t bytes, int n, int c) {
  const int64_t base = bytes / n, rest = bytes % n;
  return static_cast<double>(base + (c < rest ? 1 : 0));
}

// The ring all-reduce of one bucket from rank `r`'s side: 2 (n - 1) steps,
// each sending one chunk right and receiving one from the left.
void ring_allreduce(int r, int n, int64_t bytes, sg4::Mailbox* in, sg4::Mailbox* out) {
  static char token;  // the messages carry their size, not data
  for (int s = 0; s < 2 * (n - 1); ++s) {
    const int send = s < n - 1 ? (r - s + 2 * n) % n : (r + 1 - (s - (n - 1)) + 2 * n) % n;
    sg4::CommPtr put = out->put_async(&token, chunk_bytes(bytes, n, send));
    in->get<char>();
    put->wait();
  }
}

// The engine's communication thread: takes each bucket when it is ready,
// reduces them in order, says when each is done.
struct Helper {
  int rank, size;
  const StepProfile* profile;
  sg4::SemaphorePtr ready = sg4::Semaphore::create(0), done = sg4::Semaphore::create(0);
  double comm_s = 0;  // this step's seconds in all-reduces

  void operator()() {
    sg4::Mailbox* in = sg4::Mailbox::by_name("ring-" + std::to_string(rank));
    sg4::Mailbox* out = sg4::Mailbox::by_name("ring-" + std::to_string((rank + 1) % size));
    for (int step = 0; step < profile->steps; ++step) {
      for (int64_t bytes : profile->bucket_bytes) {
        ready->acquire();
        const double start = sg4::Engine::get_clock();
        ring_allreduce(rank, size, bytes, in, out);
        comm_s += sg4::Engine::get_clock() - start;
        done->release();
      }
    }
  }
};

void noop_sum(void*, void*, int*, MPI_Datatype*) {}  // sizes matter, not sums

StepProfile read_profile(const char* path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string(path) + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return trainscope::simgrid::parse_step_profile(text.str(), path);
}

// One step of this rank; returns its seconds in all-reduces.
double run_step(const StepProfile& p, int rank, int step, Helper* helper, float* buffer,
                MPI_Op op) {
  const double f = trainscope::simgrid::compute_factor(p, rank, step);
  compute(p.forward_s * f);
  const std::size_t buckets = p.bucket_bytes.size();
  if (helper) {
    const double before = helper->comm_s;
    double done_fraction = 0;
    for (std::size_t i = 0; i < buckets; ++i) {
      const double at = p.overlap ? trainscope::simgrid::ready_fraction(p, i) : 1.0;
      compute(p.backward_s * f * (at - done_fraction));
      done_fraction = std::max(done_fraction, at);
      helper->ready->release();
    }
    compute(p.backward_s * f * (1.0 - done_fraction));
    for (std::size_t i = 0; i < buckets; ++i) helper->done->acquire();
    compute(p.other_s * f);
    return helper->comm_s - before;
  }
  compute(p.backward_s * f);
  const double start = MPI_Wtime();
  for (int64_t bytes : p.bucket_bytes) {
    MPI_Allreduce(MPI_IN_PLACE, buffer, static_cast<int>(bytes / 4), MPI_FLOAT, op, MPI_COMM_WORLD);
  }
  const double comm = MPI_Wtime() - start;
  compute(p.other_s * f);
  return comm;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  StepProfile p;
  try {
    if (argc != 2) throw std::runtime_error("usage: trainscope-smpi-step PROFILE");
    p = read_profile(argv[1]);
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "trainscope-smpi-step: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
  }
  Helper helper{rank, size, &p};
  sg4::ActorPtr helper_actor;
  float* buffer = nullptr;
  MPI_Op op = MPI_OP_NULL;
  const bool ring = p.collective == Collective::kRing && size > 1;
  if (ring) {
    helper_actor =
        sg4::Actor::create("comm-" + std::to_string(rank), sg4::Host::current(), std::ref(helper));
  } else {
    int64_t largest = 4;
    for (int64_t b : p.bucket_bytes) largest = std::max(largest, b);
    buffer = static_cast<float*>(SMPI_SHARED_MALLOC(static_cast<size_t>(largest)));
    MPI_Op_create(noop_sum, 1, &op);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int step = 0; step < p.steps; ++step) {
    const double start = MPI_Wtime();
    const double comm = run_step(p, rank, step, ring ? &helper : nullptr, buffer, op);
    if (rank == 0) {
      std::printf("trainscope-smpi-step step=%d step_s=%.9f comm_s=%.9f\n", step,
                  MPI_Wtime() - start, comm);
    }
  }
  if (helper_actor) helper_actor->join();
  if (buffer) {
    MPI_Op_free(&op);
    SMPI_SHARED_FREE(buffer);
  }
  MPI_Finalize();
  return 0;
}
