// The flow-level datacenter model: flows arrive, share links by strict
// priority and max-min fairness (RateSolver), advance on their groups'
// clocks (GroupClocks), are demoted by MLFQ on bytes sent, and complete.
// Datacenter flow scheduling as PIAS (Bai et al. NSDI 2015) and AuTO (Chen
// et al. SIGCOMM 2018) study it, in the fluid model: no congestion control,
// slow start, packet loss or ECN; fair sharing inside a priority level
// stands for DCTCP's (Alizadeh et al. SIGCOMM 2010). An optional fixed
// per-flow overhead (base RTT) is added to every FCT.
//
// Events: arrivals, marks (a flow's bytes sent reaching its size, an MLFQ
// threshold or the long-flow threshold) and workload changes. Nothing
// sweeps over active flows at an event; a threshold change (an sRLA action)
// does, once.
//
// The interface of AuTO's two agents (§4): SetThresholds (sRLA: the K - 1
// MLFQ thresholds), SetFlowActions (lRLA: priority, rate cap and path of a
// flow, usually a long one), observations of the last finished short flows,
// the oldest active long flows and the last finished long flows, and the
// aggregates of the current interval for the rewards. A flow is long once
// it has sent long_flow_bytes (by default the last MLFQ threshold, which
// AuTO §4.2 uses to separate long flows from short ones); long flows are
// listed oldest first (in the order they became long).
//
// Memory is proportional to the flows in flight (slots are reused) plus
// fixed-size histograms; `record_flows` alone keeps per-flow data.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dcgym/flow/arrivals.hpp"
#include "dcgym/flow/clocks.hpp"
#include "dcgym/flow/config.hpp"
#include "dcgym/flow/las.hpp"
#include "dcgym/flow/solver.hpp"
#include "dcgym/flow/stats.hpp"
#include "dcgym/flow/topology.hpp"

namespace dcgym::flow {

// Observation rows. A finished flow: endpoints, path index, priority level
// at completion, size (bytes), FCT (s, base RTT included) and how long ago
// it finished (s). An active long flow: endpoints, path, level, bytes sent
// and time since its arrival (s).
inline constexpr uint32_t kFinishedFeatures = 7;
inline constexpr const char* kFinishedFeatureNames[kFinishedFeatures] = {"src",        "dst",   "path", "level",
                                                                         "size_bytes", "fct_s", "age_s"};
inline constexpr uint32_t kActiveFeatures = 6;
inline constexpr const char* kActiveFeatureNames[kActiveFeatures] = {"src",   "dst",        "path",
                                                                     "level", "sent_bytes", "age_s"};

// An lRLA action on one active flow. Fields left at their defaults keep the
// flow's current value. Setting `level` pins the flow there: MLFQ no longer
// demotes it.
struct FlowAction {
  uint64_t flow = 0;     // the handle an observation reported
  int32_t level = -1;    // 0 = highest priority
  double cap_gbps = -1;  // < 0 keep; +infinity removes the cap
  int32_t path = -1;     // plane (planes) or spine (leaf_spine)
};

// One active flow, as ListActive() reports it.
struct ActiveFlow {
  uint64_t handle, index;
  uint32_t src, dst, path, level;
  double size, sent, rate, arrival;  // bytes, bytes, bytes/s, s
  bool pinned, is_long;
};

// One completed flow (record_flows only).
struct CompletionRecord {
  uint64_t index;  // arrival number, from 0
  uint32_t src, dst, path, level;
  double size, arrival, fct;  // fct: fluid, seconds
};

class FlowSim {
 public:
  explicit FlowSim(const FlowConfig& config);

  // Running, entirely in C++. RunUntil processes every event at or before t
  // and leaves the clock at t; RunFlows stops right after the n-th next
  // arrival (or when nothing is left to happen). A time before now, or a
  // duration that is negative (StepInterval: not positive) or not finite, is
  // refused (std::invalid_argument) before anything changes.
  void RunUntil(double t_s);
  void RunFor(double seconds);
  void RunFlows(uint64_t n);
  // Starts a decision interval: its aggregates, observations of finished
  // flows and link utilisation count from now.
  void StartInterval();
  void StepInterval(double seconds);

