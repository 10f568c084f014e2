// Invariants of the multi-LB simulator (LbSim), checked through its
// public API on configs built here, for every LB policy, stage count, split,
// wait order, network delay and load:
//
// - conservation: flows arrived = completed + rejected + in flight, after every arrival;
//   each server: dispatched >= completed + rejected + held;
// - RunFlows(n) brings exactly n arrivals; simulated time never goes back;
// - a server never holds more than backlog + 1 jobs, and (with instantaneous
//   hops, where it can be seen per flow) a flow is rejected exactly when its
//   server holds more than `backlog` jobs;
// - blocked processor sharing: at most workers x mp_level jobs in CPU service,
//   none waiting while a CPU slot is free; CPU utilisation within [0, 1];
// - every job at a server is still counted by its LB;
// - FCT >= the flow's service work (CPU work / speed + IO work) + two hops, with
//   equality for a flow alone; a rejected flow's FCT includes the timeout;
// - determinism: a seed gives identical counters, histograms and observations;
//   another seed differs;
// - weights: a server of weight 0 receives nothing from that LB; the others
//   receive in proportion to their weights.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/lb/lb_sim.hpp"

using dcgym::check::Record;
using dcgym::check::Show;
using dcgym::kernel::Distribution;
using dcgym::lb::Application;
using dcgym::lb::BalancerConfig;
using dcgym::lb::kNumObservationFeatures;
using dcgym::lb::LbConfig;
using dcgym::lb::LbPolicy;
using dcgym::lb::LbSim;
using dcgym::lb::Server;
using dcgym::lb::ServerGroup;
using dcgym::lb::WaitOrder;

namespace {

struct Variant {
  std::string name;
  LbConfig config;
};

// Four servers: three of 2 workers at speed 1 with mp_level 2, one of 4 workers
// at speed 2 with mp_level 1 (CPU capacity 14); two LBs with shares 1 and 2;
// flows of three stages (CPU 1 ms, IO 0.1 ms, CPU on average; IO is one disk per
// server whatever its CPU, so more IO would overload the fast server); backlog 6,
// so flows are rejected at load 0.8 (ECMP overloads the small servers) and many at 1.6.
LbConfig Cluster(LbPolicy policy, double load = 0.8, uint64_t seed = 5) {
  LbConfig c;
  c.groups = {ServerGroup{3, 2, 1.0, 2}, ServerGroup{1, 4, 2.0, 1}};
  c.app.stages = 3;
  c.app.cpu = Distribution::Exp(1000);
  c.app.io = Distribution::Exp(100);
  c.lbs = {BalancerConfig{policy, {}, 1.0}, BalancerConfig{policy, {}, 2.0}};
  c.load = load;
  c.seed = seed;
  c.backlog = 6;
  c.timeout_us = 4e6;
  c.hop_min_us = 10;
  c.hop_max_us = 50;
  c.decision_period_us = 1e4;
  c.warmup_flows = 100;
  return c;
}

struct Policy {
  const char* name;
  LbPolicy kind;
};
const Policy kPolicies[] = {{"ecmp", LbPolicy::kEcmp}, {"wcmp", LbPolicy::kWcmp},     {"lsq", LbPolicy::kLsq},
                            {"sed", LbPolicy::kSed},   {"oracle", LbPolicy::kOracle}, {"weights", LbPolicy::kWeights}};

std::vector<Variant> Matrix() {
  std::vector<Variant> out;
  for (const Policy& p : kPolicies) {
    for (uint32_t stages : {1u, 2u, 3u, 5u}) {
      for (double load : {0.8, 1.6}) {
        LbConfig c = Cluster(p.kind, load);
        c.app.stages = stages;
        if (p.kind == LbPolicy::kWcmp || p.kind == LbPolicy::kSed) c.lbs[1].weights = {1, 0, 2, 3};
        out.push_back({std::string(p.name) + "/stages " + Show(stages) + "/load " + Show(load), c});
      }
    }
    LbConfig c = Cluster(p.kind, 1.2);
    c.app.split = Application::Split::kEqual;
    c.wait_order = WaitOrder::kArrival;
    c.hop_min_us = c.hop_max_us = 0;  // every hop instantaneous
    out.push_back({std::string(p.name) + "/equal split, arrival order, no hops", c});
  }
  LbConfig mixed = Cluster(LbPolicy::kLsq, 1.2);
  mixed.lbs = {BalancerConfig{LbPolicy::kLsq, {}, 1.0}, BalancerConfig{LbPolicy::kOracle, {}, 1.0},
               BalancerConfig{LbPolicy::kEcmp, {}, 0.0}, BalancerConfig{LbPolicy::kSed, {}, 3.0}};
  out.push_back({"mixed policies, one LB with share 0", mixed});
  LbConfig zero = Cluster(LbPolicy::kEcmp, 0.9);
  zero.backlog = 0;  // a server takes a flow only when empty
  out.push_back({"ecmp/backlog 0", zero});
  return out;
}

// Violations of each invariant over a run; each must stay 0.
struct Violations {
  long arrivals = 0, time = 0, conservation = 0, server_books = 0, backlog = 0, slots = 0, idle_slot = 0,
       utilisation = 0, lb_counts = 0;
  std::string first;

