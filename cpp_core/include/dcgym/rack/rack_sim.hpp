// The rack simulator: open-loop Poisson arrivals, an entry point (a switch,
// load balancers, or the nodes themselves), dispatch, nodes, and the network
// messages between them.
//
// Event selection: the next arrival time is kept apart, each node exposes
// the time of its own next event through an indexed heap over nodes, and
// network messages (migrations, steals, replies, broadcasts), dynamics and
// load samples wait in a timed queue. Nothing is stored per task beyond the
// tasks in flight; latencies go into fixed-size histograms.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
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
  uint64_t dropped = 0;       // tasks refused by this node's full queue
  uint64_t migrated_out = 0;  // tasks this node's load manager sent elsewhere
  uint64_t stolen_from = 0;   // tasks other nodes stole from this node
};

struct RackCounters {
  uint64_t arrived = 0;
  uint64_t completed = 0;
  uint64_t dropped = 0;  // refused by a full queue ("failed tasks")
  uint64_t warmup = 0;   // arrivals excluded from statistics
  uint64_t events = 0;   // arrivals + node events + messages processed
  uint64_t migrations = 0;
  uint64_t steals = 0;         // successful steals
  uint64_t failed_steals = 0;  // steal requests that found an empty queue
};

// Decisions of the nodes' load managers since the last reset (Malcolm's
// actor gradient needs the count of each destination actually chosen).
struct DecisionCounts {
  uint32_t n = 0;
  std::vector<uint64_t> migrate;  // n x n: node i chose j on arrival (j == i: accepted)
  std::vector<uint64_t> steal;    // n x n: node i chose victim j on completion (j == i: no steal)
  std::vector<uint64_t> migrations, steals, failed_steals, dropped, completed;  // per node
  void Reset();
};

class RackSim {
 public:
  explicit RackSim(const RackConfig& config);
  RackSim(const RackSim&) = delete;  // nodes point into this object
  RackSim& operator=(const RackSim&) = delete;

  // Processes events until `n` more tasks have arrived (the event that would
  // bring the n+1-th is left pending).
  void RunTasks(uint64_t n);
  // Processes every event at or before time `t_us`; the clock ends at t_us. A time before now, or not finite,
  // is refused (std::invalid_argument) before anything runs.
  void RunUntil(double t_us);

  // Malcolm's tables (entry: nodes, policy: table): node i's probabilities
  // over all nodes of migrating an arriving task (self = accept) and of
  // stealing from each victim on completion (self = no steal). Must be
  // non-negative and sum to 1; throws std::invalid_argument otherwise.
  void SetMigrationTable(uint32_t node, const double* probs);
  void SetStealTable(uint32_t node, const double* probs);
  // Checks a table row without setting it (same errors as the setters).
  static void CheckTableRow(const double* probs, uint32_t n, uint32_t row, const char* what);
  // Row `node` of the migration (or, with `stealing`, the stealing) table
  // from weights w[0..N) >= 0 summing to `total` > 0, finite: probabilities
  // w / total. Unchecked: the caller guarantees all of that (step_rack_game).
  void SetTableWeights(uint32_t node, bool stealing, const double* w, double total) {
    const uint32_t n = NumNodes();
    double* cum = (stealing ? steal_cum_ : migrate_cum_).data() + static_cast<size_t>(node) * n;
    const double inv = 1.0 / total;
    double c = 0;
    for (uint32_t j = 0; j < n; ++j) cum[j] = (c += w[j]) * inv;
    cum[n - 1] = 1.0;
  }
  bool HasTables() const { return !migrate_cum_.empty(); }
  // With `refresh` set (policy table), each arriving task first calls refresh(node) for the node it arrives at,
  // which may set that node's migration row (SetTableWeights) from what the node believes then: a per-task policy
  // (rack/task_fill.hpp). Whoever sets it clears it (an empty function) before it dies.
  void SetArrivalRefresh(std::function<void(uint32_t)> refresh) { arrival_refresh_ = std::move(refresh); }
  bool HasArrivalRefresh() const { return static_cast<bool>(arrival_refresh_); }
  // With `decided` set (policy table), each arriving task then calls decided(node, destination) once its
  // destination is drawn (destination == node: accepted). The same rule for clearing it.
  void SetArrivalDecided(std::function<void(uint32_t, uint32_t)> decided) { arrival_decided_ = std::move(decided); }
  DecisionCounts& Decisions() { return decisions_; }

