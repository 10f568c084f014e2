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

// A group of identical nodes.
struct NodeGroup {
  uint32_t count = 1;
  uint32_t workers = 1;
  double speed = 1.0;          // work units per microsecond per worker
  int64_t queue_capacity = -1;  // tasks a node holds beyond its busy workers; -1 = unbounded
};

enum class Discipline {
  kFcfs,  // one queue served first-come first-served by the node's workers
  kPs,    // processor sharing: egalitarian if quantum_us == 0, else round-robin slices
};

struct IntraNodeConfig {
  Discipline discipline = Discipline::kFcfs;
  double quantum_us = 0;      // ps only: 0 = ideal egalitarian sharing
  double switch_cost_us = 0;  // ps with quantum: worker time lost per preemption
};

enum class LoadMetric {
  kOutstanding,  // tasks at the node, waiting or in service (RackSched's counter)
  kQueue,        // tasks waiting, not in service
};

enum class DispatchKind { kRandom, kRoundRobin, kPowerOfD, kJsq, kCentralFcfs };

struct DispatchConfig {
  DispatchKind kind = DispatchKind::kRandom;
  uint32_t d = 2;             // power-of-d: number of sampled nodes
  bool replace = true;        // power-of-d: sample with replacement (RackSched's rule)
  LoadMetric metric = LoadMetric::kOutstanding;
  double rtt_us = 0;          // central_fcfs: delay before an idle worker gets its next task
};

enum class LoadInfoKind { kFresh };

struct LoadInfoConfig {
  LoadInfoKind kind = LoadInfoKind::kFresh;
};

struct RackConfig {
  std::vector<NodeGroup> groups;
  kernel::Distribution service = kernel::Distribution::Exp(1.0);
  double load = 0.5;           // fraction of the total service capacity
  uint64_t seed = 1;
  IntraNodeConfig intra;
  DispatchConfig dispatch;
  LoadInfoConfig load_info;
  uint64_t warmup_tasks = 0;   // the first arrivals, excluded from latency statistics

  uint32_t NumNodes() const;
  // Sum over nodes of workers x speed (work units per microsecond).
  double Capacity() const;
  // Throws std::invalid_argument naming the first bad field.
  void Validate() const;
};

}  // namespace dcgym::rack
