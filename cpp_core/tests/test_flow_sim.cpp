// The flow model's parts and invariants: GroupClocks against per-flow
// integration of rates, LasLink against a direct least-attained-service
// simulation, and FlowSim's conservation, determinism and memory on every
// topology and discipline.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <vector>

#include "check.hpp"
#include "dcgym/flow/clocks.hpp"
#include "dcgym/flow/flow_sim.hpp"
#include "dcgym/flow/las.hpp"
#include "dcgym/flow/topology.hpp"
#include "dcgym/kernel/rng.hpp"

using namespace dcgym::flow;
using dcgym::kernel::Rng;

namespace {

// Random joins, leaves, rate and mark changes; a mirror integrates every
// flow's bytes directly and finds the next mark by scanning.
void TestClocksAgainstIntegration() {
  Rng rng(3, 0);
  GroupClocks clocks;
  const uint32_t groups = 6, flows = 40;
  clocks.Grow(groups, flows);
  std::vector<double> rate(groups, 0.0), sent(flows, 0.0), mark(flows, 0.0);
  std::vector<int> group(flows, -1);
  double now = 0;
  int wrong_sent = 0, wrong_next = 0, wrong_total = 0;
  for (int op = 0; op < 20000; ++op) {
    const double dt = rng.Uniform() * 0.01;
    // Never step past the next mark: the model handles marks as events.
    clocks.Flush(now);
    const double limit = clocks.NextTime();
    const double t = std::min(now + dt, limit);
    for (uint32_t f = 0; f < flows; ++f)
      if (group[f] >= 0) sent[f] += rate[group[f]] * (t - now);
    now = t;
    const uint32_t f = rng.Below(flows);
    const uint32_t g = rng.Below(groups);
    switch (rng.Below(4)) {
      case 0:
        if (group[f] < 0) {
          mark[f] = sent[f] + 0.1 + rng.Uniform();
          clocks.Join(g, f, sent[f], mark[f], now);
          group[f] = static_cast<int>(g);
        }
        break;
      case 1:
        if (group[f] >= 0) {
          const double s = clocks.Leave(f, now);
          wrong_sent += std::fabs(s - sent[f]) > 1e-9;
          sent[f] = s;
          group[f] = -1;
        }
        break;
      case 2:
        rate[g] = rng.Below(4) == 0 ? 0.0 : rng.Uniform() * 10;
        clocks.SetRate(g, rate[g], now);
        break;
      default:
        if (group[f] >= 0) {
          mark[f] = sent[f] + 0.05 + rng.Uniform();
          clocks.SetMark(f, mark[f], now);
        }
    }
    double next = std::numeric_limits<double>::infinity(), total = 0;
    for (uint32_t k = 0; k < flows; ++k) {
      if (group[k] < 0) continue;
      total += rate[group[k]];
      wrong_sent += std::fabs(clocks.Sent(k, now) - sent[k]) > 1e-9;
      if (rate[group[k]] > 0) next = std::min(next, now + (mark[k] - sent[k]) / rate[group[k]]);
    }
    clocks.Flush(now);
    wrong_next += std::isinf(next) ? !std::isinf(clocks.NextTime()) : std::fabs(clocks.NextTime() - next) > 1e-9;
    wrong_total += std::fabs(clocks.TotalRate() - total) > 1e-9;
  }
  CHECK_EQ(wrong_sent, 0);
  CHECK_EQ(wrong_next, 0);
  CHECK_EQ(wrong_total, 0);
}

// LAS by brute force: at each step the flows with the least attained
// service share the link; advance to the next completion or catch-up.
void TestLasAgainstDirectSimulation() {
  Rng rng(5, 0);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> arrival, size;
    double t = 0;
    for (int i = 0; i < 40; ++i) {
      t += rng.Exp1() * 0.8;
      arrival.push_back(t);
      size.push_back(0.1 + rng.Exp1());
    }
    // Engine.
    LasLink las(1.0);
    std::vector<double> done_engine(size.size(), -1);
    size_t next = 0;
    double now = 0;
    while (next < arrival.size() || las.Count() > 0) {
      const double te = las.NextTime();
      if (next < arrival.size() && arrival[next] <= te) {
        now = arrival[next];
        las.Add(static_cast<uint32_t>(next), size[next], now);
        ++next;
      } else {
        now = te;
        const uint32_t f = las.Step(now);
        if (f != LasLink::kNone) done_engine[f] = now;
      }
    }
    // Direct.
    std::vector<double> attained(size.size(), 0), done(size.size(), -1);
    std::vector<size_t> in;
    next = 0;
    now = 0;
    while (next < arrival.size() || !in.empty()) {
      double least = 1e300;
      for (size_t i : in) least = std::min(least, attained[i]);
      std::vector<size_t> served;
      double second = 1e300;
      for (size_t i : in) {
        if (attained[i] <= least + 1e-12)
          served.push_back(i);
        else
          second = std::min(second, attained[i]);
      }
      double dt = 1e300;
      if (!served.empty()) {
        const double r = 1.0 / served.size();
        for (size_t i : served) dt = std::min(dt, (size[i] - attained[i]) / r);
        dt = std::min(dt, (second - least) / r);
      }
      if (next < arrival.size()) dt = std::min(dt, arrival[next] - now);
      for (size_t i : served) attained[i] += dt / served.size();
      now += dt;
      for (size_t k = 0; k < in.size();)
        if (attained[in[k]] >= size[in[k]] - 1e-12) {
          done[in[k]] = now;
          in.erase(in.begin() + static_cast<long>(k));
        } else {
          ++k;
        }
      if (next < arrival.size() && arrival[next] <= now + 1e-15) in.push_back(next++);
    }
    int wrong = 0;
    for (size_t i = 0; i < size.size(); ++i) wrong += std::fabs(done[i] - done_engine[i]) > 1e-9;
    CHECK_EQ(wrong, 0);
  }
}

