// Invariants of the rack simulator (RackSim), checked through its public API
// on configs built here, for every dispatch policy, entry point, intra-node
// discipline, load-information model and load metric the engine accepts:
//
// - conservation: arrived = completed + dropped + in flight, after every arrival;
// - RunTasks(n) brings exactly n arrivals; simulated time never goes back;
// - queue capacities: a node never holds more than workers + queue_capacity tasks,
//   never more than queue_capacity waiting under FCFS;
// - work conservation: no node has an idle worker while a task waits there;
//   under central_fcfs no active node has an idle worker while the switch holds
//   a task; under jbsq the switch holds tasks only when every active node is at
//   its bound;
// - utilisation (busy worker time / worker time) within [0, 1] on every node,
//   and equal to the offered load on a stable rack;
// - locality: a node only holds tasks of the types it may run;
// - determinism: a seed gives identical counters and histograms, another seed differs;
// - dynamics (speed changes, node removal and addition, load changes) lose no
//   task: a removed node receives nothing until it is added back, and the rack
//   drains completely once the arrivals stop.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/rack/rack_sim.hpp"
#include "dcgym/rack/water_fill.hpp"

using dcgym::check::Record;
using dcgym::check::Show;
using dcgym::kernel::Distribution;
using dcgym::rack::Discipline;
using dcgym::rack::DispatchKind;
using dcgym::rack::DynamicsEvent;
using dcgym::rack::EntryKind;
using dcgym::rack::LoadInfoKind;
using dcgym::rack::LoadMetric;
using dcgym::rack::Node;
using dcgym::rack::NodeGroup;
using dcgym::rack::Queueing;
using dcgym::rack::RackConfig;
using dcgym::rack::RackSim;
using dcgym::rack::Task;
using dcgym::rack::TaskType;

namespace {

// One config of the matrix, with what must be done to the simulator before it runs (tables).
struct Variant {
  std::string name;
  RackConfig config;
  std::function<void(RackSim&)> setup;
};

// Five nodes: three of 2 workers at speed 1 with unbounded queues, two of 1
// worker at speed 2 holding at most 3 waiting tasks (capacity 10 work units/us).
// At load 0.9 the small queues fill now and then, so drops are exercised.
RackConfig Rack(double load = 0.9, uint64_t seed = 7) {
  RackConfig c;
  c.groups = {NodeGroup{3, 2, 1.0, -1}, NodeGroup{2, 1, 2.0, 3}};
  c.service = Distribution::Exp(1.0);
  c.load = load;
  c.seed = seed;
  c.warmup_tasks = 200;
  return c;
}

void SetDiscipline(RackConfig& c, int k) {
  if (k == 1) c.intra.discipline = Discipline::kPs;  // ideal egalitarian sharing
  if (k == 2) {                                      // round-robin slices with a switch cost
    c.intra.discipline = Discipline::kPs;
    c.intra.quantum_us = 0.5;
    c.intra.switch_cost_us = 0.05;
  }
}
const char* const kDisciplines[] = {"fcfs", "ps", "ps_quantum"};

// Two task types that may each run on three of the five nodes (node 2 runs both).
std::vector<TaskType> LocalTypes() {
  TaskType a, b;
  a.share = 0.7;
  a.service = Distribution::Exp(0.5);
  a.slo_us = 5;
  a.priority = 1;
  a.nodes = {0, 1, 2};
  b.share = 0.3;
  b.service = Distribution::Exp(0.35 / 0.3 + 1.0);
  b.slo_us = 20;
  b.priority = 0;
  b.nodes = {2, 3, 4};
  return {a, b};
}

// Malcolm's tables: accept half the arrivals, migrate the rest uniformly; after a completion
// steal from a uniformly chosen victim with probability 0.8.
void SetTables(RackSim& sim) {
  const uint32_t n = sim.NumNodes();
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<double> migrate(n, 0.5 / (n - 1)), steal(n, 0.8 / (n - 1));
    migrate[i] = 0.5;
    steal[i] = 0.2;
    sim.SetMigrationTable(i, migrate.data());
    sim.SetStealTable(i, steal.data());
  }
}

struct Policy {
  const char* name;
  DispatchKind kind;
};

