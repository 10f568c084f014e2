// Binding of the rack simulator. The config arrives as the plain dict made by
// dcgym.envs.scenario (already validated there); the engine validates again.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "convert.hpp"
#include "dcgym/kernel/check.hpp"
#include "dcgym/rack/game.hpp"
#include "dcgym/rack/rack_sim.hpp"

namespace py = pybind11;
using namespace pybind11::literals;  // "name"_a, for the limits

namespace dcgym::bindings {
namespace {

using namespace dcgym::rack;

RackConfig ParseRackConfig(const py::dict& d) {
  RackConfig c;
  ForEachItem(d, "nodes", "", [&](const py::dict& g, const std::string& f) {
    NodeGroup ng;
    ng.count = Get<uint32_t>(g, "count", f);
    ng.workers = Get<uint32_t>(g, "workers", f);
    ng.speed = Get<double>(g, "speed", f, ng.speed);
    ng.queue_capacity = Get<int64_t>(g, "queue_capacity", f, ng.queue_capacity);
    c.groups.push_back(ng);
  });
  c.service = ParseDistribution(GetDict(d, "service", ""), "service");
  ForEachItem(d, "types", "", [&](const py::dict& td, const std::string& f) {
    TaskType t;
    t.share = Get<double>(td, "share", f);
    t.service = ParseDistribution(GetDict(td, "service", f), Path(f, "service"));
    t.slo_us = Get<double>(td, "slo_us", f, t.slo_us);
    t.priority = Get<int32_t>(td, "priority", f, t.priority);
    t.nodes = Get<std::vector<uint32_t>>(td, "nodes", f, t.nodes);
    c.types.push_back(t);
  });
  c.load = Get<double>(d, "load", "");
  c.seed = Get<uint64_t>(d, "seed", "");
  c.warmup_tasks = Get<uint64_t>(d, "warmup_tasks", "", c.warmup_tasks);
  c.measure_tasks = Get<uint64_t>(d, "measure_tasks", "", c.measure_tasks);
  c.record_tasks = Get<bool>(d, "record_tasks", "", c.record_tasks);

  const auto intra = GetDict(d, "intra_node", "");
  c.intra.discipline = Choice<Discipline>(Get<std::string>(intra, "discipline", "intra_node"), "intra_node.discipline",
                                          {{"fcfs", Discipline::kFcfs}, {"ps", Discipline::kPs}});
  c.intra.quantum_us = Get<double>(intra, "quantum_us", "intra_node", c.intra.quantum_us);
  if (Has(intra, "queueing"))
    c.intra.queueing = Choice<Queueing>(
        Get<std::string>(intra, "queueing", "intra_node"), "intra_node.queueing",
        {{"fifo", Queueing::kFifo}, {"per_type", Queueing::kPerType}, {"priority", Queueing::kPriority}});
  c.intra.switch_cost_us = Get<double>(intra, "switch_cost_us", "intra_node", c.intra.switch_cost_us);

  const auto disp = GetDict(d, "dispatch", "");
  c.dispatch.kind = Choice<DispatchKind>(Get<std::string>(disp, "policy", "dispatch"), "dispatch.policy",
                                         {{"random", DispatchKind::kRandom},
                                          {"ecmp", DispatchKind::kRandom},
                                          {"round_robin", DispatchKind::kRoundRobin},
                                          {"po_d", DispatchKind::kPowerOfD},
                                          {"jsq", DispatchKind::kJsq},
                                          {"jbt", DispatchKind::kJbt},
                                          {"jbsq", DispatchKind::kJbsq},
                                          {"sed", DispatchKind::kSed},
                                          {"wcmp", DispatchKind::kWcmp},
                                          {"lsq", DispatchKind::kLsq},
                                          {"central_fcfs", DispatchKind::kCentralFcfs},
                                          {"oracle", DispatchKind::kOracle},
                                          {"table", DispatchKind::kTable},
                                          {"water_fill", DispatchKind::kWaterFill}});
  c.dispatch.d = Get<uint32_t>(disp, "d", "dispatch", c.dispatch.d);
  c.dispatch.replace = Get<bool>(disp, "replace", "dispatch", c.dispatch.replace);
  if (Has(disp, "metric"))
    c.dispatch.metric = Choice<LoadMetric>(Get<std::string>(disp, "metric", "dispatch"), "dispatch.metric",
                                           {{"outstanding", LoadMetric::kOutstanding},
                                            {"queue", LoadMetric::kQueue},
                                            {"expected_wait", LoadMetric::kExpectedWait},
                                            {"nominal_wait", LoadMetric::kNominalWait},
                                            {"work", LoadMetric::kWork}});
  c.dispatch.rtt_us = Get<double>(disp, "rtt_us", "dispatch", c.dispatch.rtt_us);
  c.dispatch.per_type = Get<bool>(disp, "per_type", "dispatch", c.dispatch.per_type);
  c.dispatch.threshold = Get<double>(disp, "threshold", "dispatch", c.dispatch.threshold);
  c.dispatch.bound = Get<uint32_t>(disp, "bound", "dispatch", c.dispatch.bound);
  if (Has(disp, "by"))
    c.dispatch.sed_by_speed =
        Choice<bool>(Get<std::string>(disp, "by", "dispatch"), "dispatch.by", {{"capacity", true}, {"workers", false}});
  c.dispatch.weights = Get<std::vector<double>>(disp, "weights", "dispatch", c.dispatch.weights);
  c.dispatch.period_us = Get<double>(disp, "period_us", "dispatch", c.dispatch.period_us);
  c.dispatch.horizon = Get<double>(disp, "horizon", "dispatch", c.dispatch.horizon);
  c.dispatch.mix = Get<double>(disp, "mix", "dispatch", c.dispatch.mix);
  c.dispatch.steal = Get<bool>(disp, "steal", "dispatch", c.dispatch.steal);
  c.dispatch.per_task = Get<bool>(disp, "per_task", "dispatch", c.dispatch.per_task);

  if (Has(d, "entry")) {
    const auto e = GetDict(d, "entry", "");
    c.entry.kind = Choice<EntryKind>(
        Get<std::string>(e, "kind", "entry"), "entry.kind",
        {{"switch", EntryKind::kSwitch}, {"balancers", EntryKind::kBalancers}, {"nodes", EntryKind::kNodes}});
    c.entry.count = Get<uint32_t>(e, "count", "entry", c.entry.count);
    c.entry.split = Get<std::vector<double>>(e, "split", "entry", c.entry.split);
  }
  if (Has(d, "load_info")) {
    const auto li = GetDict(d, "load_info", "");
    if (Has(li, "model"))
      c.load_info.kind = Choice<LoadInfoKind>(Get<std::string>(li, "model", "load_info"), "load_info.model",
                                              {{"fresh", LoadInfoKind::kFresh},
                                               {"periodic", LoadInfoKind::kPeriodic},
                                               {"piggyback", LoadInfoKind::kPiggyback},
                                               {"min_only", LoadInfoKind::kMinOnly},
                                               {"proactive", LoadInfoKind::kProactive}});
    c.load_info.period_us = Get<double>(li, "period_us", "load_info", c.load_info.period_us);
    c.load_info.delay_us = Get<double>(li, "delay_us", "load_info", c.load_info.delay_us);
    c.load_info.local_increment = Get<bool>(li, "local_increment", "load_info", c.load_info.local_increment);
  }
  if (Has(d, "migration")) {
    const auto mg = GetDict(d, "migration", "");
    c.migration.delay_us = Get<double>(mg, "delay_us", "migration", c.migration.delay_us);
    c.migration.steal_below = Get<double>(mg, "steal_below", "migration", c.migration.steal_below);
    c.migration.queue_smoothing = Get<double>(mg, "queue_smoothing", "migration", c.migration.queue_smoothing);
  }
  ForEachItem(d, "dynamics", "", [&](const py::dict& e, const std::string& f) {
    DynamicsEvent ev;
    ev.at_us = Get<double>(e, "at_us", f);
    ev.kind = Choice<DynamicsEvent::Kind>(Get<std::string>(e, "kind", f), Path(f, "kind"),
                                          {{"split", DynamicsEvent::kSplit},
                                           {"speed", DynamicsEvent::kSpeed},
                                           {"remove", DynamicsEvent::kRemove},
                                           {"add", DynamicsEvent::kAdd},
                                           {"load", DynamicsEvent::kLoad}});
    ev.nodes = Get<std::vector<uint32_t>>(e, "nodes", f, ev.nodes);
    switch (ev.kind) {
      case DynamicsEvent::kSplit: ev.values = Get<std::vector<double>>(e, "split", f); break;
      case DynamicsEvent::kSpeed: ev.values = {Get<double>(e, "factor", f)}; break;
      case DynamicsEvent::kLoad: ev.values = {Get<double>(e, "load", f)}; break;
      default: break;
    }
    c.dynamics.push_back(ev);
  });
  c.sample_period_us = Get<double>(d, "sample_period_us", "", c.sample_period_us);
  c.Validate();
  return c;
}

// A histogram's summary, then cleared if `reset`: what step_latency and window_latency return.
py::dict SummaryThenClear(kernel::LogHistogram& h, bool reset) {
  py::dict d = Summary(h);
  if (reset) h.Clear();
  return d;
}

py::dict Results(const RackSim& sim) {
  const auto& c = sim.Counters();
  py::dict r;
  r["tasks_arrived"] = c.arrived;
  r["tasks_completed"] = c.completed;
  r["tasks_dropped"] = c.dropped;
  r["tasks_in_flight"] = sim.InFlight();
  r["tasks_warmup"] = c.warmup;
  r["tasks_measured_pending"] = sim.MeasuredPending();
  r["migrations"] = c.migrations;
  r["steals"] = c.steals;
  r["failed_steals"] = c.failed_steals;
  r["events"] = c.events;
  r["sim_time_us"] = sim.Now();
  r["arrival_rate_per_us"] = sim.ArrivalRate();
  r["latency_us"] = Summary(sim.Latency());
  py::list by_class;
  for (uint32_t k = 0; k < sim.NumClasses(); ++k) by_class.append(Summary(sim.LatencyOfClass(k)));
  r["latency_by_class_us"] = by_class;
  const auto& w = sim.Starts();
  py::dict wait;
  wait["count"] = w.started;
  wait["mean"] = w.started ? w.wait_sum / static_cast<double>(w.started) : std::nan("");
  wait["p_wait"] = w.started ? static_cast<double>(w.waited) / static_cast<double>(w.started) : std::nan("");
  r["wait_us"] = wait;

  const uint32_t n = sim.NumNodes();
  py::array_t<uint64_t> completed(n), dropped(n), outstanding(n), migrated_out(n), stolen_from(n);
  py::array_t<double> utilization(n);
  py::array_t<bool> active(n);
  auto cm = completed.mutable_unchecked<1>();
  auto dm = dropped.mutable_unchecked<1>();
  auto om = outstanding.mutable_unchecked<1>();
  auto mm = migrated_out.mutable_unchecked<1>();
  auto sm = stolen_from.mutable_unchecked<1>();
  auto um = utilization.mutable_unchecked<1>();
  auto am = active.mutable_unchecked<1>();
  for (uint32_t i = 0; i < n; ++i) {
    const auto& nc = sim.NodeStats()[i];
    const auto& nd = sim.NodeAt(i);
    cm(i) = nc.completed;
    dm(i) = nc.dropped;
    om(i) = nd.Outstanding();
    mm(i) = nc.migrated_out;
    sm(i) = nc.stolen_from;
    um(i) = sim.Now() > 0 ? nd.BusyTime(sim.Now()) / (nd.Workers() * sim.Now()) : 0.0;
    am(i) = sim.IsActive(i);
  }
  py::dict nodes;
  nodes["completed"] = completed;
  nodes["dropped"] = dropped;
  nodes["outstanding"] = outstanding;
  nodes["migrated_out"] = migrated_out;
  nodes["stolen_from"] = stolen_from;
  nodes["utilization"] = utilization;
  nodes["active"] = active;
  r["nodes"] = nodes;
  return r;
}

}  // namespace
}  // namespace dcgym::bindings