  // sRLA: new thresholds (bytes, levels - 1, non-decreasing) for mlfq or
  // qsjf. Every flow not pinned by an action takes the level its bytes sent
  // (mlfq) or its size (qsjf) give now: it may move up or down.
  void SetThresholds(const std::vector<double>& bytes);
  const std::vector<double>& Thresholds() const { return thresholds_; }
  // lRLA: all actions are checked before any is applied.
  void SetFlowActions(const std::vector<FlowAction>& actions);
  // The pathbal heuristic's move (a fixed rule in lRLA's action space): each active flow that has sent at least
  // `long_bytes`, oldest first, at most `max_flows` of them (0: every one), goes to the path whose links carry
  // the fewest unfinished bytes of the other active flows at its level or above (ties keep its path), the moves
  // counted as they are made; `level` >= 0 also pins the flow there (-1 keeps its level). Returns the number
  // of flows moved.
  uint64_t BalancePaths(double long_bytes, uint64_t max_flows, int32_t level);
  // lRLA's move check: goes through `actions` in order and drops (path -1) each path change whose new path,
  // counted with the other flows' bytes as the actions before it leave them, does not cost the flow less than
  // its current path, both at the level the action gives it (pathbal's cost). Changes nothing else; the
  // actions' handles must be active flows (SetFlowActions' checks come after). Returns the moves dropped.
  uint64_t CheckMoves(std::vector<FlowAction>& actions) const;
  // pathbal's costs for listed flows (handles, -1: none): row i, column q is the unfinished bytes of the other
  // active flows at flow i's level or above on the links of its q-th path (at `level` or above instead, given
  // one >= 0: what the paths cost the flow once moved there); -1 for q past the pair's paths and for rows
  // without a flow (a level-less discipline: all -1). `out` is rows x paths.
  void ObservePathCosts(const int64_t* flows, uint32_t rows, uint32_t paths, double* out, int32_t level = -1) const;

  // Observations, row-major and zero-padded (flow handles -1). Finished
  // flows are those of the current interval, the most recent first.
  void ObserveShortFinished(double* out) const;               // short_finished x kFinishedFeatures
  void ObserveLongActive(double* out, int64_t* flows) const;  // long_active x kActiveFeatures
  void ObserveLongFinished(double* out) const;                // long_finished x kFinishedFeatures
  uint64_t NumLongActive() const { return num_long_; }
  // Every active flow, in slot order (a sweep; for tests, debugging, rendering).
  void ListActive(std::vector<ActiveFlow>& out) const;
  // Per level: active flows and their unfinished bytes (a sweep; for rendering).
  void LevelOccupancy(double* flows, double* bytes) const;
  // Per link: utilisation over the interval so far, and now.
  void LinkUtilization(double* interval, double* now) const;
  // Per link: utilisation since the first measured arrival (0 before it): what load a run's results are at.
  void MeasuredLinkUtilization(double* out) const;

  double Now() const { return now_; }
  const FlowConfig& Config() const { return config_; }
  const Topology& Topo() const { return topology_; }
  const Arrivals& Workload() const { return arrivals_; }
  const Counters& Count() const { return counters_; }
  const FctHistograms& Histograms() const { return hist_; }
  const IntervalStats& Interval() const { return interval_; }
  uint64_t NumActive() const { return active_.size(); }
  double LongFlowBytes() const { return long_bytes_; }
  double BaseRttS() const { return base_rtt_s_; }    // added to every fluid FCT in the results
  double Unfinished() const { return unfinished_; }  // bytes not yet sent
  // Time averages since the first measured arrival (NaN before).
  double MeanUnfinished() const;
  double MeanActive() const;
  double MeasuredTime() const { return time_avg_.start < 0 ? 0.0 : now_ - time_avg_.start; }
  const std::vector<CompletionRecord>& Records() const { return records_; }
  // Measured arrivals (past the warm-up, within measure_flows) not completed yet.
  uint64_t MeasuredPending() const {
    const uint64_t warm = config_.warmup_flows, window = config_.measure_flows;
    const uint64_t arrived = counters_.arrived > warm ? counters_.arrived - warm : 0;
    return (window ? std::min(arrived, window) : arrived) - counters_.measured;
  }
  // Flow records allocated: the most flows ever in flight at once (memory).
  size_t Slots() const { return flows_.size(); }
  const RateSolver& Solver() const { return solver_; }

 private:
  struct Flow {
    double size = 0, arrival = 0, ideal = 0;  // ideal: seconds at the path's least capacity
    double mark = 0;                          // bytes sent at which the flow next needs attention
    double hold = 0;                          // bytes sent while out of any group (inside an event)
    double cap = kNoCap;
    uint64_t index = 0;
    Path route;
    uint32_t src = 0, dst = 0, path = 0, level = 0, generation = 0;
    uint32_t active_pos = 0, long_prev = 0, long_next = 0;
    bool pinned = false, is_long = false, live = false;
  };
  static constexpr uint32_t kNil = 0xffffffffu;