// Every policy the engine has, at every entry point it accepts, under every discipline.
std::vector<Variant> Matrix() {
  std::vector<Variant> out;
  const auto add = [&out](std::string name, RackConfig c, std::function<void(RackSim&)> setup = nullptr) {
    out.push_back(Variant{std::move(name), std::move(c), std::move(setup)});
  };
  const Policy policies[] = {{"random", DispatchKind::kRandom}, {"round_robin", DispatchKind::kRoundRobin},
                             {"po2", DispatchKind::kPowerOfD},  {"jsq", DispatchKind::kJsq},
                             {"jbt", DispatchKind::kJbt},       {"sed", DispatchKind::kSed},
                             {"wcmp", DispatchKind::kWcmp},     {"lsq", DispatchKind::kLsq},
                             {"oracle", DispatchKind::kOracle}};
  for (int d = 0; d < 3; ++d) {
    const std::string disc = kDisciplines[d];
    for (const Policy& p : policies) {
      for (EntryKind entry : {EntryKind::kSwitch, EntryKind::kBalancers, EntryKind::kNodes}) {
        RackConfig c = Rack();
        SetDiscipline(c, d);
        c.dispatch.kind = p.kind;
        c.dispatch.threshold = 2;
        if (p.kind == DispatchKind::kWcmp) c.dispatch.weights = {1, 0, 2, 1, 1};
        c.entry.kind = entry;
        std::string where = "switch";
        if (entry == EntryKind::kBalancers) {
          c.entry.count = 3;
          c.entry.split = {1, 2, 1};
          where = "balancers";
        } else if (entry == EntryKind::kNodes) {
          c.migration.delay_us = d == 0 ? 0.0 : 0.5;  // migrated tasks in the network, sometimes
          where = "nodes";
        }
        add(p.name + std::string("/") + where + "/" + disc, c);
      }
    }
    RackConfig po3 = Rack();
    SetDiscipline(po3, d);
    po3.dispatch.kind = DispatchKind::kPowerOfD;
    po3.dispatch.d = 3;
    po3.dispatch.replace = false;
    add("po3_without_replacement/switch/" + disc, po3);

    RackConfig jbsq = Rack();
    SetDiscipline(jbsq, d);
    jbsq.dispatch.kind = DispatchKind::kJbsq;
    jbsq.dispatch.bound = 1;
    add("jbsq/switch/" + disc, jbsq);

    for (double delay : {0.0, 0.5}) {
      RackConfig table = Rack();
      SetDiscipline(table, d);
      table.entry.kind = EntryKind::kNodes;
      table.dispatch.kind = DispatchKind::kTable;
      table.migration.delay_us = delay;
      table.migration.steal_below = 2;
      add("table_migration_stealing/nodes/" + disc + (delay > 0 ? "/delay" : ""), table, SetTables);
    }
    RackConfig untouched = Rack();  // table entry left at its default: every node accepts, nobody steals
    SetDiscipline(untouched, d);
    untouched.entry.kind = EntryKind::kNodes;
    untouched.dispatch.kind = DispatchKind::kTable;
    add("table_default/nodes/" + disc, untouched);
    for (bool steal : {false, true}) {  // the engine's own tables, every heartbeat, on stale loads
      RackConfig fill = Rack();
      SetDiscipline(fill, d);
      fill.entry.kind = EntryKind::kNodes;
      fill.dispatch.kind = DispatchKind::kWaterFill;
      fill.dispatch.metric = LoadMetric::kExpectedWait;
      fill.dispatch.period_us = 5;
      fill.dispatch.steal = steal;
      fill.load_info.kind = LoadInfoKind::kPeriodic;
      fill.load_info.period_us = 5;
      fill.migration.delay_us = 0.5;
      fill.migration.steal_below = 2;
      add(std::string("water_fill") + (steal ? "_steal" : "") + "/nodes/" + disc, fill);
    }
  }
  for (double rtt : {0.0, 0.3}) {
    RackConfig central = Rack();
    central.dispatch.kind = DispatchKind::kCentralFcfs;
    central.dispatch.rtt_us = rtt;
    add(std::string("central_fcfs/switch/fcfs") + (rtt > 0 ? "/rtt" : ""), central);
  }

  // Load information and metrics.
  struct Info {
    const char* name;
    LoadInfoKind kind;
    EntryKind entry;
    DispatchKind policy;
    LoadMetric metric;
  };
  const Info infos[] = {
      {"jsq/periodic_delayed/balancers", LoadInfoKind::kPeriodic, EntryKind::kBalancers, DispatchKind::kJsq,
       LoadMetric::kOutstanding},
      {"po2/periodic_local_increment/nodes", LoadInfoKind::kPeriodic, EntryKind::kNodes, DispatchKind::kPowerOfD,
       LoadMetric::kExpectedWait},
      {"jsq/piggyback_delayed/switch", LoadInfoKind::kPiggyback, EntryKind::kSwitch, DispatchKind::kJsq,
       LoadMetric::kQueue},
      {"po2/min_only/balancers", LoadInfoKind::kMinOnly, EntryKind::kBalancers, DispatchKind::kPowerOfD,
       LoadMetric::kOutstanding},
      {"sed/proactive/switch", LoadInfoKind::kProactive, EntryKind::kSwitch, DispatchKind::kSed, LoadMetric::kWork},
      {"jsq/fresh_work/switch", LoadInfoKind::kFresh, EntryKind::kSwitch, DispatchKind::kJsq, LoadMetric::kWork},
      {"jbt/fresh_expected_wait/nodes", LoadInfoKind::kFresh, EntryKind::kNodes, DispatchKind::kJbt,
       LoadMetric::kExpectedWait},
      {"sed/periodic_nominal_wait/nodes", LoadInfoKind::kPeriodic, EntryKind::kNodes, DispatchKind::kSed,
       LoadMetric::kNominalWait},
  };
  for (const Info& info : infos) {
    RackConfig c = Rack();
    c.load_info.kind = info.kind;
    c.load_info.period_us = 5;
    c.load_info.delay_us = 1;
    c.load_info.local_increment = info.entry == EntryKind::kNodes;
    c.entry.kind = info.entry;
    c.entry.count = 3;
    c.dispatch.kind = info.policy;
    c.dispatch.metric = info.metric;
    add(info.name, c);
  }

  // Task types with locality, per-type loads and per-type or priority queues.
  const Policy typed[] = {{"random", DispatchKind::kRandom},
                          {"po2", DispatchKind::kPowerOfD},
                          {"jsq_per_type_loads", DispatchKind::kJsq},
                          {"oracle", DispatchKind::kOracle}};
  for (const Policy& p : typed) {
    RackConfig c = Rack();
    c.types = LocalTypes();
    c.dispatch.kind = p.kind;
    c.dispatch.per_type = p.kind == DispatchKind::kJsq;
    c.intra.queueing = Queueing::kPerType;
    add("typed_locality/" + std::string(p.name) + "/switch/per_type_queues", c);
  }
  RackConfig priority = Rack();
  priority.types = LocalTypes();
  priority.dispatch.kind = DispatchKind::kPowerOfD;
  priority.intra.queueing = Queueing::kPriority;
  SetDiscipline(priority, 2);
  add("typed_locality/po2/balancers/priority_ps_quantum", priority);
  priority.entry.kind = EntryKind::kNodes;
  priority.dispatch.kind = DispatchKind::kTable;
  priority.migration.steal_below = 2;
  add("typed_locality/table_migration_stealing/nodes/priority_ps_quantum", priority, SetTables);

  // Every queue bounded, some to nothing, in overload: many drops.
  RackConfig full = Rack(1.3);
  full.groups = {NodeGroup{3, 2, 1.0, 0}, NodeGroup{2, 1, 2.0, 2}};
  for (const Policy& p : {Policy{"random", DispatchKind::kRandom}, Policy{"jsq", DispatchKind::kJsq}}) {
    full.dispatch.kind = p.kind;
    add("overloaded_small_queues/" + std::string(p.name) + "/switch/fcfs", full);
  }
  full.entry.kind = EntryKind::kNodes;
  full.dispatch.kind = DispatchKind::kTable;
  add("overloaded_small_queues/table/nodes/fcfs", full, SetTables);
  return out;
}

