// A `fill` policy (runtime/fill.hpp) asked at every task that arrives at a
// node: the per-task rule of a per_task fill file, shared by the engine's
// FillController and by rack_v0's `fill` actions (the agents choose the gains
// every heartbeat, this sets the tables between heartbeats).
//
// Installed on a RackSim (entry 'nodes', dispatch 'table'), it sets the
// arriving node's migration table before the task's draw
// (RackSim::SetArrivalRefresh) from the node's beliefs then (its belief row,
// its own sends since the last broadcast included) times the policy's
// level_scale, and the rack's arrivals per heartbeat at the engine's rate
// then. With `record`, it keeps each node's decisions (destination, the levels
// and arrivals its table was computed from, RackSim::SetArrivalDecided) until
// Clear(): what a learner needs to take each decision's log-probability under
// the table of its own moment.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/rack/rack_sim.hpp"
#include "dcgym/runtime/fill.hpp"

namespace dcgym::rack {

class TaskFill {
 public:
  /// One node's recorded decisions: dest[k], levels[k * N .. k * N + N), arrivals[k].
  struct Decisions {
    std::vector<std::uint32_t> dest;
    std::vector<double> levels;
    std::vector<double> arrivals;
  };

  /// Hooks `policy` (N = sim's nodes; both must outlive this) into `sim`'s arrivals; std::invalid_argument if
  /// another per-task policy already drives `sim`.
  TaskFill(RackSim& sim, runtime::FillPolicy& policy, double heartbeat_us, bool record);
  ~TaskFill();                         // unhooks
  TaskFill(const TaskFill&) = delete;  // the simulation holds `this`
  TaskFill& operator=(const TaskFill&) = delete;

  /// The rack's arrivals per heartbeat at the engine's arrival rate now.
  double HeartbeatArrivals() const { return sim_.ArrivalRate() * heartbeat_us_; }
  /// Every node's migration and stealing tables (N x N each, row i = node i) from its levels now: a heartbeat's.
  void Tables(double* migration, double* stealing);
  const Decisions& Recorded(std::uint32_t node) const { return recorded_[node]; }
  /// Forget the recorded decisions.
  void Clear();

 private:
  void Refresh(std::uint32_t node);
  void Record(std::uint32_t node, std::uint32_t j);

  RackSim& sim_;
  runtime::FillPolicy& policy_;
  double heartbeat_us_;
  std::size_t n_;
  std::vector<double> raw_, levels_, table_, steal_scratch_;
  double arrivals_ = 0;  // of the last Refresh: the decision that follows it was drawn under these
  std::vector<Decisions> recorded_;
};

}  // namespace dcgym::rack
