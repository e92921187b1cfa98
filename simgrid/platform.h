// A SimGrid platform for N hosts behind one switch, built from a link the
// project knows (a profile's rate or a measured link's bandwidth and
// latency), for the SMPI step replay (simgrid/simulation.h).
//
// Each host has one link to the switch, full duplex (SimGrid's SPLITDUPLEX:
// each direction has the whole rate, as a NIC's and the virtual cluster's
// shaped veths do) with half the host-to-host latency each way; the switch
// carries every port at its rate (FATPIPE) unless given a total capacity,
// which all flows then share (a software bridge, an oversubscribed switch).
// Hosts compute at 1 Gflop/s, so the replay's compute of t seconds is 1e9 t
// flops (smpi_step.cpp).
//
// Thread-safety: pure functions.
#ifndef TRAINSCOPE_SIMGRID_PLATFORM_H_
#define TRAINSCOPE_SIMGRID_PLATFORM_H_

#include <string>

namespace trainscope::simgrid {

struct Platform {
  int hosts = 2;
  double bandwidth_Bps = 0;  // each direction of each host's link
  double latency_s = 0;      // host to host, one message
  double switch_Bps = 0;     // 0: non-blocking; else all traffic shares this
};

// The platform file (SimGrid 3.32's DTD, version 4.1). Throws Error for
// fewer than 1 host or a bandwidth that is not positive.
std::string platform_xml(const Platform& platform);

// smpirun's hostfile: one rank per host, h0 .. h(N-1).
std::string hostfile_text(int hosts);

}  // namespace trainscope::simgrid

#endif  // TRAINSCOPE_SIMGRID_PLATFORM_H_
