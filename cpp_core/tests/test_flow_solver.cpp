// RateSolver (strict priority + max-min + caps, incremental) against hand
// computed allocations, against a plain O(n^2) progressive filling written
// here from the definition, and against its own full-recompute mode, under
// long random sequences of changes. Also checks that the changes it reports
// (Moved, Reshared) are enough for a caller to track every rate, and that the
// incremental mode visits only the components an event touches.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "check.hpp"
#include "dcgym/flow/solver.hpp"
#include "dcgym/kernel/rng.hpp"

using dcgym::flow::kMaxHops;
using dcgym::flow::kNoCap;
using dcgym::flow::Path;
using dcgym::flow::RateSolver;
using dcgym::kernel::Rng;

namespace {

Path MakePath(std::initializer_list<uint32_t> links) {
  Path p;
  for (uint32_t l : links) p.link[p.hops++] = l;
  return p;
}

struct RefFlow {
  Path path;
  uint32_t level;
  double cap;
};

// Strict priority, max-min per level by progressive filling: the definition,
// with no incremental state and no heap.
std::map<uint32_t, double> Reference(const std::vector<double>& capacity, uint32_t levels,
                                     const std::map<uint32_t, RefFlow>& flows) {
  std::map<uint32_t, double> rate;
  std::vector<double> residual = capacity;
  for (uint32_t level = 0; level < levels; ++level) {
    std::set<uint32_t> unfrozen;
    for (const auto& [f, s] : flows)
      if (s.level == level) unfrozen.insert(f);
    std::vector<double> rem = residual;
    std::vector<double> used(capacity.size(), 0.0);
    while (!unfrozen.empty()) {
      std::vector<int> n(capacity.size(), 0);
      for (uint32_t f : unfrozen)
        for (uint32_t h = 0; h < flows.at(f).path.hops; ++h) ++n[flows.at(f).path.link[h]];
      double best = kNoCap;
      int best_link = -1;
      for (size_t l = 0; l < capacity.size(); ++l)
        if (n[l] > 0 && rem[l] / n[l] < best) best = rem[l] / n[l], best_link = static_cast<int>(l);
      double best_cap = kNoCap;
      uint32_t cap_flow = 0;
      for (uint32_t f : unfrozen)
        if (flows.at(f).cap < best_cap) best_cap = flows.at(f).cap, cap_flow = f;
      std::vector<uint32_t> freeze;
      double r;
      if (best_cap < best) {
        freeze.push_back(cap_flow);
        r = best_cap;
      } else {
        r = std::max(0.0, best);
        for (uint32_t f : unfrozen) {
          const Path& p = flows.at(f).path;
          for (uint32_t h = 0; h < p.hops; ++h)
            if (static_cast<int>(p.link[h]) == best_link) freeze.push_back(f);
        }
      }
      for (uint32_t f : freeze) {
        rate[f] = r;
        unfrozen.erase(f);
        const Path& p = flows.at(f).path;
        for (uint32_t h = 0; h < p.hops; ++h) rem[p.link[h]] -= r, used[p.link[h]] += r;
      }
    }
    for (size_t l = 0; l < capacity.size(); ++l) residual[l] = std::max(0.0, residual[l] - used[l]);
  }
  return rate;
}

void TestHandComputed() {
  {  // one link, three flows, then a lower level, then the higher level leaves
    RateSolver s({10.0}, 2);
    for (uint32_t f = 0; f < 3; ++f) s.Add(f, MakePath({0}), 0);
    s.Add(3, MakePath({0}), 1);
    s.Solve();
    CHECK_NEAR(s.Rate(0), 10.0 / 3, 1e-12);
    CHECK_EQ(s.Rate(3), 0.0);
    CHECK_NEAR(s.LinkRate(0), 10.0, 1e-12);
    for (uint32_t f = 0; f < 3; ++f) s.Remove(f);
    s.Solve();
    CHECK_EQ(s.Rate(3), 10.0);
    CHECK_EQ(s.FlowsAt(0), 0u);
    CHECK_EQ(s.FlowsAt(1), 1u);
  }
  {  // Bertsekas-Gallager style: link A (10) and B (4); f0 on A+B, f1 on A, f2 on B
    RateSolver s({10.0, 4.0}, 1);
    s.Add(0, MakePath({0, 1}), 0);
    s.Add(1, MakePath({0}), 0);
    s.Add(2, MakePath({1}), 0);
    s.Solve();
    CHECK_EQ(s.Rate(0), 2.0);
    CHECK_EQ(s.Rate(2), 2.0);
    CHECK_EQ(s.Rate(1), 8.0);
    CHECK_EQ(s.Bottleneck(0), 1u);
    CHECK_EQ(s.Bottleneck(1), 0u);
  }
  {  // a cap below the fair share frees capacity for the others
    RateSolver s({10.0}, 1);
    s.Add(0, MakePath({0}), 0, 1.0);
    s.Add(1, MakePath({0}), 0);
    s.Solve();
    CHECK_EQ(s.Rate(0), 1.0);
    CHECK_EQ(s.Rate(1), 9.0);
    CHECK_EQ(s.Bottleneck(0), RateSolver::kCapLimited);
    s.SetCap(0, kNoCap);
    s.Solve();
    CHECK_EQ(s.Rate(0), 5.0);
  }
  {  // a capped high-priority flow leaves the rest to the level below
    RateSolver s({10.0}, 2);
    s.Add(0, MakePath({0}), 0, 3.0);
    s.Add(1, MakePath({0}), 1);
    s.Add(2, MakePath({0}), 1);
    s.Solve();
    CHECK_EQ(s.Rate(0), 3.0);
    CHECK_EQ(s.Rate(1), 3.5);
    CHECK_EQ(s.Residual(1, 0), 7.0);
    s.SetLevel(2, 0);  // promoted: shares level 0 with the capped flow
    s.Solve();
    CHECK_EQ(s.Rate(2), 7.0);
    CHECK_EQ(s.Rate(1), 0.0);
    s.SetCapacity(0, 20.0);
    s.Solve();
    CHECK_EQ(s.Rate(2), 17.0);
    CHECK_EQ(s.Rate(1), 0.0);
  }
  {  // a path change moves a flow to another component
    RateSolver s({10.0, 10.0, 10.0}, 1);
    s.Add(0, MakePath({0, 1}), 0);
    s.Add(1, MakePath({1}), 0);
    s.Solve();
    CHECK_EQ(s.Rate(0), 5.0);
    s.SetPath(0, MakePath({0, 2}));
    s.Solve();
    CHECK_EQ(s.Rate(0), 10.0);
    CHECK_EQ(s.Rate(1), 10.0);
  }
}

void TestBadInput() {
  CHECK_THROWS(RateSolver({}, 1), std::invalid_argument);
  CHECK_THROWS(RateSolver({1.0}, 0), std::invalid_argument);
  CHECK_THROWS(RateSolver({1.0}, 9), std::invalid_argument);
  CHECK_THROWS(RateSolver({-1.0}, 1), std::invalid_argument);
  RateSolver s({1.0, 1.0}, 2);
  CHECK_THROWS(s.Add(0, MakePath({0}), 2), std::invalid_argument);
  CHECK_THROWS(s.Add(0, MakePath({5}), 0), std::invalid_argument);
  CHECK_THROWS(s.Add(0, MakePath({1, 1}), 0), std::invalid_argument);
  CHECK_THROWS(s.Add(0, Path{}, 0), std::invalid_argument);
  CHECK_THROWS(s.Add(0, MakePath({0}), 0, -1.0), std::invalid_argument);
  CHECK_THROWS(s.Add(0, MakePath({0}), 0, std::nan("")), std::invalid_argument);
  CHECK_THROWS(s.Remove(3), std::invalid_argument);
  CHECK_THROWS(s.SetLevel(0, 1), std::invalid_argument);
  s.Add(0, MakePath({0}), 0);
  CHECK_THROWS(s.Add(0, MakePath({0}), 0), std::invalid_argument);
  CHECK_THROWS(s.SetCapacity(2, 1.0), std::invalid_argument);
  CHECK_THROWS(s.SetCapacity(0, kNoCap), std::invalid_argument);
}

// A caller that tracks rates only from what Solve() reports.
struct Mirror {
  std::map<uint32_t, uint32_t> bottleneck;
  std::map<uint32_t, double> share;  // by cell
  void Apply(const RateSolver& s) {
    for (uint32_t cell : s.Reshared()) share[cell] = s.Share(cell / s.NumLinks(), cell % s.NumLinks());
    for (uint32_t f : s.Moved()) bottleneck[f] = s.Bottleneck(f);
  }
  double Rate(const RateSolver& s, uint32_t f) const {
    const uint32_t b = bottleneck.at(f);
    if (b == RateSolver::kCapLimited) return s.Cap(f);
    const auto it = share.find(s.Level(f) * s.NumLinks() + b);
    return it == share.end() ? 0.0 : it->second;
  }
};

void TestRandomAgainstReference() {
  Rng rng(7, 0);
  int wrong_ref = 0, wrong_full = 0, wrong_mirror = 0, wrong_link = 0, checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const uint32_t links = 1 + rng.Below(7), levels = 1 + rng.Below(4);
    std::vector<double> capacity(links);
    for (auto& c : capacity) c = rng.Below(4) == 0 ? 0.0 + rng.Below(2) : 1.0 + rng.Below(20);
    RateSolver inc(capacity, levels, true), full(capacity, levels, false);
    std::map<uint32_t, RefFlow> flows;
    Mirror mirror;
    const auto random_path = [&] {
      Path p;
      const uint32_t hops = 1 + rng.Below(std::min<uint32_t>(links, kMaxHops));
      while (p.hops < hops) {
        const uint32_t l = rng.Below(links);
        bool seen = false;
        for (uint32_t h = 0; h < p.hops; ++h) seen |= p.link[h] == l;
        if (!seen) p.link[p.hops++] = l;
      }
      return p;
    };
    const auto random_cap = [&] { return rng.Below(3) == 0 ? 0.5 + rng.Below(8) : kNoCap; };
    for (int op = 0; op < 400; ++op) {
      const uint32_t kind = rng.Below(10);
      const uint32_t f = rng.Below(24);
      const bool active = flows.count(f) > 0;
      if (!active && kind < 8) {
        RefFlow r{random_path(), rng.Below(levels), random_cap()};
        flows[f] = r;
        inc.Add(f, r.path, r.level, r.cap);
        full.Add(f, r.path, r.level, r.cap);
      } else if (active && kind < 3) {
        flows.erase(f);
        mirror.bottleneck.erase(f);
        inc.Remove(f);
        full.Remove(f);
      } else if (active && kind < 5) {
        flows[f].level = rng.Below(levels);
        inc.SetLevel(f, flows[f].level);
        full.SetLevel(f, flows[f].level);
      } else if (active && kind < 7) {
        flows[f].cap = random_cap();
        inc.SetCap(f, flows[f].cap);
        full.SetCap(f, flows[f].cap);
      } else if (active && kind < 8) {
        flows[f].path = random_path();
        inc.SetPath(f, flows[f].path);
        full.SetPath(f, flows[f].path);
      } else {
        const uint32_t l = rng.Below(links);
        capacity[l] = 1.0 + rng.Below(20);
        inc.SetCapacity(l, capacity[l]);
        full.SetCapacity(l, capacity[l]);
      }
      if (rng.Below(3) == 0) continue;  // several changes before one Solve
      inc.Solve();
      full.Solve();
      mirror.Apply(inc);
      const auto ref = Reference(capacity, levels, flows);
      std::vector<double> link_total(links, 0.0);
      for (const auto& [g, r] : ref) {
        ++checked;
        wrong_ref += std::fabs(inc.Rate(g) - r) > 1e-9;
        wrong_full += std::fabs(inc.Rate(g) - full.Rate(g)) > 1e-9;
        wrong_mirror += mirror.Rate(inc, g) != inc.Rate(g);
        for (uint32_t h = 0; h < flows[g].path.hops; ++h) link_total[flows[g].path.link[h]] += inc.Rate(g);
      }
      for (uint32_t l = 0; l < links; ++l) wrong_link += std::fabs(inc.LinkRate(l) - link_total[l]) > 1e-9;
    }
  }
  CHECK(checked > 20000);
  CHECK_EQ(wrong_ref, 0);
  CHECK_EQ(wrong_full, 0);
  CHECK_EQ(wrong_mirror, 0);
  CHECK_EQ(wrong_link, 0);
}

