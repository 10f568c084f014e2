// Configuration of a rack simulation, as the engine receives it.
//
// The Python side validates scenario files first (envs/scenario.py); this is
// the engine's own second check, so a bad config coming from any caller is
// refused with std::invalid_argument naming the field, never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcgym/kernel/distribution.hpp"

namespace dcgym::rack {

// The bounds of a rack config, checked by RackConfig::Validate() and exported by the binding
// (RackSim.limits), whose values the scenario schema's fields take as their bounds.
inline constexpr uint32_t kMaxNodes = 1u << 20;    // nodes in the rack, every group together
inline constexpr uint32_t kMaxWorkers = 1u << 16;  // workers of one node
inline constexpr uint32_t kMaxSampled = 64;        // po_d: the d nodes sampled per task
inline constexpr uint32_t kMaxBound = 1u << 20;    // jbsq: outstanding tasks per worker
inline constexpr uint32_t kMaxBalancers = 4096;    // entry balancers: their count
inline constexpr uint32_t kMaxTaskTypes = 65535;   // task types (and mixture components of one service)

// A group of identical nodes.
struct NodeGroup {
  uint32_t count = 1;
  uint32_t workers = 1;
  double speed = 1.0;           // work units per microsecond per worker
  int64_t queue_capacity = -1;  // tasks a node holds beyond its busy workers; -1 = unbounded
};

enum class Discipline {
  kFcfs,  // one queue served first-come first-served by the node's workers
  kPs,    // processor sharing: egalitarian if quantum_us == 0, else round-robin slices
};

// How a node picks the next waiting task when it has several task types.
enum class Queueing {
  kFifo,      // one queue, first come first served
  kPerType,   // a queue per type; the head that waited longest relative to its SLO (Shinjuku)
  kPriority,  // a queue per type; strict priority, lower value first
};

struct IntraNodeConfig {
  Discipline discipline = Discipline::kFcfs;
  Queueing queueing = Queueing::kFifo;
  double quantum_us = 0;      // ps only: 0 = ideal egalitarian sharing
  double switch_cost_us = 0;  // ps with quantum: worker time lost per preemption
};

// How the load of a node is measured, wherever loads are compared.
enum class LoadMetric {
  kOutstanding,   // tasks at the node, waiting or in service (RackSched's counter)
  kQueue,         // tasks waiting, not in service (Malcolm's baselines)
  kExpectedWait,  // outstanding x estimated mean service time / workers (Malcolm §3.2)
  kNominalWait,   // outstanding x nominal mean service time (mean size / speed) / workers: no estimate's noise
  kWork,          // total service demand of the outstanding tasks, us (RackSched INT3)
};

/// The metrics whose loads are expected waits (us): the unit of water-filling's levels and rack_v0's default.
inline bool WaitMetric(LoadMetric m) { return m == LoadMetric::kExpectedWait || m == LoadMetric::kNominalWait; }

enum class DispatchKind {
  kRandom,       // uniform over nodes (ECMP is the same in a simulator without flows)
  kRoundRobin,   // cyclic over nodes
  kPowerOfD,     // least loaded of d sampled nodes, ties to the first sampled
  kJsq,          // least loaded node, ties at random ("Shortest")
  kJbt,          // a random node among those below `threshold`, else any random node
  kJbsq,         // join-bounded-shortest-queue (R2P2): at most `bound` outstanding tasks per
                 // worker of a node, the rest wait at the dispatcher
  kSed,          // shortest expected delay: (load + 1) / rate, rate = workers or workers x speed
  kWcmp,         // static weights
  kLsq,          // local shortest queue: the dispatcher's own counts of what it sent
  kCentralFcfs,  // one global FCFS queue over every worker (the ideal reference)
  kOracle,       // knows every node's remaining work: least (work + size) / capacity
  kTable,        // node entry only: migration probabilities set from outside (Malcolm)
  kWaterFill,    // node entry only: tables the engine sets every heartbeat by water-filling
};

struct DispatchConfig {
  DispatchKind kind = DispatchKind::kRandom;
  uint32_t d = 2;       // power-of-d: number of sampled nodes
  bool replace = true;  // power-of-d: sample with replacement (RackSched's rule)
  LoadMetric metric = LoadMetric::kOutstanding;
  bool per_type = false;        // typed racks: compare loads of the task's own type (RackSched §3.6)
  double rtt_us = 0;            // central_fcfs: delay before an idle worker gets its next task
  double threshold = 1;         // jbt: load below which a node is joined
  uint32_t bound = 1;           // jbsq: outstanding tasks allowed per worker of a node
  bool sed_by_speed = true;     // sed: rate = workers x speed (true) or workers (false)
  std::vector<double> weights;  // wcmp: one per node (empty = proportional to workers x speed)
  // water_fill (rack/water_fill.hpp): every `period_us`, node i's migration table from its believed loads.
  double period_us = 100;  // the heartbeat between table updates (Malcolm §7.1: 100)
  double horizon = 2;      // the level absorbs `horizon` heartbeats of the rack's arrivals
  double mix = 0.1;        // share of the capacity split mixed into each table
  bool steal = false;      // a node that runs short steals from the node it believes most loaded
  bool per_task = false;   // node i also recomputes its migration table at each arrival, from its beliefs then
};

enum class LoadInfoKind {
  kFresh,      // every change is visible at once
  kPeriodic,   // nodes broadcast their loads every period_us, delivered after delay_us
  kPiggyback,  // a node's load rides on each reply to the dispatcher that sent the task (INT1)
  kMinOnly,    // the dispatcher keeps only the least loaded node, updated by replies (INT2)
  kProactive,  // the dispatcher counts what it sent minus the replies it got back
};

struct LoadInfoConfig {
  LoadInfoKind kind = LoadInfoKind::kFresh;
  double period_us = 100;        // periodic: broadcast period
  double delay_us = 0;           // periodic: broadcast delivery delay; piggyback: reply delay
  bool local_increment = false;  // between updates, count +1 load for each task sent (Malcolm §7.1)
};

// Where tasks enter the rack.
enum class EntryKind {
  kSwitch,     // one central dispatcher (a ToR switch, RackSched)
  kBalancers,  // `count` dispatchers, each with its share of the traffic (multi-LB; clients)
  kNodes,      // a node chosen by the arrival split; its load manager may migrate (Malcolm)
};

struct EntryConfig {
  EntryKind kind = EntryKind::kSwitch;
  uint32_t count = 1;         // balancers
  std::vector<double> split;  // traffic share per balancer (balancers) or per node (nodes); empty = equal
};

// Malcolm's node mechanics (entry: nodes).
struct MigrationConfig {
  double delay_us = 0;            // one-way network delay of a migrated or stolen task
  double steal_below = 1.0;       // steal only when the smoothed queue length is below this
  double queue_smoothing = 0.95;  // EMA weight of the past for the smoothed queue length
};

// A task type with its own service distribution (RackSched §3.6).
struct TaskType {
  double share = 1.0;  // relative frequency among arrivals
  kernel::Distribution service = kernel::Distribution::Exp(1.0);
  double slo_us = 1.0;          // per_type queueing: the wait is compared relative to it
  int32_t priority = 0;         // priority queueing: lower is served first
  std::vector<uint32_t> nodes;  // locality: the nodes that may serve it (empty = all)
};

// A change applied at a given time (Malcolm §7.4 adaptability; reconfiguration).
struct DynamicsEvent {
  enum Kind { kSplit, kSpeed, kRemove, kAdd, kLoad } kind = kLoad;
  double at_us = 0;
  std::vector<uint32_t> nodes;  // speed / remove / add: the nodes concerned
  std::vector<double> values;   // split: new split; speed: factor applied to the speed; load: [new load]
};

struct RackConfig {
  std::vector<NodeGroup> groups;
  kernel::Distribution service = kernel::Distribution::Exp(1.0);
  std::vector<TaskType> types;  // if set, replaces `service`: each arrival draws a type by share
  double load = 0.5;            // fraction of the total service capacity
  uint64_t seed = 1;
  IntraNodeConfig intra;
  EntryConfig entry;
  DispatchConfig dispatch;
  LoadInfoConfig load_info;
  MigrationConfig migration;
  std::vector<DynamicsEvent> dynamics;  // in time order
  uint64_t warmup_tasks = 0;            // the first arrivals, excluded from latency statistics
  uint64_t measure_tasks = 0;           // then this many arrivals are measured (0: every later one)
  bool record_tasks = false;            // keep each measured task's arrival time and size (TaskRecords)
  double sample_period_us = 0;          // > 0: record every node's load at this resolution

  uint32_t NumNodes() const;
  // The task types in effect: `types`, or one type made of `service`.
  std::vector<TaskType> EffectiveTypes() const;
  // Mean task size over all types (us at speed 1).
  double MeanSize() const;
  // Sum over nodes of workers x speed (work units per microsecond).
  double Capacity() const;
  // Throws std::invalid_argument naming the first bad field.
  void Validate() const;
};

}  // namespace dcgym::rack
