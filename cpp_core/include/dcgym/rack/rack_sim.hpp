// The rack simulator: open-loop Poisson arrivals, a dispatcher, nodes.
//
// Event selection: the next arrival time is kept apart, and each node exposes
// the time of its own next event through an indexed heap over nodes, so one
// event costs O(log nodes) plus O(log workers) inside the node. Nothing is
// stored per task beyond the tasks in flight; latencies go into fixed-size
// histograms.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/kernel/heap.hpp"
#include "dcgym/kernel/histogram.hpp"
#include "dcgym/kernel/ring_buffer.hpp"
#include "dcgym/kernel/rng.hpp"
#include "dcgym/rack/config.hpp"
#include "dcgym/rack/dispatch.hpp"
#include "dcgym/rack/load_info.hpp"
#include "dcgym/rack/node.hpp"

namespace dcgym::rack {

struct NodeCounters {
  uint64_t completed = 0;
  uint64_t dropped = 0;
};

struct RackCounters {
  uint64_t arrived = 0;
  uint64_t completed = 0;
  uint64_t dropped = 0;     // refused by a full queue ("failed tasks")
  uint64_t warmup = 0;      // arrivals excluded from statistics
  uint64_t events = 0;      // arrivals + node events processed
};

class RackSim {
 public:
  explicit RackSim(const RackConfig& config);
  RackSim(const RackSim&) = delete;  // nodes point into this object
  RackSim& operator=(const RackSim&) = delete;

  // Processes events until `n` more tasks have arrived (the event that would
  // bring the n+1-th is left pending).
  void RunTasks(uint64_t n);
  // Processes every event at or before time `t_us`; the clock ends at t_us.
  void RunUntil(double t_us);

  double Now() const { return now_; }
  double ArrivalRate() const { return rate_; }  // tasks per us
  uint32_t NumNodes() const { return static_cast<uint32_t>(nodes_.size()); }
  const RackConfig& Config() const { return config_; }
  const RackCounters& Counters() const { return counters_; }
  const std::vector<NodeCounters>& NodeStats() const { return node_counters_; }
  const kernel::LogHistogram& Latency() const { return latency_; }
  // Per-class latencies; with a single class, the overall histogram.
  const kernel::LogHistogram& LatencyOfClass(uint32_t k) const { return per_class_ ? latency_by_class_[k] : latency_; }
  uint32_t NumClasses() const { return config_.service.NumClasses(); }
  const StartStats& Starts() const { return starts_; }
  const Node& NodeAt(uint32_t i) const { return nodes_[i]; }
  // Tasks currently in the rack, counted by walking every queue.
  uint64_t InFlight() const;

 private:
  void OnArrival();
  void OnNodeEvent(uint32_t i);
  void Place(uint32_t i, const Task& t);
  void AfterChange(uint32_t i);
  void Complete(uint32_t i, const Task& t);
  // central_fcfs
  bool CentralPlace(const Task& t);
  void CentralRefill(uint32_t i);
  void CentralTrackIdle(uint32_t i);

  RackConfig config_;
  std::vector<Node> nodes_;
  kernel::IndexedMinHeap node_events_;
  LoadInfo load_info_;
  Dispatcher dispatcher_;
  bool track_loads_;
  bool central_;
  bool per_class_;  // more than one class: keep a histogram per class

  kernel::Rng arrival_rng_, service_rng_;
  double rate_;           // arrivals per us
  double next_arrival_;
  double now_ = 0;

  // central_fcfs: the global queue and, per speed class (fastest first), the
  // nodes with an idle worker, with each node's position for O(1) removal.
  kernel::RingBuffer<Task> central_queue_;
  std::vector<std::vector<uint32_t>> idle_by_speed_;
  std::vector<uint32_t> speed_class_, idle_pos_;
  kernel::Rng central_rng_;

  RackCounters counters_;
  std::vector<NodeCounters> node_counters_;
  kernel::LogHistogram latency_;
  std::vector<kernel::LogHistogram> latency_by_class_;
  StartStats starts_;
};

}  // namespace dcgym::rack
