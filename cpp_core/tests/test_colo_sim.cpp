// ColoSim: lifecycle, conservation, the backlog, fresh samples, steady
// state, determinism and refusals.
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "dcgym/colo/colo_sim.hpp"

using namespace dcgym::colo;

namespace {

ServiceConfig Service(const char* name, double service_ms, double rps) {
  ServiceConfig s;
  s.params.name = name;
  s.params.service_ms = service_ms;
  s.params.ipc = 1.0;
  s.params.mrc.floor = 1;
  s.params.mrc.pow = 4;
  s.workload.rps = rps;
  return s;
}

Allocation Alloc(uint32_t cores, uint32_t ways) { return Allocation{cores, ways, 1.0, 2300, -1}; }

bool Throws(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    const bool ok = std::string(e.what()).find(needle) != std::string::npos;
    if (!ok) std::fprintf(stderr, "message without '%s': %s\n", needle.c_str(), e.what());
    return ok;
  }
  return false;
}

void SameSeedSameBits() {
  ColoConfig c;
  c.services = {Service("a", 2.0, 3000), Service("b", 1.0, 8000)};
  auto run = [&](uint64_t seed) {
    ColoSim sim(c);
    sim.Reset(seed);
    sim.SetAllocation(0, Alloc(10, 8));
    sim.SetAllocation(1, Alloc(6, 4));
    std::vector<double> all;
    for (int t = 0; t < 200; ++t) {
      sim.Step(1);
      if (t == 100) sim.SetAllocation(1, Alloc(3, 4));
      all.insert(all.end(), sim.Counters(), sim.Counters() + sim.NumServices() * kNumCounters);
    }
    return all;
  };
  const auto a = run(7), b = run(7), other = run(8);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
  CHECK(a != other);
}

void BacklogDrainsAtCapacityMinusLoad() {
  ColoConfig c;
  c.noise = NoiseConfig{0, 0};
  c.services = {Service("a", 2.0, 5000)};
  ColoSim sim(c);
  sim.SetAllocation(0, Alloc(4, 10));  // far below 5000 rps
  sim.Step(20);
  const double* row = sim.Counters();
  const double built = row[kBacklog];
  CHECK(built > 1000);
  // Rate: it grew by (lambda - K) dt per tick.
  const double k_over = row[kCapacity];
  sim.Step(1);
  CHECK_NEAR(sim.Counters()[kBacklog] - built, (5000 - k_over) * c.dt_s, 1e-6 * built);
  // Enough cores now: it drains by (K - lambda) dt per tick until empty.
  sim.SetAllocation(0, Alloc(36, 10));
  sim.SetRps(0, 3000);
  double before = sim.Counters()[kBacklog];
  sim.Step(1);
  const double k = sim.Counters()[kCapacity];
  CHECK(k > 3000);
  CHECK_NEAR(before - sim.Counters()[kBacklog], (k - 3000) * c.dt_s, 1e-6 * before);
  // Its latency carries the wait behind the backlog.
  CHECK(sim.Counters()[kP99] > 1e3 * sim.Counters()[kBacklog] / k);
  sim.Step(1000);
  CHECK_EQ(sim.Counters()[kBacklog], 0.0);
}

void FreshModeStartsEmpty() {
  ColoConfig c;
  c.noise = NoiseConfig{0, 0};
  c.mode = Mode::kFresh;
  c.services = {Service("a", 2.0, 5000)};
  ColoSim sim(c);
  sim.SetAllocation(0, Alloc(4, 10));
  sim.Step(20);
  CHECK(sim.Counters()[kBacklog] > 0);
  sim.SetAllocation(0, Alloc(36, 10));
  CHECK_EQ(sim.Counters()[kBacklog], sim.Counters()[kBacklog]);  // counters unchanged until the next tick
  sim.Step(1);
  CHECK_EQ(sim.Counters()[kBacklog], 0.0);
}

void LifecycleConservesResources() {
  ColoConfig c;
  c.on_launch = OnLaunch::kIdle;
  c.services = {Service("a", 1.0, 1000), Service("b", 1.0, 1000), Service("c", 1.0, 1000)};
  c.services[1].workload.launch_s = 1.0;
  c.services[1].workload.end_s = 3.0;
  c.services[2].workload.launch_s = 4.0;
  ColoSim sim(c);
  CHECK(sim.PhaseOf(0) == Phase::kRunning);
  CHECK_EQ(sim.Allocations()[0].cores, 36u);  // OSML: a launch takes every idle resource
  sim.SetAllocation(0, Alloc(20, 12));
  for (int t = 0; t < 50; ++t) {
    sim.Step(1);
    uint32_t cores = 0, ways = 0;
    for (const auto& a : sim.Allocations()) {
      cores += a.cores;
      ways += a.ways;
    }
    CHECK_EQ(cores + sim.IdleCores(), 36u);
    CHECK_EQ(ways + sim.IdleWays(), 20u);
  }
  CHECK(sim.PhaseOf(1) == Phase::kEnded);
  CHECK(sim.PhaseOf(2) == Phase::kRunning);
  CHECK_EQ(sim.Allocations()[1].cores, 0u);   // b left: its 16 cores went back
  CHECK_EQ(sim.Allocations()[2].cores, 16u);  // and c, launched after, took them (and 8 ways)
  CHECK_EQ(sim.Allocations()[2].ways, 8u);
  CHECK_EQ(sim.IdleCores(), 0u);
  // Ended or pending services get nothing.
  CHECK(Throws([&] { sim.SetAllocation(1, Alloc(0, 1)); }, "not running (ended)"));

  // A departure frees its resources before a launch at the same instant,
  // whatever the services' order.
  ColoConfig d = c;
  d.services = {Service("late", 1.0, 1000), Service("early", 1.0, 1000)};
  d.services[0].workload.launch_s = 2.0;
  d.services[1].workload.end_s = 2.0;
  ColoSim swap(d);
  CHECK_EQ(swap.Allocations()[1].cores, 36u);
  swap.Step(20);
  CHECK(swap.PhaseOf(1) == Phase::kEnded);
  CHECK_EQ(swap.Allocations()[0].cores, 36u);
  CHECK_EQ(swap.Allocations()[0].ways, 20u);
}