  double Now() const { return now_; }
  double ArrivalRate() const { return rate_; }  // tasks per us
  uint32_t NumNodes() const { return static_cast<uint32_t>(nodes_.size()); }
  uint32_t NumViewers() const { return boards_[0].NumViewers(); }
  const RackConfig& Config() const { return config_; }
  const RackCounters& Counters() const { return counters_; }
  const std::vector<NodeCounters>& NodeStats() const { return node_counters_; }
  const kernel::LogHistogram& Latency() const { return latency_; }
  // Per-class latencies; with a single class, the overall histogram.
  const kernel::LogHistogram& LatencyOfClass(uint32_t k) const { return per_class_ ? latency_by_class_[k] : latency_; }
  uint32_t NumClasses() const { return num_classes_; }
  const StartStats& Starts() const { return starts_; }
  // Latencies of the tasks completed since the last reset (all tasks, warm-up
  // included): what an environment step reports. Off until first enabled.
  void EnableStepLatency() { step_latency_on_ = true; }
  kernel::LogHistogram& StepLatency() { return step_latency_; }
  // The same for a measurement window (benchmarks, tests): a histogram of its own, which no controller or
  // environment step clears (an online learner with a latency reward clears StepLatency every heartbeat).
  void EnableWindowLatency() { window_latency_on_ = true; }
  kernel::LogHistogram& WindowLatency() { return window_latency_; }
  const Node& NodeAt(uint32_t i) const { return nodes_[i]; }
  bool IsActive(uint32_t i) const { return is_active_[i]; }
  // The load of node i in the dispatch metric, and what viewer v believes it is.
  // With per-type loads, `type` selects the type's board.
  double TrueLoad(uint32_t i, uint32_t type = 0) const { return LoadOf(i, type); }
  double Belief(uint32_t v, uint32_t j, uint32_t type = 0) const { return boards_[BoardIndex(type)].Belief(v, j); }
  void BeliefRow(uint32_t v, double* out, uint32_t type = 0) const { boards_[BoardIndex(type)].BeliefRow(v, out); }
  // The beliefs all viewers share and each viewer's own (LoadBoard::SharedRow, ForEachOwnBelief).
  const double* SharedBeliefRow(uint32_t type = 0) const { return boards_[BoardIndex(type)].SharedRow(); }
  template <class F>
  void ForEachOwnBelief(uint32_t v, F&& f, uint32_t type = 0) const {
    boards_[BoardIndex(type)].ForEachOwnBelief(v, f);
  }
  uint32_t NumBoards() const { return static_cast<uint32_t>(boards_.size()); }
  // Tasks currently in the rack (queues, workers, network), counted by walking them.
  uint64_t InFlight() const;
  // Measured arrivals (past the warm-up, within measure_tasks) neither completed nor dropped yet: a run is drained
  // when this is 0, and then its statistics cover exactly the measured tasks.
  uint64_t MeasuredPending() const {
    const uint64_t warm = config_.warmup_tasks, window = config_.measure_tasks;
    uint64_t arrived = counters_.arrived > warm ? counters_.arrived - warm : 0;
    if (window > 0 && arrived > window) arrived = window;
    return arrived - measured_done_;
  }
  // With record_tasks: arrival time (us) and size (us of work at speed 1) of each measured task, in arrival order.
  const std::vector<double>& RecordedArrivals() const { return record_arrival_; }
  const std::vector<double>& RecordedSizes() const { return record_size_; }
  // Recorded load samples: times and, per time, every node's outstanding tasks.
  const std::vector<double>& SampleTimes() const { return sample_times_; }
  const std::vector<float>& Samples() const { return samples_; }
  void ClearSamples();

 private:
  struct Message {
    enum Kind : uint8_t { kDeliver, kStealRequest, kReply, kBroadcast, kPublish, kDynamics, kSample, kRefresh };
    Message() = default;
    explicit Message(Kind k) : kind(k) {}
    Kind kind = kDeliver;
    uint32_t a = 0, b = 0;  // deliver: node; steal: thief a, victim b; reply: viewer a, node b; dynamics: index
    double value = 0;       // reply: the node's load
    Task task;
  };

