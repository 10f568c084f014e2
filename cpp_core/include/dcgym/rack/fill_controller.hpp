// A `fill` policy file (runtime/fill.hpp) acting in the engine: every
// heartbeat, each node's migration and stealing tables from the loads it
// believes, as a deployment would compute them, with no Python between
// heartbeats; optionally learning its gains online (runtime/fill_learner.hpp).
//
// Node i's levels are its belief row (RackSim::BeliefRow, expected waits in
// us for the expected_wait metric) times the file's level_scale; the rack's
// arrivals per heartbeat are the engine's arrival rate times the heartbeat
// (what the `water_fill` heuristic sizes its volume with; a deployment
// measures it). With zero gains the tables are water_fill's (to the float32
// rounding of the file's level_scale, horizon and mix).
//
// Learning (options.learn): after each heartbeat, the team reward of
// options.reward (as RackController, rack_v0) and node i's migration decisions
// of the heartbeat; every minibatch_size heartbeats one FillLearner update per
// node, whose critic sees x = clip(float32(level), 0, obs_clip) x load_scale
// (rack_v0's observation and MalcolmFillRLModule's loads). The new gains act
// from the next heartbeat. Acting never depends on the learner's state but
// through the gains, so a zero learning rate runs bit for bit as no learning.
//
// A per_task file (runtime/fill.hpp) also sets the arriving node's migration
// table at each task, from its beliefs then (rack/task_fill.hpp). Learning,
// it records each decision with the levels and arrivals it acted on and the
// learner takes each decision's log-probability under the table of its own
// moment (FillBatch's per-task fields).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "dcgym/rack/controller.hpp"
#include "dcgym/rack/rack_sim.hpp"
#include "dcgym/rack/task_fill.hpp"
#include "dcgym/runtime/fill.hpp"
#include "dcgym/runtime/fill_learner.hpp"

namespace dcgym::rack {

class FillController {
 public:
  /// Drives `sim` (entry 'nodes', dispatch 'table'; it must outlive the controller) with `policy` every
  /// `heartbeat_us`, after `warmup_us` with the engine's initial tables. std::invalid_argument if they do not fit.
  FillController(RackSim& sim, runtime::FillPolicy policy, double heartbeat_us, double warmup_us = 0.0);
  /// The same with ControllerOptions (heartbeat_us, warmup_us, obs_clip, reward, costs, learn, learner; max_logit
  /// is not used); the learner's config is checked by FillLearner::Validate when learning.
  FillController(RackSim& sim, runtime::FillPolicy policy, const ControllerOptions& options);
  FillController(const FillController&) = delete;  // the simulation may hold task_ (per_task)
  FillController& operator=(const FillController&) = delete;

  /// Runs `heartbeats` heartbeats: set every node's tables, advance one heartbeat, (learn).
  RunStats Run(std::uint64_t heartbeats);

  std::size_t NumNodes() const { return n_; }
  /// The migration / stealing tables set by the last heartbeat (N x N, row i = node i).
  const std::vector<double>& MigrationTables() const { return table_m_; }
  const std::vector<double>& StealTables() const { return table_s_; }
  /// The policy acting (its gains are the learned ones when learning).
  const runtime::FillPolicy& Policy() const { return policy_; }
  /// The learner, or null when not learning.
  const runtime::FillLearner* Learner() const { return learner_ ? &*learner_ : nullptr; }

 private:
  void Act();
  double HeartbeatArrivals() const;    // the rack's arrivals per heartbeat at the engine's rate now
  void BelievedLevels(uint32_t node);  // levels_: node's belief row in the file's levels

  RackSim& sim_;
  runtime::FillPolicy policy_;
  ControllerOptions options_;
  std::size_t n_;
  double scale_ = 1.0;  // raw load -> observation unit (for the imbalance and the reward)
  double previous_imbalance_ = 0.0;
  std::vector<double> raw_, levels_, table_m_, table_s_, loads_;
  // Learning: the pending mini-batch per node (D + 1 critic inputs, D level rows, arrivals, counts), rewards.
  std::optional<runtime::FillLearner> learner_;
  std::size_t d_ = 0, row_ = 0;
  std::vector<float> x_, migrate_;
  std::vector<double> batch_levels_, arrivals_, rewards_;
  // per_task: the tables between heartbeats and, learning, the pending batch's decisions (task_) with each
  // heartbeat's offset into them per node (task_offsets_). Declared after policy_: unhooked before it dies.
  std::optional<TaskFill> task_;
  std::vector<std::vector<std::uint32_t>> task_offsets_;
};

}  // namespace dcgym::rack