void SteadyStateMatchesTheTick() {
  ColoConfig c;
  c.noise = NoiseConfig{0, 0};
  c.services = {Service("a", 2.0, 3000), Service("b", 0.5, 9000)};
  ColoSim sim(c);
  sim.SetAllocation(0, Alloc(10, 8));
  sim.SetAllocation(1, Alloc(5, 4));
  sim.Step(100);
  const auto ss = sim.SteadyState(sim.Allocations(), {3000, 9000});
  CHECK_NEAR(sim.Counters()[kP99], ss[0] * 1e3, 1e-9 * ss[0] * 1e3);
  CHECK_NEAR(sim.Counters()[kNumCounters + kP99], ss[1] * 1e3, 1e-9 * ss[1] * 1e3);
  // Absent (rps 0) and overloaded services.
  const auto partial = sim.SteadyState({Alloc(1, 8), Alloc(5, 4)}, {3000, 0});
  CHECK(std::isinf(partial[0]));
  CHECK(std::isnan(partial[1]));
}

void RefusesBadInput() {
  ColoConfig c;
  c.services = {Service("a", 1.0, 100), Service("b", 1.0, 100)};
  ColoSim sim(c);
  sim.SetAllocation(0, Alloc(30, 10));
  CHECK(Throws([&] { sim.SetAllocation(1, Alloc(7, 1)); }, "cores: allocations hold 37 cores"));
  CHECK(Throws([&] { sim.SetAllocation(1, Alloc(1, 11)); }, "ways: allocations hold 21 LLC ways"));
  CHECK(Throws([&] { sim.SetAllocation(1, Allocation{1, 1, 1.0, 3000, -1}); }, "freq_mhz: must be in [1200, 2300]"));
  CHECK(Throws([&] { sim.SetAllocation(1, Allocation{1, 1, 0.5, 2300, -1}); },
               "mba: must be 1 on a platform without MBA"));
  CHECK(Throws([&] { sim.SetGroup(0, 1, 2, 2); }, "sharing: share groups need sharing: true"));
  CHECK_EQ(sim.Allocations()[1].cores, 0u);  // nothing changed
  ColoConfig bad = c;
  bad.services[1].params.ipc = 5;  // leaves no cycles for the core at 4.1 MPKI... checked below
  bad.services[1].params.mrc.floor = 40;
  CHECK(Throws([&] { ColoSim s(bad); }, "services[1].ipc: too high for its miss-rate curve"));
  bad = c;
  bad.services[0].workload.end_s = 0;
  CHECK(Throws([&] { ColoSim s(bad); }, "services[0].end_s: must be after launch_s"));
  bad = c;
  bad.platform.logical_cores = 35;
  CHECK(Throws([&] { ColoSim s(bad); }, "platform.logical_cores: must equal physical_cores or twice it"));
  bad = c;
  bad.dt_s = 0;
  CHECK(Throws([&] { ColoSim s(bad); }, "dt_s: must be in (0, 60]"));
  bad = c;
  bad.platform.logical_cores = bad.platform.physical_cores = kMaxCores + 1;
  CHECK(Throws([&] { ColoSim s(bad); }, "platform.logical_cores: must be in [1, 1024]"));
  // The simulator's own checks of indices (the binding converts, it does not check).
  CHECK(Throws([&] { sim.AllocationOf(2); }, "service: must be in [0, 1], got 2"));
  CHECK(Throws([&] { sim.SetRps(2, 10); }, "service: must be in [0, 1], got 2"));
  ColoConfig shared = c;
  shared.sharing = true;
  ColoSim group(shared);
  CHECK(Throws([&] { group.SetGroup(0, std::vector<uint32_t>{0, 2}, 1, 1); }, "members: service 2 does not exist"));
  CHECK(Throws([&] { group.SetGroup(ColoConfig::kMaxGroups, std::vector<uint32_t>{}, 0, 0); }, "group: must be in"));
}

void UnmanagedShareGroup() {
  ColoConfig c;
  c.sharing = true;
  c.noise = NoiseConfig{0, 0};
  c.services = {Service("a", 2.0, 3000), Service("b", 2.0, 3000)};
  ColoSim sim(c);
  sim.SetGroup(0, 0b11, 36, 20);
  CHECK_EQ(sim.IdleCores(), 0u);
  sim.Step(20);
  // Symmetric members split the pool evenly: same capacity, half the ways each.
  const double* a = sim.Counters();
  const double* b = a + kNumCounters;
  CHECK_NEAR(a[kCapacity], b[kCapacity], 1e-9 * a[kCapacity]);
  CHECK_NEAR(a[kWarmCache], 0.5 * 45.0, 1e-9);
  CHECK_EQ(a[kAllocatedCore], 36.0);
  // Dissolving the group frees its pool.
  sim.SetGroup(0, 0, 0, 0);
  CHECK_EQ(sim.IdleCores(), 36u);
}

}  // namespace

int main() {
  SameSeedSameBits();
  BacklogDrainsAtCapacityMinusLoad();
  FreshModeStartsEmpty();
  LifecycleConservesResources();
  SteadyStateMatchesTheTick();
  RefusesBadInput();
  UnmanagedShareGroup();
  return dcgym::check::Report("colo_sim");
}