std::unique_ptr<RackSim> Build(const Variant& v) {
  auto sim = std::make_unique<RackSim>(v.config);
  if (v.setup) v.setup(*sim);
  return sim;
}

// Queue capacity of each node, by node id.
std::vector<int64_t> Capacities(const RackConfig& c) {
  std::vector<int64_t> out;
  for (const auto& g : c.groups)
    for (uint32_t k = 0; k < g.count; ++k) out.push_back(g.queue_capacity);
  return out;
}

uint64_t Held(const Node& nd) {
  uint64_t n = 0;
  nd.ForEachTask([&n](const Task&) { ++n; });
  return n;
}

// Tasks placed at node i so far: completed, dropped, stolen from it, or held.
uint64_t Placed(const RackSim& sim, uint32_t i) {
  const auto& s = sim.NodeStats()[i];
  return s.completed + s.dropped + s.stolen_from + Held(sim.NodeAt(i));
}

// Violations of each invariant over a run; each must stay 0.
struct Violations {
  long arrivals = 0, time = 0, conservation = 0, capacity = 0, queue = 0, idle_while_waiting = 0, central = 0, jbsq = 0,
       utilisation = 0, locality = 0;
  std::string first;  // the first violation, for the failure message

  // Counts a violation if `violated`; the message is built only then (checks run millions of times).
  template <typename Message>
  void Note(long& counter, bool violated, const Message& message) {
    if (!violated) return;
    if (first.empty()) first = message();
    ++counter;
  }
};

