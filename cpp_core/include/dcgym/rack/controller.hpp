// Malcolm inside the engine: a RackSim driven heartbeat by heartbeat by every
// node's linear policy, optionally learning online, entirely in C++.
//
// Each heartbeat, for each node i, the controller does what rack_v0 and
// MalcolmRLModule do in Python (envs/rack_game.py, agents/malcolm/):
//
// 1. observe: obs_ij = clip(float32(belief_ij * scale), 0, obs_clip), the
//    first N entries of node i's rack_v0 observation (scale = 1 / mean
//    service time for the expected_wait load metric, else 1), and x = obs *
//    load_scale (MalcolmRLModule.loads);
// 2. act: the logits W_m φ_a(x), W_s φ_a(x), centred and clipped to
//    ±max_logit and soft-maxed into the node's migration and stealing tables
//    (MalcolmRLModule._centre, RackGame.probabilities);
// 3. advance the rack one heartbeat (RackSim::RunUntil(now + heartbeat));
// 4. learn (optional): the team reward of envs/rack_game.team_reward for the
//    configured reward, the node's decision counts of the heartbeat, and
//    every D heartbeats one MalcolmLearner update per node, then consensus
//    every P rounds (agents/malcolm/malcolm_learner.py).
//
// The RackSim must use entry 'nodes' and dispatch policy 'table' (as
// RackGame builds it). Nothing allocates per heartbeat. It lives with the rack
// model, above the runtime, so that the runtime knows no model.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/rack/game.hpp"
#include "dcgym/rack/rack_sim.hpp"
#include "dcgym/runtime/learner.hpp"

namespace dcgym::rack {

// The runtime pieces the controller drives (the runtime itself knows no model).
using runtime::ActorPolicy;
using runtime::AlignedVector;
using runtime::LearnerConfig;
using runtime::MalcolmLearner;

// The game's team reward, as rack_v0 computes it (rack/game.hpp).
using game::Reward;
using game::RewardCosts;

// The reward a controller optimises when its options name none: Malcolm's code learns from the imbalance
// delta, the paper from the utility.
Reward DefaultReward(runtime::Variant variant);

struct ControllerOptions {
  double heartbeat_us = 100.0;       // RackEnvConfig.heartbeat_us
  double warmup_us = 0.0;            // RackEnvConfig.warmup_us: simulated first with the engine's initial tables
  float obs_clip = 100.0f;           // RackEnvConfig.obs_clip
  float max_logit = 10.0f;           // RackEnvConfig.max_logit
  Reward reward = Reward::kUtility;  // DefaultReward of the learner's variant, when unsure
  RewardCosts costs;                 // RewardCosts::Default(reward), unless set
  bool learn = false;                // update the parameters online
  LearnerConfig learner;             // bases, load_scale and (when learning) everything else
};

/// Eq. (1) on the rack's true loads (game::Imbalance); `loads` is scratch of N entries.
double TrueImbalance(RackSim& sim, double scale, std::vector<double>& loads);

/// The team reward of the heartbeat just simulated (rack_v0's, game::TeamReward) for `options`' reward and
/// costs, from the engine's decision counts (and its step latencies, for the latency rewards: cleared here).
double HeartbeatReward(RackSim& sim, const ControllerOptions& options, double previous_imbalance, double imbalance,
                       double scale);

/// What one Run() measured.
struct RunStats {
  std::uint64_t heartbeats = 0;
  double imbalance_sum = 0.0;  // Σ over heartbeats of eq. (1) on the true loads after each heartbeat
  double reward_sum = 0.0;     // Σ of the team reward (unscaled)
};

class RackController {
 public:
  /// Drives `sim` (which must outlive the controller) with `learner`'s parameters
  /// (the learner's bases and load_scale define the policy). Applies the
  /// warm-up and takes the first observation.
  RackController(RackSim& sim, const ControllerOptions& options, MalcolmLearner& learner);

  /// Runs `heartbeats` heartbeats: act, advance, (learn).
  RunStats Run(std::uint64_t heartbeats);

  std::size_t NumNodes() const { return n_; }
  /// Node i's observation used by the last heartbeat's action (N entries, before load_scale),
  /// or the next one before the first Run.
  const float* LastObservation(std::size_t i) const { return last_obs_.data() + i * n_; }
  /// The migration / stealing tables set by the last heartbeat (N x N, row i = node i).
  const std::vector<double>& MigrationTables() const { return table_m_; }
  const std::vector<double>& StealTables() const { return table_s_; }
  /// Heartbeats since the last learner update (rows pending in the mini-batch).
  std::size_t PendingRows() const { return row_; }

 private:
  void Observe();  // beliefs -> obs_ (N x N) and x_ (scaled)
  void Act();      // x_ -> tables, set in the engine; φ_a, π cached for the learner

  RackSim& sim_;
  ControllerOptions options_;
  MalcolmLearner& learner_;
  ActorPolicy policy_;
  std::size_t n_, fa_, s_, d_;
  double scale_;  // raw load -> observation unit
  double previous_imbalance_ = 0.0;

  std::vector<float> obs_, last_obs_, x_, phi_, tmp_, shared_obs_;
  AlignedVector<float> z_;  // both actors' logits (S entries)
  std::vector<double> table_m_, table_s_;
  std::vector<double> loads_, beliefs_;
  // The pending mini-batch, per node: D + 1 states (x_t, x_D = the next), counts, φ_a and π per row.
  std::size_t row_ = 0;
  std::vector<float> states_, migrate_, steal_, phi_a_;
  AlignedVector<float> pi_;  // N x D rows of S: both actors' raw softmax (ActorPolicy layout)
  std::vector<double> rewards_;
};

}  // namespace dcgym::rack
