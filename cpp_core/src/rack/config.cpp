#include "dcgym/rack/config.hpp"

#include <cmath>
#include <stdexcept>

#include "dcgym/kernel/check.hpp"

namespace dcgym::rack {
namespace {

using kernel::Fail;
using kernel::Str;

void RequireCount(uint64_t v, uint64_t lo, uint64_t hi, const std::string& field) {
  if (v < lo || v > hi) Fail(field, "must be in [" + Str(lo) + ", " + Str(hi) + "], got " + Str(v));
}

}  // namespace

uint32_t RackConfig::NumNodes() const {
  uint64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return static_cast<uint32_t>(n);
}

std::vector<TaskType> RackConfig::EffectiveTypes() const {
  if (!types.empty()) return types;
  TaskType t;
  t.service = service;
  return {t};
}

double RackConfig::MeanSize() const {
  if (types.empty()) return service.Mean();
  double total = 0, mean = 0;
  for (const auto& t : types) total += t.share;
  for (const auto& t : types) mean += t.share / total * t.service.Mean();
  return mean;
}

double RackConfig::Capacity() const {
  double c = 0;
  for (const auto& g : groups) c += g.count * g.workers * g.speed;
  return c;
}

namespace {

void RequireFinite(double v, double lo, const std::string& field, bool strict = false) {
  if (!std::isfinite(v) || (strict ? !(v > lo) : !(v >= lo)))
    Fail(field, std::string("must be a finite number ") + (strict ? "> " : ">= ") + Str(lo) + ", got " + Str(v));
}

void RequireWeights(const std::vector<double>& w, size_t size, const std::string& field, const std::string& of) {
  if (w.size() != size) Fail(field, "needs one value per " + of + " (" + Str(size) + "), got " + Str(w.size()));
  double total = 0;
  for (size_t k = 0; k < w.size(); ++k) {
    RequireFinite(w[k], 0, field + "[" + Str(k) + "]");
    total += w[k];
  }
  if (!(total > 0)) Fail(field, "values must not all be 0");
}

const char* EntryName(EntryKind k) {
  switch (k) {
    case EntryKind::kBalancers: return "balancers";
    case EntryKind::kNodes: return "nodes";
    default: return "switch";
  }
}

}  // namespace

void RackConfig::Validate() const {
  if (groups.empty()) Fail("nodes", "needs at least one node group");
  uint64_t total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const std::string f = "nodes[" + std::to_string(i) + "]";
    RequireCount(g.count, 1, kMaxNodes, f + ".count");
    RequireCount(g.workers, 1, kMaxWorkers, f + ".workers");
    RequireFinite(g.speed, 0, f + ".speed", true);
    if (g.queue_capacity < -1)
      Fail(f + ".queue_capacity", "must be >= 0 or -1 (unbounded), got " + Str(g.queue_capacity));
    total += g.count;
  }
  if (total > kMaxNodes) Fail("nodes", "at most " + Str(kMaxNodes) + " nodes, got " + Str(total));
  const uint32_t n = static_cast<uint32_t>(total);
  if (!(load > 0) || !(load <= kernel::kMaxLoad))
    Fail("load", "must be in (0, " + Str(kernel::kMaxLoad) + "], got " + Str(load));
  if (!(service.Mean() > 0)) Fail("service", "mean must be positive");
  if (types.size() > kMaxTaskTypes)
    Fail("types", "at most " + Str(kMaxTaskTypes) + " task types, got " + Str(types.size()));
  double share_total = 0;
  for (size_t k = 0; k < types.size(); ++k) {
    const auto& t = types[k];
    const std::string f = "types[" + Str(k) + "]";
    RequireFinite(t.share, 0, f + ".share");
    share_total += t.share;
    RequireFinite(t.slo_us, 0, f + ".slo_us", true);
    for (uint32_t i : t.nodes)
      if (i >= n) Fail(f + ".nodes", "node " + Str(i) + " does not exist (nodes are 0.." + Str(n - 1) + ")");
  }
  if (!types.empty() && !(share_total > 0)) Fail("types", "shares must not all be 0");
  if (service.NumClasses() > kMaxTaskTypes) Fail("service", "at most " + Str(kMaxTaskTypes) + " mixture components");
  if (intra.queueing != Queueing::kFifo && types.size() < 2)
    Fail("intra_node.queueing", "per-type or priority queues need at least two task types");
  if (intra.queueing != Queueing::kFifo && intra.discipline == Discipline::kPs && intra.quantum_us == 0)
    Fail("intra_node.queueing", "ideal processor sharing has no queue to order; use fcfs or a quantum");
  if (dispatch.per_type && (types.size() < 2 || dispatch.metric != LoadMetric::kOutstanding))
    Fail("dispatch.per_type", "needs at least two task types and metric 'outstanding'");
  if (dispatch.kind == DispatchKind::kCentralFcfs && types.size() > 1)
    Fail("dispatch.policy", "central_fcfs serves a single FCFS queue; task types are not supported");
  // The switch's jbsq queue refills a node with its oldest task whatever the task's type: no locality.
  if (dispatch.kind == DispatchKind::kJbsq)
    for (const auto& type : types)
      if (!type.nodes.empty())
        Fail("dispatch.policy",
             "jbsq refills a node with the switch's oldest task, whatever its type; task types "
             "with nodes (locality) are not supported");
  RequireFinite(intra.quantum_us, 0, "intra_node.quantum_us");
  RequireFinite(intra.switch_cost_us, 0, "intra_node.switch_cost_us");
  if (intra.discipline == Discipline::kFcfs && (intra.quantum_us > 0 || intra.switch_cost_us > 0))
    Fail("intra_node.quantum_us", "applies to discipline 'ps' only");
  if (intra.quantum_us == 0 && intra.switch_cost_us > 0) Fail("intra_node.switch_cost_us", "needs a quantum_us > 0");