// Every per-state invariant of `sim` now.
void CheckState(const RackSim& sim, const RackConfig& c, Violations& v) {
  const auto& k = sim.Counters();
  const uint64_t in_flight = sim.InFlight();
  v.Note(v.conservation, k.arrived != k.completed + k.dropped + in_flight, [&] {
    return std::string("arrived " + Show(k.arrived) + " != completed " + Show(k.completed) + " + dropped " +
                       Show(k.dropped) + " + in flight " + Show(in_flight) + " at t = " + Show(sim.Now()));
  });
  const std::vector<int64_t> capacity = Capacities(c);
  const bool ideal_ps = c.intra.discipline == Discipline::kPs && c.intra.quantum_us == 0;
  uint64_t held_at_nodes = 0;
  bool idle_active = false, every_active_at_bound = true;
  for (uint32_t i = 0; i < sim.NumNodes(); ++i) {
    const Node& nd = sim.NodeAt(i);
    const auto node = [&] { return "node " + Show(i) + " at t = " + Show(sim.Now()) + ": "; };
    held_at_nodes += Held(nd);
    if (capacity[i] >= 0) {
      v.Note(v.capacity, nd.Outstanding() > nd.Workers() + capacity[i],
             [&] { return std::string(node() + "holds " + Show(nd.Outstanding()) + " > workers + capacity"); });
      if (c.intra.discipline == Discipline::kFcfs)
        v.Note(v.queue, nd.Queued() > capacity[i],
               [&] { return std::string(node() + "queue " + Show(nd.Queued()) + " > capacity"); });
    }
    v.Note(v.idle_while_waiting, nd.IdleWorkers() > 0 && nd.Queued() > 0, [&] {
      return std::string(node() + Show(nd.IdleWorkers()) + " idle workers while " + Show(nd.Queued()) + " wait");
    });
    if (sim.Now() > 0) {
      const double u = nd.BusyTime(sim.Now()) / (nd.Workers() * sim.Now());
      v.Note(v.utilisation, !(u >= -1e-9 && u <= 1 + 1e-9),
             [&] { return std::string(node() + "utilisation " + Show(u)); });
    }
    if (!c.types.empty()) {
      nd.ForEachTask([&](const Task& t) {
        const auto& allowed = c.types[t.cls].nodes;
        bool ok = allowed.empty();
        for (uint32_t j : allowed) ok |= j == i;
        v.Note(v.locality, !ok,
               [&] { return std::string(node() + "holds a task of type " + Show(t.cls) + " it may not run"); });
      });
    }
    if (sim.IsActive(i)) {
      idle_active |= nd.IdleWorkers() > 0;
      if (!ideal_ps) every_active_at_bound &= nd.Outstanding() >= c.dispatch.bound * nd.Workers();
    }
  }
  // Without delays in the network, what the nodes do not hold waits at the switch.
  if (c.migration.delay_us == 0 && c.load_info.delay_us == 0) {
    const bool switch_holds = in_flight > held_at_nodes;
    if (c.dispatch.kind == DispatchKind::kCentralFcfs)
      v.Note(v.central, switch_holds && idle_active,
             [&] { return std::string("central_fcfs: a worker idles while the switch holds a task"); });
    if (c.dispatch.kind == DispatchKind::kJbsq && !ideal_ps && c.types.empty())
      v.Note(v.jbsq, switch_holds && !every_active_at_bound,
             [&] { return std::string("jbsq: the switch holds a task below some node's bound"); });
  }
}

// Runs `tasks` arrivals one at a time (RunTasks(1)), checking every invariant after each.
Violations RunChecked(RackSim& sim, const RackConfig& c, uint64_t tasks) {
  Violations v;
  double last = sim.Now();
  for (uint64_t n = 0; n < tasks; ++n) {
    const uint64_t before = sim.Counters().arrived;
    sim.RunTasks(1);
    v.Note(v.arrivals, sim.Counters().arrived != before + 1,
           [&] { return std::string("RunTasks(1) did not bring exactly one arrival"); });
    v.Note(v.time, !(sim.Now() >= last),
           [&] { return std::string("time went back from " + Show(last) + " to " + Show(sim.Now())); });
    last = sim.Now();
    CheckState(sim, c, v);
  }
  return v;
}