  template <bool kUntil>
  void Loop(uint64_t target_arrivals, double horizon);
  void OnArrival();
  void OnNodeEvent(uint32_t i);
  void OnMessage(const Message& m);
  void Dispatch(uint32_t viewer, Task t);
  void ArriveAtNode(uint32_t i, Task t);
  void Send(uint32_t viewer, uint32_t j, Task t);
  uint32_t Choose(uint32_t viewer, const Task& t);
  void BuildSpeedClasses();
  void Migrate(uint32_t from, uint32_t to, Task t);
  void Place(uint32_t i, const Task& t);
  void AfterChange(uint32_t i);
  void Complete(uint32_t i, const Task& t);
  void Reply(uint32_t viewer, uint32_t i, const Task& t);
  void MaybeSteal(uint32_t i);
  void WaterFillTables();  // water_fill: every node's tables from its beliefs (rack/water_fill.hpp)
  void WaterFillRow(uint32_t i, bool steal_row);  // water_fill: node i's migration (and stealing) table
  void ApplyDynamics(const DynamicsEvent& e);
  void SetActive(uint32_t i, bool active);
  void RebuildSplit();
  double LoadOf(uint32_t i, uint32_t type) const;
  uint32_t BoardIndex(uint32_t type) const { return boards_.size() == 1 ? 0 : type; }
  LoadBoard& BoardOf(const Task& t) { return boards_[BoardIndex(t.cls)]; }
  void RebuildCandidates();
  double LoadIncrement(uint32_t j, const Task& t) const;
  void Schedule(double t, const Message& m) { messages_.Push(t, m); }
  // central_fcfs and jbsq: tasks waiting at the dispatcher
  bool CentralPlace(const Task& t);
  void CentralRefill(uint32_t i);
  void CentralTrackIdle(uint32_t i);
  void JbsqRefill(uint32_t i);
  static void SetTable(std::vector<double>& cum, uint32_t n, uint32_t row, const double* probs, const char* what);
  static uint32_t SampleCumulative(const double* cum, uint32_t width, kernel::Rng& rng);

  RackConfig config_;
  std::vector<Node> nodes_;
  std::vector<uint32_t> workers_of_;
  kernel::IndexedMinHeap node_events_;
  kernel::EventQueue<Message> messages_;
  std::vector<TaskType> types_;  // the effective task types (one when untyped)
  bool typed_;                   // arrivals draw a type; its index is the task's class
  uint32_t num_classes_;
  std::vector<double> type_cum_;                   // cumulative type shares
  std::vector<LoadBoard> boards_;                  // one, or one per type with per-type loads
  std::vector<std::vector<uint32_t>> candidates_;  // per type: active nodes it may run on
  Dispatcher dispatcher_;
  EntryKind entry_;
  DispatchKind policy_;
  bool track_truth_;    // keep the board's true loads current
  bool per_class_;      // more than one class: keep a histogram per class
  bool needs_replies_;  // completions send a reply to the dispatcher that placed the task
  bool local_counts_;   // lsq / jbsq: per-dispatcher counts of tasks sent
  bool table_;          // entry nodes with Malcolm's probability tables (table or water_fill)

  kernel::Rng arrival_rng_, service_rng_, entry_rng_, table_rng_, central_rng_;
  double rate_;             // arrivals per us
  double mean_size_ = 1.0;  // the mean task size (us at speed 1): nominal_wait's service time
  double next_arrival_;
  double now_ = 0;

  std::vector<uint32_t> active_;  // active nodes, in id order
  std::vector<char> is_active_;
  std::vector<double> split_cum_;  // entry split over balancers, or over active nodes

  std::vector<double> local_count_;                   // viewer x node: tasks sent, not yet replied (lsq, jbsq)
  kernel::RingBuffer<Task> dispatcher_queue_;         // central_fcfs, jbsq (switch entry only)
  std::vector<std::vector<uint32_t>> idle_by_speed_;  // central_fcfs: nodes with an idle worker
  std::vector<uint32_t> speed_class_, idle_pos_;

  std::function<void(uint32_t)> arrival_refresh_;              // table: SetArrivalRefresh
  std::function<void(uint32_t, uint32_t)> arrival_decided_;    // table: SetArrivalDecided
  std::vector<double> migrate_cum_, steal_cum_;                // table: n x n cumulative probabilities
  std::vector<double> queue_ema_;                              // per node: smoothed queue length
  std::vector<double> fill_level_, fill_capacity_, fill_row_;  // water_fill: scratch of one refresh
  std::vector<uint32_t> fill_order_;
  std::deque<std::vector<double>> broadcasts_;  // periodic: snapshots in transit
  uint64_t broadcasts_sent_ = 0;

  RackCounters counters_;
  uint64_t measured_done_ = 0;  // measured tasks completed or dropped
  std::vector<double> record_arrival_, record_size_;
  std::vector<NodeCounters> node_counters_;
  DecisionCounts decisions_;
  kernel::LogHistogram latency_;
  std::vector<kernel::LogHistogram> latency_by_class_;
  kernel::LogHistogram step_latency_;
  bool step_latency_on_ = false;
  kernel::LogHistogram window_latency_;
  bool window_latency_on_ = false;
  StartStats starts_;
  std::vector<double> sample_times_;
  std::vector<float> samples_;
};

}  // namespace dcgym::rack