  // Entry point. The count and the dispatch parameters below are checked whatever the entry or policy that
  // uses them: a value out of range is wrong in any config.
  RequireCount(entry.count, 1, kMaxBalancers, "entry.count");
  switch (entry.kind) {
    case EntryKind::kSwitch:
      if (!entry.split.empty()) Fail("entry.split", "applies to entry 'balancers' or 'nodes' only");
      break;
    case EntryKind::kBalancers:
      if (!entry.split.empty()) RequireWeights(entry.split, entry.count, "entry.split", "balancer");
      break;
    case EntryKind::kNodes:
      if (!entry.split.empty()) RequireWeights(entry.split, n, "entry.split", "node");
      break;
  }

  // Dispatch policy.
  const auto kind = dispatch.kind;
  RequireCount(dispatch.d, 1, kMaxSampled, "dispatch.d");
  RequireCount(dispatch.bound, 1, kMaxBound, "dispatch.bound");
  if (kind == DispatchKind::kPowerOfD && !dispatch.replace && dispatch.d > total)
    Fail("dispatch.d",
         "without replacement must be <= the number of nodes (" + Str(total) + "), got " + Str(dispatch.d));
  RequireFinite(dispatch.rtt_us, 0, "dispatch.rtt_us");
  if (kind != DispatchKind::kCentralFcfs && dispatch.rtt_us > 0)
    Fail("dispatch.rtt_us", "applies to policy 'central_fcfs' only");
  if (kind == DispatchKind::kCentralFcfs && intra.discipline != Discipline::kFcfs)
    Fail("intra_node.discipline", "policy 'central_fcfs' serves one global FCFS queue; use 'fcfs'");
  if ((kind == DispatchKind::kCentralFcfs || kind == DispatchKind::kJbsq) && entry.kind != EntryKind::kSwitch)
    Fail("dispatch.policy",
         std::string("central_fcfs and jbsq queue tasks at one switch; entry is '") + EntryName(entry.kind) + "'");
  if ((kind == DispatchKind::kTable || kind == DispatchKind::kWaterFill) && entry.kind != EntryKind::kNodes)
    Fail("dispatch.policy", "'table' and 'water_fill' set the migration tables of nodes; they need entry 'nodes'");
  if (kind == DispatchKind::kWaterFill && !WaitMetric(dispatch.metric))
    Fail("dispatch.metric", "policy 'water_fill' fills levels of expected wait; use 'expected_wait' or 'nominal_wait'");
  RequireFinite(dispatch.period_us, 0, "dispatch.period_us", true);
  RequireFinite(dispatch.horizon, 0, "dispatch.horizon", true);
  if (!(dispatch.mix >= 0 && dispatch.mix <= 1)) Fail("dispatch.mix", "must be in [0, 1], got " + Str(dispatch.mix));
  if (kind == DispatchKind::kJbt && !std::isfinite(dispatch.threshold))
    Fail("dispatch.threshold", "must be finite, got " + Str(dispatch.threshold));
  if (kind == DispatchKind::kWcmp && !dispatch.weights.empty())
    RequireWeights(dispatch.weights, n, "dispatch.weights", "node");