  // Counts a violation if `violated`; the message is built only then.
  template <typename Message>
  void Note(long& counter, bool violated, const Message& message) {
    if (!violated) return;
    if (first.empty()) first = message();
    ++counter;
  }
};

// Workers x mp_level of each server, by server id.
std::vector<uint32_t> Slots(const LbConfig& c) {
  std::vector<uint32_t> out;
  for (const auto& g : c.groups)
    for (uint32_t k = 0; k < g.count; ++k) out.push_back(g.workers * g.mp_level);
  return out;
}

void CheckState(const LbSim& sim, Violations& v) {
  const auto& k = sim.Count();
  const uint64_t in_flight = sim.InFlight();
  v.Note(v.conservation, k.arrived != k.completed + k.rejected + in_flight, [&] {
    return "arrived " + Show(k.arrived) + " != completed " + Show(k.completed) + " + rejected " + Show(k.rejected) +
           " + in flight " + Show(in_flight) + " at t = " + Show(sim.Now());
  });
  const uint32_t n = sim.NumServers(), m = sim.NumLbs();
  const std::vector<uint32_t> slots = Slots(sim.Config());
  std::vector<double> obs(size_t{m} * n * kNumObservationFeatures);
  sim.Observe(obs.data());
  for (uint32_t j = 0; j < n; ++j) {
    const Server& s = sim.ServerAt(j);
    const auto& sc = sim.ServerStats()[j];
    const auto where = [&] { return "server " + Show(j) + " at t = " + Show(sim.Now()) + ": "; };
    v.Note(v.server_books, sc.dispatched < sc.completed + sc.rejected + s.Jobs(), [&] {
      return where() + "dispatched " + Show(sc.dispatched) + " < completed + rejected + held " +
             Show(sc.completed + sc.rejected + s.Jobs());
    });
    v.Note(v.backlog, s.Jobs() > sim.Config().backlog + 1,
           [&] { return where() + "holds " + Show(s.Jobs()) + " > backlog + 1"; });
    v.Note(v.slots, s.CpuJobs() > slots[j], [&] { return where() + Show(s.CpuJobs()) + " jobs in CPU service"; });
    v.Note(v.idle_slot, s.Waiting() > 0 && s.CpuJobs() < slots[j],
           [&] { return where() + Show(s.Waiting()) + " wait while a CPU slot is free"; });
    if (sim.Now() > 0) {
      const double u = s.CpuBusyTime(sim.Now()) / sim.Now();
      v.Note(v.utilisation, !(u >= -1e-9 && u <= 1 + 1e-9), [&] { return where() + "CPU utilisation " + Show(u); });
    }
    double counted = 0;  // the LBs' own flows in progress at j (feature 0): every job at j is among them
    for (uint32_t i = 0; i < m; ++i) counted += obs[(size_t{i} * n + j) * kNumObservationFeatures];
    v.Note(v.lb_counts, counted < s.Jobs(),
           [&] { return where() + "LBs count " + Show(counted) + " flows, it holds " + Show(s.Jobs()); });
  }
}

Violations RunChecked(LbSim& sim, uint64_t flows) {
  Violations v;
  double last = sim.Now();
  for (uint64_t f = 0; f < flows; ++f) {
    const uint64_t before = sim.Count().arrived;
    sim.RunFlows(1);
    v.Note(v.arrivals, sim.Count().arrived != before + 1, [] { return std::string("RunFlows(1) != one arrival"); });
    v.Note(v.time, !(sim.Now() >= last), [&] { return "time went back to " + Show(sim.Now()); });
    last = sim.Now();
    CheckState(sim, v);
  }
  return v;
}

void Expect(const std::string& name, const char* invariant, long violations, const std::string& first) {
  Record(violations == 0, __FILE__, __LINE__,
         name + ": " + invariant + " violated " + Show(violations) + " times; first: " + first);
}

// 4000 flows per variant (about 530 ms of simulated time at load 0.8, several
// hundred flows at a time in overload): backlogs fill and empty many times.
void TestInvariantsHoldForEveryPolicyAndApplication() {
  const std::vector<Variant> matrix = Matrix();
  CHECK(matrix.size() >= 50);
  uint64_t rejected_in_overload = 0;
  for (const Variant& variant : matrix) {
    LbSim sim(variant.config);
    const Violations v = RunChecked(sim, 4000);
    Expect(variant.name, "RunFlows(1) = one arrival", v.arrivals, v.first);
    Expect(variant.name, "monotone time", v.time, v.first);
    Expect(variant.name, "conservation", v.conservation, v.first);
    Expect(variant.name, "server books", v.server_books, v.first);
    Expect(variant.name, "backlog + 1", v.backlog, v.first);
    Expect(variant.name, "CPU slots", v.slots, v.first);
    Expect(variant.name, "no wait with a free CPU slot", v.idle_slot, v.first);
    Expect(variant.name, "CPU utilisation in [0, 1]", v.utilisation, v.first);
    Expect(variant.name, "LBs count their flows", v.lb_counts, v.first);
    const auto& k = sim.Count();
    Record(k.completed > 1000, __FILE__, __LINE__, variant.name + ": completed " + Show(k.completed));
    if (variant.config.load > 1) {
      Record(k.rejected > 400, __FILE__, __LINE__, variant.name + ": overloaded, rejected only " + Show(k.rejected));
      rejected_in_overload += k.rejected;
    }
  }
  // The matrix exercises rejection: every overloaded variant rejects more than 10% of its flows.
  CHECK(rejected_in_overload > 10000);
}

// With every hop instantaneous, the arrival RunFlows(1) stops before is the
// next event, and the flow reaches its server at once: it must be rejected
// exactly when that server holds more than `backlog` jobs.
void TestAFlowIsRejectedExactlyWhenItsServerHoldsMoreThanTheBacklog() {
  for (uint32_t backlog : {0u, 2u, 5u}) {
    LbConfig c = Cluster(LbPolicy::kEcmp, 1.5);
    c.hop_min_us = c.hop_max_us = 0;
    c.backlog = backlog;
    LbSim sim(c);
    sim.RunFlows(1);
    long wrong = 0, rejected = 0, full_arrivals = 0;
    std::string first;
    for (int f = 0; f < 5000; ++f) {
      std::vector<uint32_t> jobs;
      std::vector<uint64_t> dispatched;
      for (uint32_t j = 0; j < sim.NumServers(); ++j) {
        jobs.push_back(sim.ServerAt(j).Jobs());
        dispatched.push_back(sim.ServerStats()[j].dispatched);
      }
      const uint64_t rejected_before = sim.Count().rejected;
      sim.RunFlows(1);
      uint32_t to = 0, servers_hit = 0;
      for (uint32_t j = 0; j < sim.NumServers(); ++j) {
        if (sim.ServerStats()[j].dispatched == dispatched[j]) continue;
        to = j;
        ++servers_hit;
      }
      const bool was_rejected = sim.Count().rejected == rejected_before + 1;
      const bool full = jobs[to] > backlog;
      if (servers_hit != 1 || was_rejected != full) {
        if (first.empty())
          first = "flow to server " + Show(to) + " holding " + Show(jobs[to]) + " jobs, rejected " + Show(was_rejected);
        ++wrong;
      }
      rejected += was_rejected;
      full_arrivals += full;
    }
    Record(wrong == 0, __FILE__, __LINE__,
           "backlog " + Show(backlog) + ": " + Show(wrong) + " flows rejected (or not) wrongly; first: " + first);
    Record(rejected > 100 && full_arrivals == rejected, __FILE__, __LINE__,
           "backlog " + Show(backlog) + ": " + Show(rejected) + " rejected of " + Show(full_arrivals) + " full");
  }
}

// Deterministic flows (CPU 1000 us, IO 500 us, three stages) and hops of 100 us:
// a flow's FCT is at least CPU / speed + IO + 2 hops, exactly that for a flow
// alone (frequent at load 0.05), more under contention (load 0.9, 2). A rejected
// flow's FCT is at least the timeout.
void TestFctIsAtLeastTheServiceWorkAndTwoHops() {
  for (double speed : {1.0, 2.0}) {
    for (double load : {0.05, 0.9, 2.0}) {
      LbConfig c = Cluster(LbPolicy::kEcmp, load);
      c.groups = {ServerGroup{4, 2, speed, 1}};
      c.app.cpu = Distribution::Det(1000);
      c.app.io = Distribution::Det(500);
      c.hop_min_us = c.hop_max_us = 100;
      c.warmup_flows = 0;
      LbSim sim(c);
      sim.RunFlows(3000);
      const double bound = 1000 / speed + 500 + 200;
      const std::string what = "speed " + Show(speed) + ", load " + Show(load) + ": ";
      const auto& served = sim.FctServed();
      const double rounding = 1e-12 * sim.Now();  // FCT = now - t0: absolute times of up to 1e7 us
      Record(served.Count() > 100 && served.Min() >= bound - rounding, __FILE__, __LINE__,
             what + "min served FCT " + Show(served.Min()) + " < work + hops " + Show(bound));
      if (load < 0.1)
        Record(std::fabs(served.Min() - bound) <= rounding, __FILE__, __LINE__,
               what + "a flow alone took " + Show(served.Min()) + ", not " + Show(bound));
      if (load > 0.5)
        Record(served.Mean() > bound * 1.05, __FILE__, __LINE__,
               what + "no contention seen: mean " + Show(served.Mean()));
      // Every flow ended so far is in one histogram; the rejected ones at >= the timeout.
      const auto& k = sim.Count();
      CHECK_EQ(sim.Fct().Count(), k.completed + k.rejected);
      CHECK_EQ(served.Count(), k.completed);
      if (k.rejected > 0)
        Record(sim.Fct().Max() >= c.timeout_us, __FILE__, __LINE__,
               what + "rejected flows but max FCT " + Show(sim.Fct().Max()));
      if (load > 1) CHECK(k.rejected > 100);
    }
  }
}

// Two runs with one seed are identical: counters, every histogram bucket,
// per-server books, every LB's observation. 2000 flows: one differing draw
// would change the FCT sum.
void TestSameSeedSameRunOtherSeedOtherRun() {
  for (const Variant& variant : Matrix()) {
    LbConfig other = variant.config;
    other.seed += 1;
    LbSim a(variant.config), b(variant.config), c(other);
    for (auto* sim : {&a, &b, &c}) sim->RunFlows(2000);
    const auto &ka = a.Count(), &kb = b.Count();
    bool same = ka.arrived == kb.arrived && ka.completed == kb.completed && ka.rejected == kb.rejected &&
                ka.warmup == kb.warmup && ka.events == kb.events && a.Now() == b.Now() &&
                a.Fct().Counts() == b.Fct().Counts() && a.Fct().Sum() == b.Fct().Sum() &&
                a.FctServed().Counts() == b.FctServed().Counts() && a.InFlight() == b.InFlight();
    for (uint32_t j = 0; j < a.NumServers(); ++j) {
      const auto &x = a.ServerStats()[j], &y = b.ServerStats()[j];
      same &= x.dispatched == y.dispatched && x.completed == y.completed && x.rejected == y.rejected;
    }
    const size_t size = size_t{a.NumLbs()} * a.NumServers() * kNumObservationFeatures;
    std::vector<double> oa(size), ob(size);
    a.Observe(oa.data());
    b.Observe(ob.data());
    for (size_t x = 0; x < size; ++x) same &= oa[x] == ob[x] || (std::isnan(oa[x]) && std::isnan(ob[x]));
    Record(same, __FILE__, __LINE__, variant.name + ": one seed gave two different runs");
    Record(a.Fct().Sum() != c.Fct().Sum() || ka.events != c.Count().events, __FILE__, __LINE__,
           variant.name + ": two seeds gave the same run");
  }
}

// |count - n p| within 5 standard deviations of a binomial (a correct engine
// fails with probability ~6e-7 per check).
bool Binomial(uint64_t count, uint64_t n, double p) {
  const double mean = n * p, sd = std::sqrt(n * p * (1 - p));
  return std::fabs(static_cast<double>(count) - mean) <= 5 * sd;
}

// wcmp weights {1, 0, 2, 0} at LB 0 and {0, 0, 0, 1} at LB 1, equal shares:
// server 1 receives nothing; 20000 flows split 1/6, 0, 1/3, 1/2.
void TestWeightsAreRespectedAndAZeroWeightServerGetsNothing() {
  LbConfig c = Cluster(LbPolicy::kWcmp, 0.5);
  c.lbs = {BalancerConfig{LbPolicy::kWcmp, {1, 0, 2, 0}, 1.0}, BalancerConfig{LbPolicy::kWcmp, {0, 0, 0, 1}, 1.0}};
  LbSim sim(c);
  sim.RunFlows(20000);
  const auto& s = sim.ServerStats();
  CHECK_EQ(s[1].dispatched, uint64_t{0});
  CHECK(Binomial(s[0].dispatched, 20000, 1.0 / 6));
  CHECK(Binomial(s[2].dispatched, 20000, 1.0 / 3));
  CHECK(Binomial(s[3].dispatched, 20000, 0.5));

  // sed: a server of weight 0 has an infinite score and is never picked.
  LbConfig sed = Cluster(LbPolicy::kSed, 0.9);
  sed.lbs = {BalancerConfig{LbPolicy::kSed, {1, 1, 0, 2}, 1.0}};
  LbSim sed_sim(sed);
  sed_sim.RunFlows(5000);
  CHECK_EQ(sed_sim.ServerStats()[2].dispatched, uint64_t{0});
  CHECK(sed_sim.ServerStats()[3].dispatched > sed_sim.ServerStats()[0].dispatched);

  // weights set from outside (the agents' action) take effect at the next flow.
  LbSim agent(Cluster(LbPolicy::kWeights, 0.8));
  agent.RunFlows(2000);
  for (uint32_t j = 0; j < 4; ++j) CHECK(agent.ServerStats()[j].dispatched > 300);  // uniform by default
  const uint64_t before = agent.ServerStats()[1].dispatched;
  agent.SetWeights(0, {0, 1, 0, 0});
  agent.SetWeights(1, {0, 1, 0, 0});
  std::vector<uint64_t> others;
  for (uint32_t j : {0u, 2u, 3u}) others.push_back(agent.ServerStats()[j].dispatched);
  agent.RunFlows(3000);
  CHECK_EQ(agent.ServerStats()[1].dispatched, before + 3000);
  CHECK_EQ(agent.ServerStats()[0].dispatched, others[0]);
  CHECK_EQ(agent.ServerStats()[2].dispatched, others[1]);
  CHECK_EQ(agent.ServerStats()[3].dispatched, others[2]);
  CHECK(agent.Count().rejected > 0);  // all traffic on one server overflows its backlog

  CHECK_THROWS(agent.SetWeights(0, {0, 0, 0, 0}), std::invalid_argument);
  CHECK_THROWS(agent.SetWeights(2, {1, 1, 1, 1}), std::invalid_argument);
  LbSim ecmp(Cluster(LbPolicy::kEcmp));
  CHECK_THROWS(ecmp.SetWeights(0, {1, 1, 1, 1}), std::invalid_argument);
}

// RunUntil ends exactly at its horizon and refuses to go back.
void TestTimeOnlyMovesForward() {
  LbSim sim(Cluster(LbPolicy::kLsq));
  sim.RunUntil(5e4);
  CHECK_EQ(sim.Now(), 5e4);
  CHECK_THROWS(sim.RunUntil(4e4), std::invalid_argument);
  CHECK_THROWS(sim.RunUntil(INFINITY), std::invalid_argument);  // would never end
  CHECK_THROWS(sim.Weights(2), std::invalid_argument);          // two LBs: 0 and 1
  sim.RunUntil(5e4);
  CHECK_EQ(sim.Now(), 5e4);
  const uint64_t ended = sim.Count().completed + sim.Count().rejected;
  sim.RunCompletions(100);
  CHECK_EQ(sim.Count().completed + sim.Count().rejected, ended + 100);
  CHECK(sim.Now() > 5e4);
}

// Each bound of the config (lb_sim.hpp's kMax*), whatever else the config holds: the bound passes, one past fails.
void TestValidateChecksEveryBound() {
  using IA = std::invalid_argument;
  const auto with = [](auto change) {
    LbConfig c = Cluster(LbPolicy::kLsq);
    change(c);
    return c;
  };
  using dcgym::lb::kMaxBacklog, dcgym::lb::kMaxFdDensity, dcgym::lb::kMaxMpLevel, dcgym::lb::kMaxServers,
      dcgym::lb::kMaxStages, dcgym::lb::kMaxWorkers;
  with([](LbConfig& c) { c.groups = {ServerGroup{kMaxServers, 1, 1.0, 1}}; }).Validate();  // the bound itself passes
  CHECK_THROWS(with([](LbConfig& c) { c.groups = {ServerGroup{kMaxServers + 1, 1, 1.0, 1}}; }).Validate(), IA);
  CHECK_THROWS(with([](LbConfig& c) { c.groups.push_back(ServerGroup{kMaxServers, 1, 1.0, 1}); }).Validate(),
               IA);  // in all
  with([](LbConfig& c) { c.groups[0].workers = kMaxWorkers; }).Validate();
  CHECK_THROWS(with([](LbConfig& c) { c.groups[0].workers = kMaxWorkers + 1; }).Validate(), IA);
  CHECK_THROWS(with([](LbConfig& c) { c.groups[0].mp_level = kMaxMpLevel + 1; }).Validate(), IA);
  with([](LbConfig& c) { c.app.stages = kMaxStages; }).Validate();
  CHECK_THROWS(with([](LbConfig& c) { c.app.stages = kMaxStages + 1; }).Validate(), IA);
  CHECK_THROWS(with([](LbConfig& c) { c.backlog = kMaxBacklog + 1; }).Validate(), IA);
  CHECK_THROWS(with([](LbConfig& c) { c.observation.fd_density = kMaxFdDensity + 1; }).Validate(), IA);
  with([](LbConfig& c) { c.load = dcgym::kernel::kMaxLoad; }).Validate();
  CHECK_THROWS(with([](LbConfig& c) { c.load = std::nextafter(dcgym::kernel::kMaxLoad, 11.0); }).Validate(), IA);
}

}  // namespace

int main() {
  TestInvariantsHoldForEveryPolicyAndApplication();
  TestAFlowIsRejectedExactlyWhenItsServerHoldsMoreThanTheBacklog();
  TestFctIsAtLeastTheServiceWorkAndTwoHops();
  TestSameSeedSameRunOtherSeedOtherRun();
  TestWeightsAreRespectedAndAZeroWeightServerGetsNothing();
  TestTimeOnlyMovesForward();
  TestValidateChecksEveryBound();
  return dcgym::check::Report("lb_sim");
}
