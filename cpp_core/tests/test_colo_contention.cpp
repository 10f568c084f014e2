// The colo model's resources: miss-rate curves, the core layout with its
// hyperthread neighbours, conservation, and the memory-bandwidth fixed point.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "check.hpp"
#include "dcgym/colo/allocation.hpp"
#include "dcgym/colo/colo_sim.hpp"
#include "dcgym/colo/contention.hpp"

using namespace dcgym::colo;

namespace {

ServiceConfig Service(const char* name, double service_ms, double floor, double pow, double rps) {
  ServiceConfig s;
  s.params.name = name;
  s.params.service_ms = service_ms;
  s.params.ipc = 0.8;
  s.params.mrc.floor = floor;
  s.params.mrc.pow = pow;
  s.params.ctx_overhead = 0;
  s.workload.rps = rps;
  return s;
}

void MissRateCurveShape() {
  MissRateCurve m;
  m.floor = 2;
  m.pow = 8;
  m.alpha = 0.5;
  m.hot = 10;
  m.hot_mb = 20;
  m.hot_width_mb = 2;
  CHECK_NEAR(m.Mpki(4), 2 + 8 / 2.0 + 10, 1e-12);              // below the ramp: the whole hot term
  CHECK_NEAR(m.Mpki(19), 2 + 8 / std::sqrt(19.0) + 5, 1e-12);  // half-way up the ramp
  CHECK_NEAR(m.Mpki(25), 2 + 8 / 5.0, 1e-12);                  // above the hot set
  CHECK_NEAR(m.Mpki(0), m.Mpki(0.25), 1e-12);                  // no divergence at zero
}

void LayoutFindsNeighbours() {
  Platform p;  // 36 logical, 18 physical
  std::vector<Allocation> a(3);
  a[0].cores = 3;  // logical 0-2: pair 0 own, pair 1 shared with service 1
  a[1].cores = 4;  // logical 3-6: pair 1 (with 0), pairs 2 own, pair 3 shared with service 2
  a[2].cores = 2;  // logical 7-8: pair 3 (with 1), pair 4 shared with idle
  std::vector<ShareGroup> groups(1);
  const Layout l = BuildLayout(p, a, groups, {1, 1, 1});
  CHECK_EQ(l.services[0].own_pairs, 1u);
  CHECK_EQ(l.services[0].partials, 1u);
  CHECK(l.services[0].neighbour[0].kind == Neighbour::Kind::kService && l.services[0].neighbour[0].id == 1);
  CHECK_EQ(l.services[1].own_pairs, 1u);
  CHECK_EQ(l.services[1].partials, 2u);
  CHECK(l.services[1].neighbour[1].kind == Neighbour::Kind::kService && l.services[1].neighbour[1].id == 2);
  CHECK_EQ(l.services[2].partials, 2u);
  CHECK(l.services[2].neighbour[1].kind == Neighbour::Kind::kIdle);
  CHECK_EQ(l.used_cores, 9u);
  // A group's pool comes first.
  groups[0] = ShareGroup{3, 2, 0b001};
  const Layout g = BuildLayout(p, a, groups, {1, 1, 1});
  CHECK_EQ(g.services[0].start, 3u);
  CHECK(g.services[0].neighbour[0].kind == Neighbour::Kind::kGroup);
}

void ConservationIsChecked() {
  Platform p;
  std::vector<Allocation> a(2);
  a[0].cores = 20;
  a[1].cores = 16;
  a[0].ways = a[1].ways = 10;
  std::vector<ShareGroup> groups(1);
  CheckConservation(p, a, groups);  // exactly full: fine
  a[1].cores = 17;
  CHECK_THROWS(CheckConservation(p, a, groups), std::invalid_argument);
  a[1].cores = 16;
  groups[0] = ShareGroup{0, 1, 1};
  CHECK_THROWS(CheckConservation(p, a, groups), std::invalid_argument);  // 21 ways
}

void BandwidthFixedPoint() {
  // A memory-bound service alone: at the solution the latency is the M/D/1
  // latency of the traffic it produces at that latency.
  ColoConfig c;
  c.noise = NoiseConfig{0, 0};
  c.services.push_back(Service("stream", 1.0, 30, 0, 20000));
  c.services[0].params.bytes_per_miss = 256;
  c.services[0].params.ipc = 0.3;
  ColoSim sim(c);
  sim.SetAllocation(0, Allocation{36, 20, 1.0, c.platform.freq_max_mhz, -1});
  sim.Step(50);
  const Operating& op = sim.Operation()[0];
  const double traffic = op.throughput * op.bytes_per_req;
  const double u = traffic / (c.platform.mem_bw_gbs * 1e9);
  CHECK(u > 0.3 && u < 1);
  CHECK_NEAR(sim.MemLatencyNs(), c.platform.mem_latency_ns * (1 + u / (2 * (1 - u))), 1e-6 * sim.MemLatencyNs());
  CHECK_NEAR(sim.MemUtilization(), u, 1e-12);
  // Demand beyond the peak with enough memory-level parallelism to reach
  // it: the latency rises until the traffic fits under the peak.
  c.services[0].params.mlp = 10;
  c.services[0].workload.rps = 2e6;
  ColoSim heavy(c);
  heavy.SetAllocation(0, Allocation{36, 20, 1.0, c.platform.freq_max_mhz, -1});
  heavy.Step(50);
  CHECK(heavy.MemUtilization() < 1.0);
  CHECK(heavy.MemUtilization() > 0.85);
}

void MbaCapsTraffic() {
  ColoConfig c;
  c.platform.mba = true;
  c.noise = NoiseConfig{0, 0};
  c.services.push_back(Service("stream", 1.0, 30, 0, 1e6));
  c.services[0].params.bytes_per_miss = 256;
  c.services[0].params.ipc = 0.3;
  ColoSim sim(c);
  sim.SetAllocation(0, Allocation{36, 20, 0.2, c.platform.freq_max_mhz, -1});
  sim.Step(20);
  CHECK(sim.MemUtilization() <= 0.2 + 1e-12);
  CHECK(sim.MemUtilization() > 0.19);
}

void SmtSlowsASharedCore() {
  // Two services, 1 logical core each, on the same physical core: both busy
  // hyperthreads run at smt_gain / 2 at most, less with the penalty.
  ColoConfig c;
  c.noise = NoiseConfig{0, 0};
  c.services.push_back(Service("a", 1.0, 0, 0, 10000));  // saturates its core
  c.services.push_back(Service("b", 1.0, 0, 0, 10000));
  c.services[0].workload.threads = c.services[1].workload.threads = 1;
  ColoSim sim(c);
  const double f = c.platform.freq_max_mhz;
  sim.SetAllocation(0, Allocation{1, 10, 1.0, f, -1});
  sim.SetAllocation(1, Allocation{1, 10, 1.0, f, -1});
  sim.Step(5);
  // Each is saturated: capacity = speed / t = (1 - loss x busy_other) / 1 ms.
  const double loss = 1 - c.platform.smt_gain / 2;
  CHECK_NEAR(sim.Operation()[0].capacity, (1 - loss) * 1000, 1e-6);
  // Its neighbour idle (no load, no backlog): full speed.
  c.services[1].workload.rps = 0;
  ColoSim alone(c);
  alone.SetAllocation(0, Allocation{1, 10, 1.0, f, -1});
  alone.SetAllocation(1, Allocation{1, 10, 1.0, f, -1});
  alone.Step(5);
  CHECK_NEAR(alone.Operation()[0].capacity, 1000, 1e-6);
}

}  // namespace

int main() {
  MissRateCurveShape();
  LayoutFindsNeighbours();
  ConservationIsChecked();
  BandwidthFixedPoint();
  MbaCapsTraffic();
  SmtSlowsASharedCore();
  return dcgym::check::Report("colo_contention");
}