  // Load information.
  RequireFinite(load_info.period_us, 0, "load_info.period_us", true);
  RequireFinite(load_info.delay_us, 0, "load_info.delay_us");
  if (load_info.kind == LoadInfoKind::kMinOnly && entry.kind == EntryKind::kNodes)
    Fail("load_info.model",
         "'min_only' tracks the replies a dispatcher receives; it needs entry 'switch' or 'balancers'");

  // Migration and stealing.
  RequireFinite(migration.delay_us, 0, "migration.delay_us");
  RequireFinite(migration.steal_below, 0, "migration.steal_below");
  if (!(migration.queue_smoothing >= 0 && migration.queue_smoothing < 1))
    Fail("migration.queue_smoothing", "must be in [0, 1), got " + Str(migration.queue_smoothing));

  // Dynamics, replayed on the set of active nodes so it never becomes empty.
  std::vector<char> active(n, 1);
  uint32_t num_active = n;
  double last = 0;
  for (size_t k = 0; k < dynamics.size(); ++k) {
    const auto& e = dynamics[k];
    const std::string f = "dynamics[" + Str(k) + "]";
    RequireFinite(e.at_us, last, f + ".at_us");
    last = e.at_us;
    for (uint32_t i : e.nodes)
      if (i >= n) Fail(f + ".nodes", "node " + Str(i) + " does not exist (nodes are 0.." + Str(n - 1) + ")");
    switch (e.kind) {
      case DynamicsEvent::kSplit:
        if (entry.kind == EntryKind::kSwitch) Fail(f, "a traffic split needs entry 'balancers' or 'nodes'");
        RequireWeights(e.values, entry.kind == EntryKind::kBalancers ? entry.count : n, f + ".split",
                       entry.kind == EntryKind::kBalancers ? "balancer" : "node");
        break;
      case DynamicsEvent::kSpeed:
        if (e.values.size() != 1) Fail(f + ".factor", "needs one speed factor");
        RequireFinite(e.values[0], 0, f + ".factor", true);
        if (e.nodes.empty()) Fail(f + ".nodes", "needs at least one node");
        break;
      case DynamicsEvent::kRemove:
      case DynamicsEvent::kAdd:
        if (e.nodes.empty()) Fail(f + ".nodes", "needs at least one node");
        for (uint32_t i : e.nodes) {
          const char want = e.kind == DynamicsEvent::kAdd;
          if (active[i] != want) {
            active[i] = want;
            num_active += want ? 1 : -1;
          }
        }
        if (num_active == 0) Fail(f + ".nodes", "removes the last active node");
        for (size_t k = 0; k < types.size(); ++k) {
          bool any = types[k].nodes.empty() && num_active > 0;
          for (uint32_t i : types[k].nodes) any |= static_cast<bool>(active[i]);
          if (!any) Fail(f + ".nodes", "leaves task type " + Str(k) + " with no active node it may run on");
        }
        break;
      case DynamicsEvent::kLoad:
        if (e.values.size() != 1) Fail(f + ".load", "needs one load");
        if (!(e.values[0] > 0) || !(e.values[0] <= kernel::kMaxLoad))
          Fail(f + ".load", "must be in (0, " + Str(kernel::kMaxLoad) + "], got " + Str(e.values[0]));
        break;
    }
  }
  RequireFinite(sample_period_us, 0, "sample_period_us");
}

}  // namespace dcgym::rack