FlowConfig Config(TopologyKind kind, Discipline d, uint64_t seed) {
  FlowConfig c;
  c.topology.kind = kind;
  c.topology.hosts = kind == TopologyKind::kSingleLink ? 3 : 12;
  c.topology.planes = 3;
  c.topology.racks = 3;
  c.topology.hosts_per_rack = 4;
  c.topology.spines = 2;
  c.topology.oversubscription = 2;
  c.discipline = d;
  c.levels = d == Discipline::kMlfq || d == Discipline::kQsjf ? 4 : 1;
  if (c.levels == 4) c.thresholds = {3e4, 3e5, 3e6};
  // Each link stable: 0.8 on one link, 0.4 per port of 3 planes, 0.5 elsewhere.
  c.groups[0].load = kind == TopologyKind::kSingleLink ? 0.8 : kind == TopologyKind::kPlanes ? 1.2 : 0.5;
  c.seed = seed;
  return c;
}

void TestModelInvariants() {
  const TopologyKind kinds[] = {TopologyKind::kSingleLink, TopologyKind::kBigSwitch, TopologyKind::kPlanes,
                                TopologyKind::kLeafSpine};
  const Discipline disciplines[] = {Discipline::kFair, Discipline::kQsjf, Discipline::kMlfq, Discipline::kSrpt,
                                    Discipline::kLas};
  for (TopologyKind kind : kinds) {
    for (Discipline d : disciplines) {
      if (d == Discipline::kLas && kind != TopologyKind::kSingleLink) continue;
      FlowSim a(Config(kind, d, 9)), b(Config(kind, d, 9));
      int broken = 0;
      for (int step = 0; step < 40; ++step) {
        a.RunFlows(500);
        const Counters& k = a.Count();
        broken += k.arrived != k.completed + a.NumActive();
        broken += !(a.Unfinished() >= 0);
      }
      b.RunFlows(20000);
      CHECK_EQ(broken, 0);
      CHECK(a.Count().completed > 15000);
      // Same seed, same bits, whether run in one call or in forty.
      CHECK_EQ(a.Now(), b.Now());
      CHECK_EQ(a.Histograms().Fct(kAllFlows).Sum(), b.Histograms().Fct(kAllFlows).Sum());
      CHECK_EQ(a.Count().events, b.Count().events);
      // Memory: flow records are reused, so their number is the peak in flight, not the flows seen.
      CHECK(a.Slots() < 2000);
    }
  }
}

// What the simulator refuses itself (the binding converts, it does not check), and the link count Validate
// bounds, computed without building the topology, equal to the built one's.
void TestRunPreconditionsAndLinks() {
  FlowSim a(Config(TopologyKind::kBigSwitch, Discipline::kFair, 1)),
      b(Config(TopologyKind::kBigSwitch, Discipline::kFair, 2));
  a.RunUntil(0.01);
  CHECK_THROWS(a.RunUntil(0.005), std::invalid_argument);
  CHECK_THROWS(a.RunUntil(std::numeric_limits<double>::infinity()), std::invalid_argument);
  CHECK_THROWS(a.RunFor(-1.0), std::invalid_argument);
  CHECK_THROWS(a.StepInterval(0.0), std::invalid_argument);
  CHECK_THROWS(StepBatch({&a, &b, &a}, 0.01), std::invalid_argument);
  CHECK_THROWS(StepBatch({&a, nullptr}, 0.01), std::invalid_argument);
  CHECK_THROWS(StepBatch({&a, &b}, 0.01, 0), std::invalid_argument);
  CHECK_EQ(a.Now(), 0.01);  // nothing refused ran
  StepBatch({&a, &b}, 0.01, 2);
  CHECK_EQ(a.Now(), 0.02);
  for (TopologyKind kind :
       {TopologyKind::kSingleLink, TopologyKind::kBigSwitch, TopologyKind::kPlanes, TopologyKind::kLeafSpine}) {
    const FlowConfig c = Config(kind, Discipline::kFair, 1);
    CHECK_EQ(NumLinks(c.topology), uint64_t{Topology(c.topology).NumLinks()});
  }
  FlowConfig big = Config(TopologyKind::kPlanes, Discipline::kFair, 1);
  big.topology.hosts = kMaxHosts;  // 2 x 65536 x 3 links: more than kMaxLinks
  CHECK_THROWS(big.Validate(), std::invalid_argument);
  FlowConfig fast = Config(TopologyKind::kBigSwitch, Discipline::kFair, 1);
  fast.topology.link_gbps = kMaxLinkGbps;
  fast.Validate();
  fast.topology.link_gbps = std::nextafter(kMaxLinkGbps, 2 * kMaxLinkGbps);
  CHECK_THROWS(fast.Validate(), std::invalid_argument);
}

}  // namespace

int main() {
  TestRunPreconditionsAndLinks();
  TestClocksAgainstIntegration();
  TestLasAgainstDirectSimulation();
  TestModelInvariants();
  return dcgym::check::Report("flow_sim");
}