  bool LevelBased() const { return discipline_ != Discipline::kLas && discipline_ != Discipline::kSrpt; }
  uint32_t SingletonGroup(uint32_t f) const { return num_link_groups_ + f; }
  uint32_t LevelOfSent(double sent, uint32_t from = 0) const;
  uint32_t LevelOfSize(double size) const;
  double NextMark(const Flow& f, double sent) const;
  double SentOf(uint32_t f) const;
  uint64_t Handle(uint32_t f) const { return (uint64_t{flows_[f].generation} << 32) | f; }
  uint32_t SlotOf(uint64_t handle, const std::string& field) const;
  // Unfinished bytes of the active flows per (link, level), link-major; a path's cost at level `at` from them.
  std::vector<double> LinkLevelBytes() const;
  double PathCost(const std::vector<double>& bytes, const Path& p, uint32_t at) const;
  // Adds b bytes at `level` on each link of p in LinkLevelBytes' array (b < 0 takes them off).
  void AddPathBytes(std::vector<double>& bytes, const Path& p, uint32_t level, double b) const;

  bool Step(double limit);  // one event at or before limit; false if none
  void Advance(double t);
  void Arrive();
  void Service();
  void Complete(uint32_t f);
  // Rate allocation for the level-based disciplines. On single_link with no
  // rate cap (the M/G/1 setting) the allocation is plain: the highest level
  // holding flows shares the link equally and the others get nothing, so
  // the model keeps counts per level instead of calling the solver, and
  // Step reads the served level's group instead of the timer heap (2x fewer
  // instructions per flow). The first cap switches to the solver for good;
  // `solver: full` always uses it.
  void PlaceFlow(uint32_t f);                  // a new flow, out of any group
  void MoveLevel(uint32_t f, uint32_t level);  // a flow out of its group
  void RemoveFlow(uint32_t f);                 // a completed flow
  void UseSolver();
  void Resolve();  // new rates to the clocks; flows out of any group rejoin
  void ReallocateSrpt();
  void MakeLong(uint32_t f);
  void DropLong(uint32_t f);
  void SettleLink(uint32_t link, double rate);
  uint32_t NewSlot();
  void FreeSlot(uint32_t f);

  FlowConfig config_;
  Discipline discipline_;
  Topology topology_;
  Arrivals arrivals_;
  RateSolver solver_;
  GroupClocks clocks_;
  std::unique_ptr<LasLink> las_;
  bool single_ = false;                    // single-bottleneck allocation (see PlaceFlow)
  uint32_t level_count_[kMaxLevels] = {};  // single_: flows per level
  uint32_t levels_held_ = 0;               // single_: bit l set if level l has flows
  uint32_t served_ = kMaxLevels;           // single_: the level holding the link's capacity
  std::vector<uint32_t> rejoin_;           // single_: flows to put in their level's group
  uint32_t num_link_groups_;
  std::vector<double> thresholds_;
  double long_bytes_;
  bool long_default_;
  double base_rtt_s_;

  std::vector<Flow> flows_;
  std::vector<uint32_t> free_, active_;
  uint32_t long_head_ = kNil, long_tail_ = kNil;
  uint64_t num_long_ = 0;

  double now_ = 0;
  double unfinished_ = 0;
  Counters counters_;
  FctHistograms hist_;
  TimeAverages time_avg_;
  IntervalStats interval_;
  FinishedRing short_ring_, long_ring_;
  std::vector<CompletionRecord> records_;

  std::vector<double> link_rate_, link_bytes_, link_time_, link_bytes_start_;
  std::vector<double> link_bytes_measured_;            // each link's bytes at the first measured arrival
  std::vector<uint32_t> order_;                        // SRPT scratch
  std::vector<std::pair<double, uint64_t>> srpt_key_;  // SRPT scratch, per slot
  std::vector<double> left_;                           // SRPT scratch, per link
};

// Steps every simulation by one interval of `seconds` (StepInterval), on
// up to `threads` (>= 1) threads; each simulation stays on one thread, so
// results do not depend on the thread count. The simulations must be
// distinct (two threads would share one).
void StepBatch(const std::vector<FlowSim*>& sims, double seconds, uint32_t threads = 1);

// Refuses (std::invalid_argument naming the argument) a batch with a null or repeated entry, or no thread.
void CheckBatch(const std::vector<const void*>& items, const char* what, uint32_t threads);

}  // namespace dcgym::flow