namespace dcgym::bindings {
namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

namespace game = dcgym::rack::game;

// The simulations of a batched step (game::CheckAdvance checks what they must be).
std::vector<RackSim*> BatchSims(const py::list& sims) {
  std::vector<RackSim*> ptrs;
  for (auto s : sims) ptrs.push_back(s.cast<RackSim*>());
  return ptrs;
}

// The optional reward argument: {kind, scale, previous_imbalance (B,), migration_cost, steal_cost,
// failed_steal_cost, drop_cost} (a cost left out or None takes the kind's default).
struct RewardArg {
  bool given = false;
  game::RewardSpec spec;
  double scale = 1.0;
  py::array_t<double, py::array::c_style> previous;
};

RewardArg ParseReward(const py::object& reward, py::ssize_t b) {
  RewardArg r;
  if (reward.is_none()) return r;
  const auto d = Mapping(reward, "reward");
  r.given = true;
  r.spec.kind = game::RewardNamed(Get<std::string>(d, "kind", "reward"), "reward.kind");
  r.spec.costs = game::RewardCosts::Default(r.spec.kind);
  game::RewardCosts& c = r.spec.costs;
  c.migration = Get<double>(d, "migration_cost", "reward", c.migration);
  c.steal = Get<double>(d, "steal_cost", "reward", c.steal);
  c.failed_steal = Get<double>(d, "failed_steal_cost", "reward", c.failed_steal);
  c.drop = Get<double>(d, "drop_cost", "reward", c.drop);
  r.scale = Get<double>(d, "scale", "reward");
  r.previous = Get<py::array_t<double, py::array::c_style>>(d, "previous_imbalance", "reward");
  if (r.previous.ndim() != 1 || r.previous.shape(0) != b)
    throw std::invalid_argument("reward.previous_imbalance: must have shape (" + std::to_string(b) + ",)");
  return r;
}

// An output array of a batched step: its name, where StepBuffers points to it, its shape after the rows.
enum class Tail { kScalar, kNodes, kPairs, kObs, kCosts };  // (), (N), (N, N), (N, obs_dim), (4)

template <typename T>
struct Output {
  const char* name;
  T* game::StepBuffers::* slot;
  Tail tail;
};

constexpr Output<double> kDoubles[] = {{"beliefs", &game::StepBuffers::beliefs, Tail::kPairs},
                                       {"loads", &game::StepBuffers::loads, Tail::kNodes},
                                       {"latency_mean_us", &game::StepBuffers::latency_mean, Tail::kScalar},
                                       {"latency_p99_us", &game::StepBuffers::latency_p99, Tail::kScalar},
                                       {"now_us", &game::StepBuffers::now, Tail::kScalar},
                                       {"imbalance", &game::StepBuffers::imbalance, Tail::kScalar},
                                       {"cost_counts", &game::StepBuffers::cost_counts, Tail::kCosts},
                                       {"reward", &game::StepBuffers::reward, Tail::kScalar}};
constexpr Output<uint64_t> kCounts[] = {{"migrate", &game::StepBuffers::migrate, Tail::kPairs},
                                        {"steal", &game::StepBuffers::steal, Tail::kPairs},
                                        {"migrations", &game::StepBuffers::migrations, Tail::kNodes},
                                        {"steals", &game::StepBuffers::steals, Tail::kNodes},
                                        {"failed_steals", &game::StepBuffers::failed_steals, Tail::kNodes},
                                        {"dropped", &game::StepBuffers::dropped, Tail::kNodes},
                                        {"completed_by_node", &game::StepBuffers::completed_by_node, Tail::kNodes},
                                        {"completed", &game::StepBuffers::completed, Tail::kScalar}};
constexpr Output<float> kObservations[] = {{"obs", &game::StepBuffers::obs, Tail::kObs}};

// A batched step, checked before any simulation changes: where it writes (arrays allocated here, or the caller's),
// the rows of those arrays the simulations write, and the reward.
struct BatchStep {
  py::dict arrays;
  game::StepBuffers buffers;
  py::array_t<int64_t, py::array::c_style | py::array::forcecast> rows;  // keeps buffers.rows alive
  RewardArg reward;
  py::ssize_t n = 0, dim = 0, num_rows = 0;