void Expect(const std::string& name, const char* invariant, long violations, const std::string& first) {
  Record(violations == 0, __FILE__, __LINE__,
         name + ": " + invariant + " violated " + Show(violations) + " times; first: " + first);
}

void ExpectNone(const std::string& name, const Violations& v) {
  Expect(name, "RunTasks(1) = one arrival", v.arrivals, v.first);
  Expect(name, "monotone time", v.time, v.first);
  Expect(name, "conservation", v.conservation, v.first);
  Expect(name, "workers + queue_capacity", v.capacity, v.first);
  Expect(name, "queue_capacity (fcfs)", v.queue, v.first);
  Expect(name, "no idle worker while a task waits", v.idle_while_waiting, v.first);
  Expect(name, "central_fcfs work conservation", v.central, v.first);
  Expect(name, "jbsq holds only at the bound", v.jbsq, v.first);
  Expect(name, "utilisation in [0, 1]", v.utilisation, v.first);
  Expect(name, "locality", v.locality, v.first);
}

// 20000 arrivals at load 0.9 (1.3 for the small queues): every node busy and
// idle many times, queues filling, hundreds of migrations and steals.
void TestInvariantsHoldForEveryPolicyEntryAndDiscipline() {
  const std::vector<Variant> matrix = Matrix();
  CHECK(matrix.size() >= 100);
  uint64_t dropped = 0, migrations = 0, steals = 0, failed_steals = 0;
  for (const Variant& variant : matrix) {
    std::unique_ptr<RackSim> sim;
    try {
      sim = Build(variant);
    } catch (const std::exception& e) {
      Record(false, __FILE__, __LINE__, variant.name + ": refused: " + e.what());
      continue;
    }
    ExpectNone(variant.name, RunChecked(*sim, variant.config, 20000));
    const auto& k = sim->Counters();
    Record(k.completed > 10000, __FILE__, __LINE__, variant.name + ": completed " + Show(k.completed));
    // wcmp's weights {1, 0, 2, 1, 1}: node 1 receives nothing, node 2 twice what node 0 receives.
    if (variant.name.rfind("wcmp/", 0) == 0 && variant.config.entry.kind != EntryKind::kNodes) {
      const double ratio = static_cast<double>(Placed(*sim, 2)) / static_cast<double>(Placed(*sim, 0));
      Record(Placed(*sim, 1) == 0 && std::fabs(ratio - 2.0) < 0.15, __FILE__, __LINE__,
             variant.name + ": node 1 (weight 0) received " + Show(Placed(*sim, 1)) +
                 ", node 2 / node 0 = " + Show(ratio));
    }
    dropped += k.dropped;
    migrations += k.migrations;
    steals += k.steals;
    failed_steals += k.failed_steals;
    // Under ideal PS nothing waits in a queue, so every steal fails (Node::StealQueued).
    const bool ideal_ps = variant.config.intra.discipline == Discipline::kPs && variant.config.intra.quantum_us == 0;
    if (variant.name.find("table_migration") != std::string::npos)
      Record(k.migrations > 1000 && (ideal_ps ? k.steals == 0 : k.steals > 100) && k.failed_steals > 100, __FILE__,
             __LINE__,
             variant.name + ": migrations " + Show(k.migrations) + ", steals " + Show(k.steals) + ", failed " +
                 Show(k.failed_steals));
  }
  // The matrix exercises what it claims to: drops at full queues, migration and stealing.
  CHECK(dropped > 10000);
  CHECK(migrations > 100000);
  CHECK(steals > 1000 && failed_steals > 1000);
}

// Two runs with one seed are identical in every counter and histogram bucket;
// another seed gives another run. 3000 arrivals suffice: a difference in a
// single random draw changes the event count or the latency sum.
void TestSameSeedSameRunOtherSeedOtherRun() {
  for (const Variant& variant : Matrix()) {
    Variant other = variant;
    other.config.seed += 1;
    auto a = Build(variant), b = Build(variant), c = Build(other);
    for (auto* sim : {a.get(), b.get(), c.get()}) sim->RunTasks(3000);
    const auto &ka = a->Counters(), &kb = b->Counters(), &kc = c->Counters();
    const bool same = ka.arrived == kb.arrived && ka.completed == kb.completed && ka.dropped == kb.dropped &&
                      ka.warmup == kb.warmup && ka.events == kb.events && ka.migrations == kb.migrations &&
                      ka.steals == kb.steals && ka.failed_steals == kb.failed_steals && a->Now() == b->Now() &&
                      a->Latency().Counts() == b->Latency().Counts() && a->Latency().Sum() == b->Latency().Sum() &&
                      a->InFlight() == b->InFlight();
    bool same_nodes = true;
    for (uint32_t i = 0; i < a->NumNodes(); ++i) {
      const auto &x = a->NodeStats()[i], &y = b->NodeStats()[i];
      same_nodes &= x.completed == y.completed && x.dropped == y.dropped && x.migrated_out == y.migrated_out &&
                    x.stolen_from == y.stolen_from;
    }
    Record(same && same_nodes, __FILE__, __LINE__, variant.name + ": one seed gave two different runs");
    const bool differs = ka.events != kc.events || a->Latency().Sum() != c->Latency().Sum() || a->Now() != c->Now();
    Record(differs, __FILE__, __LINE__,
           variant.name + ": seeds " + Show(variant.config.seed) + " and " + Show(other.config.seed) +
               " gave the same run");
  }
}

