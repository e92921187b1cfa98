#include "simgrid/platform.h"

#include <cmath>

#include <fmt/format.h>

#include "base/check.h"

namespace trainscope::simgrid {

std::string platform_xml(const Platform& p) {
  if (p.hosts < 1) throw Error(fmt::format("SimGrid platform: {} hosts", p.hosts));
  if (!(p.bandwidth_Bps > 0) || !std::isfinite(p.bandwidth_Bps)) {
    throw Error(fmt::format("SimGrid platform: link bandwidth {} B/s", p.bandwidth_Bps));
  }
  if (!(p.latency_s >= 0)) throw Error(fmt::format("SimGrid platform: latency {} s", p.latency_s));
  // Bandwidths in B/s and latencies in seconds, written with SimGrid's units.
  const bool shared_switch = p.switch_Bps > 0;
  return fmt::format(
      "<?xml version='1.0'?>\n"
      "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
      "<!-- trainscope: {} hosts, links of {:.6g} B/s each way, {:.6g} s host to host, {} -->\n"
      "<platform version=\"4.1\">\n"
      "  <zone id=\"world\" routing=\"Full\">\n"
      "    <cluster id=\"cluster\" prefix=\"h\" suffix=\"\" radical=\"0-{}\" speed=\"1Gf\"\n"
      "             bw=\"{:.17g}Bps\" lat=\"{:.17g}s\" sharing_policy=\"SPLITDUPLEX\"\n"
      "             bb_bw=\"{:.17g}Bps\" bb_lat=\"0s\" bb_sharing_policy=\"{}\"/>\n"
      "  </zone>\n"
      "</platform>\n",
      p.hosts, p.bandwidth_Bps, p.latency_s,
      shared_switch ? fmt::format("a switch of {:.6g} B/s in all", p.switch_Bps)
                    : std::string("a non-blocking switch"),
      p.hosts - 1, p.bandwidth_Bps, p.latency_s / 2, shared_switch ? p.switch_Bps : p.bandwidth_Bps,
      shared_switch ? "SHARED" : "FATPIPE");
}

std::string hostfile_text(int hosts) {
  std::string out;
  for (int i = 0; i < hosts; ++i) out += fmt::format("h{}\n", i);
  return out;
}

}  // namespace trainscope::simgrid