// Max-min optimality checked directly: every flow is at its cap or has a
// saturated link where no flow of its level is faster.
void TestMaxMinProperty() {
  Rng rng(11, 0);
  int violations = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t links = 2 + rng.Below(10);
    std::vector<double> capacity(links);
    for (auto& c : capacity) c = 1.0 + rng.Below(10);
    RateSolver s(capacity, 1);
    std::vector<Path> paths;
    for (uint32_t f = 0; f < 30; ++f) {
      Path p;
      p.link[p.hops++] = rng.Below(links);
      const uint32_t other = rng.Below(links);
      if (other != p.link[0]) p.link[p.hops++] = other;
      paths.push_back(p);
      s.Add(f, p, 0, rng.Below(5) == 0 ? 0.25 * (1 + rng.Below(8)) : kNoCap);
    }
    s.Solve();
    std::vector<double> load(links, 0.0), fastest(links, 0.0);
    for (uint32_t f = 0; f < 30; ++f)
      for (uint32_t h = 0; h < paths[f].hops; ++h) {
        load[paths[f].link[h]] += s.Rate(f);
        fastest[paths[f].link[h]] = std::max(fastest[paths[f].link[h]], s.Rate(f));
      }
    for (uint32_t l = 0; l < links; ++l) violations += load[l] > capacity[l] * (1 + 1e-12);
    for (uint32_t f = 0; f < 30; ++f) {
      if (s.Rate(f) == s.Cap(f)) continue;
      bool bottlenecked = false;
      for (uint32_t h = 0; h < paths[f].hops; ++h) {
        const uint32_t l = paths[f].link[h];
        bottlenecked |= load[l] >= capacity[l] * (1 - 1e-12) && s.Rate(f) >= fastest[l] * (1 - 1e-12);
      }
      violations += !bottlenecked;
    }
  }
  CHECK_EQ(violations, 0);
}