// Dynamics on a rack at load 0.5 (5 tasks/us): slow two nodes, remove two
// (the rest is then overloaded and queues grow), lower the load, speed one
// up, add the removed back, remove three, add them back; finally the
// arrivals all but stop and the rack must drain. Checked every 0.5 us of
// simulated time (about 2.5 arrivals) over 2500 us.
void TestDynamicsLoseNoTask() {
  std::vector<Variant> variants;
  for (const Variant& v : Matrix()) {
    const auto& c = v.config;
    if (c.migration.delay_us > 0) continue;  // a task migrated to a node as it is removed would reach it
    variants.push_back(v);
    variants.back().config.dispatch.weights.clear();  // wcmp in proportion to capacity: every node gets tasks
  }
  CHECK(variants.size() >= 50);
  const auto event = [](DynamicsEvent::Kind kind, double at, std::vector<uint32_t> nodes, std::vector<double> values) {
    DynamicsEvent e;
    e.kind = kind;
    e.at_us = at;
    e.nodes = std::move(nodes);
    e.values = std::move(values);
    return e;
  };
  const double kStop = 2000, kEnd = 2500;
  for (Variant v : variants) {
    v.config.load = 0.5;
    v.config.dynamics = {
        event(DynamicsEvent::kSpeed, 100, {0, 3}, {0.5}),
        event(DynamicsEvent::kRemove, 200, {1, 4}, {}),
        event(DynamicsEvent::kLoad, 400, {}, {0.3}),
        event(DynamicsEvent::kSpeed, 500, {0}, {3.0}),
        event(DynamicsEvent::kAdd, 700, {1}, {}),
        event(DynamicsEvent::kAdd, 900, {4}, {}),
        event(DynamicsEvent::kRemove, 1100, {0, 2, 3}, {}),
        event(DynamicsEvent::kAdd, 1400, {0, 2, 3}, {}),
        event(DynamicsEvent::kSpeed, 1500, {1, 2, 3, 4}, {0.7}),
        event(DynamicsEvent::kLoad, kStop, {}, {1e-9}),
    };
    // [removed at, added at) per node
    const std::vector<std::vector<std::pair<double, double>>> removed = {
        {{1100, 1400}}, {{200, 700}}, {{1100, 1400}}, {{1100, 1400}}, {{200, 900}}};
    std::unique_ptr<RackSim> sim;
    try {
      sim = Build(v);
    } catch (const std::exception& e) {
      Record(false, __FILE__, __LINE__, v.name + " with dynamics: refused: " + e.what());
      continue;
    }
    Violations viol;
    long received_while_removed = 0;
    std::vector<uint64_t> placed_at_removal(5, 0), placed_at_addition(5, 0);
    std::vector<bool> gained_after_addition(5, false);
    for (int step = 1; step * 0.5 <= kEnd; ++step) {
      const double t = step * 0.5;
      sim->RunUntil(t);
      viol.Note(viol.time, sim->Now() != t,
                [&] { return std::string("RunUntil(" + Show(t) + ") ended at " + Show(sim->Now())); });
      CheckState(*sim, v.config, viol);
      for (uint32_t i = 0; i < 5; ++i) {
        for (const auto& [from, to] : removed[i]) {
          if (t == from) placed_at_removal[i] = Placed(*sim, i);
          if (t > from && t < to) received_while_removed += Placed(*sim, i) != placed_at_removal[i];
          if (t == to) placed_at_addition[i] = Placed(*sim, i);
          if (t > to && t < kStop) gained_after_addition[i] = Placed(*sim, i) > placed_at_addition[i];
        }
      }
    }
    ExpectNone(v.name + " with dynamics", viol);
    Record(received_while_removed == 0, __FILE__, __LINE__,
           v.name + ": a removed node received tasks at " + Show(received_while_removed) + " checks");
    for (uint32_t i = 0; i < 5; ++i)
      Record(gained_after_addition[i], __FILE__, __LINE__,
             v.name + ": node " + Show(i) + " received nothing after it was added back");
    // Arrivals stopped at kStop (1e-9 of the capacity: one arrival in 1e8 us); 500 us drain every queue.
    const auto& k = sim->Counters();
    Record(sim->InFlight() == 0 && k.arrived == k.completed + k.dropped, __FILE__, __LINE__,
           v.name + ": " + Show(sim->InFlight()) + " tasks still in the rack " + Show(kEnd - kStop) +
               " us after the arrivals stopped");
  }
}