  std::vector<py::ssize_t> Shape(Tail tail) const {
    switch (tail) {
      case Tail::kScalar: return {num_rows};
      case Tail::kNodes: return {num_rows, n};
      case Tail::kPairs: return {num_rows, n, n};
      case Tail::kObs: return {num_rows, n, dim};
      default: return {num_rows, 4};
    }
  }

  // Whether the step writes `o`: observations with an ObsSpec, the reward with a reward, everything else always.
  template <typename T>
  bool Writes(const Output<T>& o) const {
    return (o.tail != Tail::kObs || dim > 0) && (std::strcmp(o.name, "reward") != 0 || reward.given);
  }

  template <typename T>
  void Allocate(const Output<T>& o) {
    if (!Writes(o)) return;
    py::array_t<T> a(Shape(o.tail));
    buffers.*o.slot = a.mutable_data();
    arrays[o.name] = a;
  }

  // The caller's array named o.name, if `arrays` holds it: of dtype T, C-contiguous, writeable, of its shape.
  template <typename T>
  bool Bind(const Output<T>& o) {
    if (!Writes(o) || !arrays.contains(o.name)) return false;
    const auto shape = Shape(o.tail);
    py::object value = arrays[o.name];
    bool fits = py::isinstance<py::array_t<T>>(value);
    if (fits) {
      auto a = py::reinterpret_borrow<py::array>(value);
      fits = (a.flags() & py::array::c_style) && a.writeable() && a.ndim() == static_cast<py::ssize_t>(shape.size());
      for (size_t i = 0; fits && i < shape.size(); ++i) fits = a.shape(static_cast<py::ssize_t>(i)) == shape[i];
      if (fits) buffers.*o.slot = static_cast<T*>(a.mutable_data());
    }
    if (!fits) {
      std::string want;
      for (auto x : shape) want += (want.empty() ? "" : ", ") + std::to_string(x);
      throw std::invalid_argument(std::string("out.") + o.name + ": must be a writeable C-contiguous " +
                                  std::string(py::str(py::dtype::of<T>())) + " array of shape (" + want +
                                  (shape.size() == 1 ? ",)" : ")"));
    }
    return true;
  }
};

// The arrays of a step of B simulations of N nodes: beliefs (B, N, N), true loads (B, N), decision counts (B, N, N)
// x 2, per-node counters (B, N), the step's latency statistics (B,), the imbalance (B,) and cost counts (B, 4);
// with `obs.dim` > 0, observations (B, N, dim); with a reward, the team reward (B,) (previous_imbalance updated in
// place).
//
// With `out` (a dict of arrays of R rows, allocated once by the caller, as PufferLib's shared buffers) the step
// writes into those arrays in place and returns `out` itself, allocating nothing. `out` holds now_us, whose length
// is R, and any of the other names (one left out is not written; an unknown one is refused). `rows` (one per
// simulation, distinct, in [0, R)) says which row each simulation writes, so a step of some of the caller's copies
// fills their rows only, and previous_imbalance has R entries; without `rows`, simulation k writes row k, R = B.
BatchStep PrepareStep(py::ssize_t b, py::ssize_t n, const game::ObsSpec& obs, const py::object& reward,
                      const py::object& out, const py::object& rows) {
  BatchStep step;
  step.n = n;
  step.dim = static_cast<py::ssize_t>(obs.dim);
  step.num_rows = b;
  step.reward.given = !reward.is_none();
  if (out.is_none()) {
    if (!rows.is_none()) throw std::invalid_argument("rows: only with out (rows of the caller's arrays)");
    for (const auto& o : kDoubles) step.Allocate(o);
    for (const auto& o : kCounts) step.Allocate(o);
    for (const auto& o : kObservations) step.Allocate(o);
  } else {
    if (!py::isinstance<py::dict>(out)) throw std::invalid_argument("out: must be a dict of arrays, or None");
    step.arrays = out.cast<py::dict>();
    if (!step.arrays.contains("now_us")) throw std::invalid_argument("out.now_us: missing (its length is R)");
    const auto now = py::reinterpret_borrow<py::object>(step.arrays["now_us"]);
    step.num_rows =
        py::isinstance<py::array>(now) && now.cast<py::array>().ndim() == 1 ? now.cast<py::array>().shape(0) : 0;
    if (!rows.is_none()) {
      step.rows = rows.cast<decltype(step.rows)>();
      if (step.rows.ndim() != 1 || step.rows.shape(0) != b)
        throw std::invalid_argument("rows: must have shape (" + std::to_string(b) + ",), one per simulation");
      std::vector<bool> taken(static_cast<size_t>(step.num_rows), false);
      for (py::ssize_t k = 0; k < b; ++k) {
        const int64_t row = step.rows.at(k);
        if (row < 0 || row >= step.num_rows || taken[static_cast<size_t>(row)])
          throw std::invalid_argument("rows: must be distinct rows of out in [0, " + std::to_string(step.num_rows) +
                                      "), got " + std::to_string(row) + " for simulation " + std::to_string(k));
        taken[static_cast<size_t>(row)] = true;
      }
      step.buffers.rows = step.rows.data();
    } else if (step.num_rows != b) {
      throw std::invalid_argument("out.now_us: must have shape (" + std::to_string(b) +
                                  ",), one row per simulation (or pass rows)");
    }
    size_t bound = 0;
    for (const auto& o : kDoubles) bound += step.Bind(o);
    for (const auto& o : kCounts) bound += step.Bind(o);
    for (const auto& o : kObservations) bound += step.Bind(o);
    if (bound != step.arrays.size())
      for (auto item : step.arrays) {
        const std::string key = py::str(item.first);
        bool known = false;
        for (const auto& o : kDoubles) known = known || (key == o.name && step.Writes(o));
        for (const auto& o : kCounts) known = known || key == o.name;
        known = known || (key == "obs" && step.dim > 0);
        if (!known) throw std::invalid_argument("out." + key + ": not an array this step writes");
      }
    if (step.reward.given && !step.buffers.reward)
      throw std::invalid_argument("out.reward: missing (a reward is given)");
  }
  step.reward = ParseReward(reward, step.num_rows);
  return step;
}

// Advance every simulation by `duration_us` (the GIL released) into the step's arrays, and return them.
py::dict AdvanceBatch(const std::vector<RackSim*>& ptrs, double duration_us, const game::ObsSpec& obs,
                      BatchStep& step) {
  RewardArg& reward = step.reward;
  const double scale = reward.given ? reward.scale : obs.dim > 0 ? obs.scale : 1.0;
  double* previous = reward.given ? reward.previous.mutable_data() : nullptr;
  {
    py::gil_scoped_release release;
    game::Advance(ptrs, duration_us, obs, scale, reward.given ? &reward.spec : nullptr, previous, step.buffers);
  }
  return step.arrays;
}

// One heartbeat of B rack simulations in one call: set every node's tables
// from probabilities of shape (B, N, N), then AdvanceBatch.
py::dict StepBatch(const py::list& sims, const Array& migration, const py::object& stealing, double duration_us,
                   const py::object& reward, const py::object& out, const py::object& rows) {
  const auto ptrs = BatchSims(sims);
  game::CheckAdvance(ptrs, duration_us, game::ObsSpec{});
  const py::ssize_t b = static_cast<py::ssize_t>(ptrs.size());
  const uint32_t n = ptrs[0]->NumNodes();
  CheckShape(migration, {b, n, n}, "migration");
  Array steal;
  const bool has_steal = !stealing.is_none();
  if (has_steal) {
    steal = stealing.cast<Array>();
    CheckShape(steal, {b, n, n}, "stealing");
  }
  BatchStep step = PrepareStep(b, n, game::ObsSpec{}, reward, out, rows);
  const size_t nn = static_cast<size_t>(n) * n;
  for (py::ssize_t k = 0; k < b; ++k)  // validate every table before changing anything
    for (uint32_t i = 0; i < n; ++i) {
      RackSim::CheckTableRow(migration.data() + k * nn + i * n, n, i, "migration");
      if (has_steal) RackSim::CheckTableRow(steal.data() + k * nn + i * n, n, i, "stealing");
    }
  for (py::ssize_t k = 0; k < b; ++k)
    for (uint32_t i = 0; i < n; ++i) {
      ptrs[k]->SetMigrationTable(i, migration.data() + k * nn + i * n);
      if (has_steal) ptrs[k]->SetStealTable(i, steal.data() + k * nn + i * n);
    }
  return AdvanceBatch(ptrs, duration_us, game::ObsSpec{}, step);
}

// rack_v0's step in one call: actions (B, N, 2N) (N migration then N
// stealing entries per node, logits or weights, float32 or float64) become
// tables in C++, then AdvanceBatch also writes the observations.
py::dict StepGame(const py::list& sims, const py::array& actions, double duration_us, bool logits, double max_logit,
                  double obs_scale, double obs_clip, int64_t obs_dim, const py::object& reward, const py::object& out,
                  const py::object& rows) {
  const auto ptrs = BatchSims(sims);
  const game::ObsSpec obs{obs_scale, static_cast<float>(obs_clip), Count<size_t>(obs_dim, "obs_dim")};
  game::CheckAdvance(ptrs, duration_us, obs);
  const auto b = static_cast<py::ssize_t>(ptrs.size());
  const uint32_t n = ptrs[0]->NumNodes();
  CheckShape(actions, {b, n, 2 * n}, "actions");
  BatchStep step = PrepareStep(b, n, obs, reward, out, rows);
  if (py::isinstance<py::array_t<float>>(actions)) {
    auto a = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(actions);
    game::SetTablesFromActions(ptrs, a.data(), logits, max_logit);
  } else {
    auto a = Array::ensure(actions);
    if (!a) throw std::invalid_argument("actions: must be an array of numbers");
    game::SetTablesFromActions(ptrs, a.data(), logits, max_logit);
  }
  return AdvanceBatch(ptrs, duration_us, obs, step);
}

}  // namespace
}  // namespace dcgym::bindings