// 100 disjoint two-link components: an event in one visits that one only.
void TestIncrementalLocality() {
  const uint32_t pairs = 100;
  RateSolver inc(std::vector<double>(2 * pairs, 1.0), 2, true);
  RateSolver full(std::vector<double>(2 * pairs, 1.0), 2, false);
  uint32_t f = 0;
  for (uint32_t c = 0; c < pairs; ++c)
    for (uint32_t k = 0; k < 5; ++k, ++f) {
      inc.Add(f, MakePath({2 * c, 2 * c + 1}), k % 2);
      full.Add(f, MakePath({2 * c, 2 * c + 1}), k % 2);
    }
  inc.Solve();
  full.Solve();
  const uint64_t inc_before = inc.FlowVisits(), full_before = full.FlowVisits();
  inc.Remove(0);
  full.Remove(0);
  inc.Solve();
  full.Solve();
  // Level 0 of component 0 (the 2 flows left); level 1 there still gets nothing, so it is not revisited.
  CHECK_EQ(inc.FlowVisits() - inc_before, uint64_t{2});
  CHECK_EQ(full.FlowVisits() - full_before, uint64_t{499});
  CHECK_EQ(inc.Moved().size(), size_t{0});     // same bottlenecks, a new share
  CHECK_EQ(inc.Reshared().size(), size_t{1});  // (level 0, link 0)
  CHECK_EQ(inc.Rate(2), 0.5);
  // One hop, no caps: a single bottleneck is solved without visiting flows.
  RateSolver one({1.0}, 8);
  for (uint32_t g = 0; g < 1000; ++g) one.Add(g, MakePath({0}), g % 8);
  one.Solve();
  one.Remove(5);
  one.Solve();
  CHECK_EQ(one.FlowVisits(), uint64_t{0});
  CHECK_NEAR(one.Rate(0), 1.0 / 125, 1e-15);
  CHECK_EQ(one.Rate(1), 0.0);
}

}  // namespace

int main() {
  TestHandComputed();
  TestBadInput();
  TestRandomAgainstReference();
  TestMaxMinProperty();
  TestIncrementalLocality();
  return dcgym::check::Report("flow_solver");
}