// Simulated time: RunUntil ends exactly at its horizon, refuses to go back,
// and every latency is non-negative.
void TestTimeOnlyMovesForward() {
  RackConfig c = Rack(0.7);
  RackSim sim(c);
  sim.RunUntil(100.0);
  CHECK_EQ(sim.Now(), 100.0);
  CHECK_THROWS(sim.RunUntil(99.0), std::invalid_argument);
  CHECK_THROWS(sim.RunUntil(INFINITY), std::invalid_argument);  // would never end
  sim.RunUntil(100.0);                                          // the same time is allowed
  CHECK_EQ(sim.Now(), 100.0);
  sim.RunTasks(1000);
  CHECK(sim.Now() > 100.0);
  CHECK(sim.Latency().Count() > 500);
  CHECK(sim.Latency().Min() >= 0.0);
}

// On a stable rack the workers are busy a fraction `load` of the time: busy
// worker time x speed / (capacity x time) = 0.6 within 0.01 after 200k tasks
// (the standard error of a 200k-task estimate is well below 0.005).
void TestUtilisationEqualsTheOfferedLoad() {
  for (int d = 0; d < 3; ++d) {
    RackConfig c = Rack(0.6, 3);
    c.groups = {NodeGroup{3, 2, 1.0, -1}, NodeGroup{2, 1, 2.0, -1}};  // no drops
    SetDiscipline(c, d);
    c.intra.switch_cost_us = 0;  // switches would add busy-looking time that serves no work
    c.dispatch.kind = DispatchKind::kJsq;
    RackSim sim(c);
    sim.RunTasks(200000);
    double work_done = 0;
    for (uint32_t i = 0; i < sim.NumNodes(); ++i) {
      const Node& nd = sim.NodeAt(i);
      const double u = nd.BusyTime(sim.Now()) / (nd.Workers() * sim.Now());
      CHECK(u > 0.3 && u < 0.9);
      work_done += nd.BusyTime(sim.Now()) * nd.Speed();
    }
    CHECK_NEAR(work_done / (c.Capacity() * sim.Now()), 0.6, 0.01);
  }
}

// jbsq refills a node with the switch's oldest task whatever its type, so it cannot keep locality: refused.
void TestJbsqWithLocalityIsRefused() {
  RackConfig c = Rack();
  c.types = LocalTypes();
  c.dispatch.kind = DispatchKind::kJbsq;
  CHECK_THROWS(RackSim{c}, std::invalid_argument);
  for (auto& type : c.types) type.nodes.clear();  // types without locality are fine
  RackSim sim(c);
  sim.RunTasks(1000);
  CHECK_EQ(sim.Counters().arrived, 1000u);
}

// Each bound of the config (config.hpp's kMax*), whatever policy or entry uses the field: the bound passes, one
// past fails.
// Water-filling: equal levels give the capacity split; a node above the fill level gets only its mix share; the
// level absorbs the volume; the table sums to 1.
void TestWaterFillTable() {
  const std::vector<double> capacity = {2, 2, 1, 4};
  const std::vector<uint32_t> all = {0, 1, 2, 3};
  std::vector<uint32_t> order;
  std::vector<double> p(4);
  const std::vector<double> equal = {1, 1, 1, 1};
  dcgym::rack::WaterFillTable(equal.data(), capacity.data(), all, 3.0, 0.0, order, p.data());
  for (uint32_t j = 0; j < 4; ++j) CHECK(std::fabs(p[j] - capacity[j] / 9.0) < 1e-12);
  // Levels 0, 1, 5, 0 with volume 6: nodes 0 and 3 fill to L = 6 / (2 + 4) = 1, where node 1 sits; node 2 is above.
  const std::vector<double> levels = {0, 1, 5, 0};
  dcgym::rack::WaterFillTable(levels.data(), capacity.data(), all, 6.0, 0.1, order, p.data());
  CHECK(std::fabs(p[0] - (0.9 * 2.0 / 6 + 0.1 * 2.0 / 9)) < 1e-12);
  CHECK(std::fabs(p[1] - 0.1 * 2.0 / 9) < 1e-12);
  CHECK(std::fabs(p[2] - 0.1 * 1.0 / 9) < 1e-12);
  CHECK(std::fabs(p[3] - (0.9 * 4.0 / 6 + 0.1 * 4.0 / 9)) < 1e-12);
  CHECK(std::fabs(p[0] + p[1] + p[2] + p[3] - 1.0) < 1e-12);
  // Only the listed nodes: node 3 (inactive) is left alone.
  p.assign(4, -1.0);
  dcgym::rack::WaterFillTable(levels.data(), capacity.data(), {0, 1, 2}, 2.0, 0.0, order, p.data());
  CHECK(p[3] == -1.0 && std::fabs(p[0] - 1.0) < 1e-12 && p[1] == 0.0 && p[2] == 0.0);
}