void BindRack(py::module_& m) {
  m.def("step_rack_batch", &dcgym::bindings::StepBatch, py::arg("sims"), py::arg("migration"),
        py::arg("stealing") = py::none(), py::arg("duration_us"), py::arg("reward") = py::none(),
        py::arg("out") = py::none(), py::arg("rows") = py::none(),
        "Set tables, advance every simulation by duration_us in one C++ call (GIL released) and return the "
        "stacked observations: beliefs (B, N, N), loads (B, N), migrate/steal decision counts (B, N, N), "
        "migrations/steals/failed_steals/dropped/completed_by_node (B, N), the step's latency_mean_us, "
        "latency_p99_us, completed, now_us and imbalance (B,) (2N sum (x - mean x)^2 of x = loads x scale) and "
        "cost_counts (B, 4): migrations, steal requests, failed steals, drops. With reward = {kind, scale, "
        "previous_imbalance (B,), costs...}, also reward (B,), Malcolm's team reward (rack/game.hpp), and "
        "previous_imbalance updated in place. Decision counts and step latencies are reset. With out, a dict of "
        "preallocated arrays of R rows (now_us and any of the names above), the step writes into them in place and "
        "returns out (allocating nothing); rows (B,) then says which row each simulation writes (previous_imbalance "
        "has R entries).");
  m.def("step_rack_game", &dcgym::bindings::StepGame, py::arg("sims"), py::arg("actions"), py::arg("duration_us"),
        py::arg("logits"), py::arg("max_logit"), py::arg("obs_scale"), py::arg("obs_clip"), py::arg("obs_dim"),
        py::arg("reward") = py::none(), py::arg("out") = py::none(), py::arg("rows") = py::none(),
        "rack_v0's step: actions (B, N, 2N) (per node N migration then N stealing logits, or weights) become the "
        "tables in C++ (softmax of logits clipped to +-max_logit, or weights normalised; an invalid action raises "
        "ValueError before any table changes), then as step_rack_batch (out and rows too), adding obs (B, N, "
        "obs_dim) float32: beliefs x obs_scale, own true load x obs_scale, clipped to [0, obs_clip], remaining "
        "columns 0.");
  m.def(
      "rack_imbalance",
      [](const py::array_t<double, py::array::c_style | py::array::forcecast>& loads, double scale) {
        if (loads.ndim() != 1) throw std::invalid_argument("loads: must be a vector");
        return dcgym::rack::game::Imbalance(loads.data(), static_cast<uint32_t>(loads.shape(0)), scale);
      },
      py::arg("loads"), py::arg("scale"),
      "Malcolm eq. (1) over ordered pairs: 2N sum (x - mean x)^2 of x = loads x scale (rack/game.hpp).");
  m.def(
      "rack_reward_costs",
      [](const std::string& kind) {
        const auto c = dcgym::rack::game::RewardCosts::Default(dcgym::rack::game::RewardNamed(kind, "reward"));
        return py::make_tuple(c.migration, c.steal, c.failed_steal, c.drop);
      },
      py::arg("kind"),
      "The default costs of a team-reward variant: (per migration, per steal request, per failed steal, per drop).");
  m.attr("rack_rewards") = py::tuple(dcgym::bindings::NameList(dcgym::rack::game::kRewardNames));
  using dcgym::rack::RackSim;
  namespace b = dcgym::bindings;

  m.def(
      "check_rack_config", [](const py::dict& d) { b::ParseRackConfig(d); }, py::arg("config"),
      "Validate a rack config dict in the engine; raises ValueError naming the bad field.");

  py::class_<RackSim>(m, "RackSim", "A rack simulation (see dcgym.cpp_core.RackSim).")
      .def(py::init([](const py::dict& d) { return std::make_unique<RackSim>(b::ParseRackConfig(d)); }),
           py::arg("config"))
      .def_property_readonly_static(
          "limits",
          [](py::object) {
            namespace r = dcgym::rack;
            return py::dict("nodes"_a = r::kMaxNodes, "workers"_a = r::kMaxWorkers, "d"_a = r::kMaxSampled,
                            "bound"_a = r::kMaxBound, "balancers"_a = r::kMaxBalancers,
                            "task_types"_a = r::kMaxTaskTypes, "load"_a = dcgym::kernel::kMaxLoad);
          },
          "The largest value of each bounded config field (rack/config.hpp): the schema's bounds.")
      .def(
          "run_tasks",
          [](RackSim& s, int64_t n) {
            const auto tasks = b::Count(n, "tasks");
            py::gil_scoped_release release;
            s.RunTasks(tasks);
          },
          py::arg("n"), "Run until n more tasks have arrived. Releases the GIL.")
      .def(
          "run_until",
          [](RackSim& s, double t) {
            py::gil_scoped_release release;
            s.RunUntil(t);
          },
          py::arg("time_us"), "Run until simulated time time_us. Releases the GIL.")
      .def(
          "set_tables",
          [](RackSim& s, py::array_t<double, py::array::c_style | py::array::forcecast> migration,
             py::object stealing) {
            const uint32_t n = s.NumNodes();
            b::CheckShape(migration, {n, n}, "migration");
            for (uint32_t i = 0; i < n; ++i) s.SetMigrationTable(i, migration.data() + static_cast<size_t>(i) * n);
            if (!stealing.is_none()) {
              auto st = stealing.cast<py::array_t<double, py::array::c_style | py::array::forcecast>>();
              b::CheckShape(st, {n, n}, "stealing");
              for (uint32_t i = 0; i < n; ++i) s.SetStealTable(i, st.data() + static_cast<size_t>(i) * n);
            }
          },
          py::arg("migration"), py::arg("stealing") = py::none(),
          "Set every node's migration (and stealing) probabilities: arrays of shape (nodes, nodes), rows summing "
          "to 1; row i, column i is 'accept' (migration) or 'no steal' (stealing).")
      .def(
          "decision_counts",
          [](RackSim& s, bool reset) {
            auto& dc = s.Decisions();
            const py::ssize_t n = dc.n;
            py::dict out;
            out["migrate"] = py::array_t<uint64_t>({n, n}, dc.migrate.data());
            out["steal"] = py::array_t<uint64_t>({n, n}, dc.steal.data());
            out["migrations"] = py::array_t<uint64_t>(n, dc.migrations.data());
            out["steals"] = py::array_t<uint64_t>(n, dc.steals.data());
            out["failed_steals"] = py::array_t<uint64_t>(n, dc.failed_steals.data());
            out["dropped"] = py::array_t<uint64_t>(n, dc.dropped.data());
            out["completed"] = py::array_t<uint64_t>(n, dc.completed.data());
            if (reset) dc.Reset();
            return out;
          },
          py::arg("reset") = true,
          "Decisions of the nodes' load managers since the last reset (entry 'nodes'): migrate[i, j] and "
          "steal[i, j] count node i choosing j; per-node migrations, steals, failed steals and dropped tasks.")
      .def(
          "beliefs",
          [](const RackSim& s) {
            const uint32_t v = s.NumViewers(), n = s.NumNodes();
            py::array_t<double> out({static_cast<py::ssize_t>(v), static_cast<py::ssize_t>(n)});
            auto o = out.mutable_unchecked<2>();
            for (uint32_t a = 0; a < v; ++a)
              for (uint32_t j = 0; j < n; ++j) o(a, j) = s.Belief(a, j);
            return out;
          },
          "Loads each dispatcher (switch, balancer or node) believes every node has, in the dispatch metric.")
      .def(
          "true_loads",
          [](const RackSim& s) {
            py::array_t<double> out(s.NumNodes());
            auto o = out.mutable_unchecked<1>();
            for (uint32_t j = 0; j < s.NumNodes(); ++j) o(j) = s.TrueLoad(j);
            return out;
          },
          "Every node's current load in the dispatch metric.")
      .def(
          "take_samples",
          [](RackSim& s) {
            const auto& t = s.SampleTimes();
            const py::ssize_t rows = static_cast<py::ssize_t>(t.size()), n = s.NumNodes();
            py::array_t<double> times(rows, t.data());
            py::array_t<float> loads({rows, n}, s.Samples().data());
            s.ClearSamples();
            return py::make_tuple(times, loads);
          },
          "(times, outstanding tasks per node) recorded every sample_period_us since the last call.")
      .def(
          "step_latency",
          [](RackSim& s, bool reset) {
            s.EnableStepLatency();
            return b::SummaryThenClear(s.StepLatency(), reset);
          },
          py::arg("reset") = true,
          "Latency summary of the tasks completed since the last reset (warm-up included); the first call "
          "starts the recording. An environment step and a controller with a latency reward reset it too: "
          "measure a window with window_latency.")
      .def(
          "window_latency",
          [](RackSim& s, bool reset) {
            s.EnableWindowLatency();
            return b::SummaryThenClear(s.WindowLatency(), reset);
          },
          py::arg("reset") = true,
          "Latency summary of the tasks completed since the last reset (warm-up included), from a histogram "
          "that only this call resets (not an environment step, not a controller's latency reward); the "
          "first call starts the recording.")
      .def_property_readonly("now_us", &RackSim::Now)
      .def_property_readonly("num_nodes", &RackSim::NumNodes)
      .def("results", &b::Results, "Counters and latency statistics as a dict.")
      .def(
          "records",
          [](const RackSim& s) {
            const auto& a = s.RecordedArrivals();
            return py::dict("arrival_us"_a = py::array_t<double>(a.size(), a.data()),
                            "size_us"_a = py::array_t<double>(s.RecordedSizes().size(), s.RecordedSizes().data()));
          },
          "With record_tasks: arrival_us and size_us (work at speed 1) of each measured task, in arrival order.")
      .def(
          "latency_histogram", [](const RackSim& s) { return b::HistogramArrays(s.Latency()); },
          "(lower bucket edges in us, counts) of the measured latencies.");
}