void TestValidateChecksEveryBound() {
  using IA = std::invalid_argument;
  const auto with = [](auto change) {
    RackConfig c = Rack();
    change(c);
    return c;
  };
  using dcgym::rack::kMaxBalancers, dcgym::rack::kMaxBound, dcgym::rack::kMaxNodes, dcgym::rack::kMaxSampled,
      dcgym::rack::kMaxWorkers;
  with([](RackConfig& c) { c.groups = {NodeGroup{kMaxNodes, 1, 1.0, -1}}; }).Validate();  // the bound itself passes
  CHECK_THROWS(with([](RackConfig& c) { c.groups = {NodeGroup{kMaxNodes + 1, 1, 1.0, -1}}; }).Validate(), IA);
  CHECK_THROWS(with([](RackConfig& c) { c.groups.push_back(NodeGroup{kMaxNodes, 1, 1.0, -1}); }).Validate(),
               IA);  // in all
  with([](RackConfig& c) { c.groups[0].workers = kMaxWorkers; }).Validate();
  CHECK_THROWS(with([](RackConfig& c) { c.groups[0].workers = kMaxWorkers + 1; }).Validate(), IA);
  with([](RackConfig& c) { c.dispatch.d = kMaxSampled; }).Validate();
  CHECK_THROWS(with([](RackConfig& c) { c.dispatch.d = kMaxSampled + 1; }).Validate(), IA);  // whatever the policy
  CHECK_THROWS(with([](RackConfig& c) { c.dispatch.bound = kMaxBound + 1; }).Validate(), IA);
  CHECK_THROWS(with([](RackConfig& c) { c.entry.count = kMaxBalancers + 1; }).Validate(), IA);
  CHECK_THROWS(with([](RackConfig& c) { c.entry.count = 0; }).Validate(), IA);
  const auto fill = [](RackConfig& c) {
    c.entry.kind = EntryKind::kNodes;
    c.dispatch.kind = DispatchKind::kWaterFill;
    c.dispatch.metric = LoadMetric::kExpectedWait;
  };
  with(fill).Validate();
  CHECK_THROWS(with([&](RackConfig& c) { fill(c), c.entry.kind = EntryKind::kSwitch; }).Validate(), IA);
  CHECK_THROWS(with([&](RackConfig& c) { fill(c), c.dispatch.metric = LoadMetric::kQueue; }).Validate(), IA);
  CHECK_THROWS(with([&](RackConfig& c) { fill(c), c.dispatch.mix = 1.5; }).Validate(), IA);
  CHECK_THROWS(with([&](RackConfig& c) { fill(c), c.dispatch.horizon = 0; }).Validate(), IA);
  CHECK_THROWS(with([&](RackConfig& c) { fill(c), c.dispatch.period_us = NAN; }).Validate(), IA);
  with([](RackConfig& c) { c.load = dcgym::kernel::kMaxLoad; }).Validate();
  CHECK_THROWS(with([](RackConfig& c) { c.load = std::nextafter(dcgym::kernel::kMaxLoad, 11.0); }).Validate(), IA);
}

}  // namespace

int main() {
  TestValidateChecksEveryBound();
  TestWaterFillTable();
  TestJbsqWithLocalityIsRefused();
  TestInvariantsHoldForEveryPolicyEntryAndDiscipline();
  TestSameSeedSameRunOtherSeedOtherRun();
  TestDynamicsLoseNoTask();
  TestTimeOnlyMovesForward();
  TestUtilisationEqualsTheOfferedLoad();
  return dcgym::check::Report("rack_sim");
}
