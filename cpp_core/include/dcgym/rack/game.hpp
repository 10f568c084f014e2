// Malcolm's load-balancing game on the rack engine (Malcolm §4): the team
// reward and one step of B racks, shared by every rack environment (through
// the binding's step_rack_game and step_rack_batch) and by the in-engine
// RackController. Each fact of the game is here once:
//
// - the imbalance of x = true loads x scale, Malcolm eq. (1) over ordered
//   pairs, sum_{i,j} (x_i - x_j)^2 = 2N sum_i (x_i - mean x)^2;
// - the team reward of each variant (TeamReward);
// - the observation a node makes: clip(float32(belief x scale), 0, clip)
//   for every node, then its own true load the same way;
// - how actions become tables: a softmax of logits clipped to +-max_logit,
//   or weights normalised, validated before any table changes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dcgym/rack/rack_sim.hpp"

namespace dcgym::rack::game {

// The team rewards, and their names in the order of the enum: the environments' `reward` argument
// (envs/rack/game.py takes this table from the binding, dcgym.cpp_core.RACK_REWARDS).
enum class Reward : std::uint32_t { kUtility = 0, kImbalanceDelta = 1, kNegP99 = 2, kNegMean = 3 };
inline constexpr const char* kRewardNames[] = {"utility", "imbalance_delta", "neg_p99", "neg_mean"};

// The reward called `name`; std::invalid_argument naming `field` and the allowed names otherwise.
Reward RewardNamed(const std::string& name, const std::string& field);
inline const char* RewardName(Reward r) { return kRewardNames[static_cast<std::uint32_t>(r)]; }

// Costs in the team reward: per migration, per steal request (successful or failed), per failed steal, per dropped
// task. Eq. (1) makes C linear in migrations and steals; the paper gives no constants, the authors' code's are used.
struct RewardCosts {
  double migration = 1e-4, steal = 1e-4, failed_steal = 0.0, drop = 0.0;
  // The variant's defaults: utility (1e-4, 1e-4, 0, 0); imbalance_delta, the code's (1e-4, 1e-4, 0, 10); the
  // latency rewards none.
  static RewardCosts Default(Reward r);
};

// The totals of one step that the costs multiply.
struct CostCounts {
  double migrations = 0, steal_requests = 0, failed_steals = 0, dropped = 0;
};

struct RewardSpec {
  Reward kind = Reward::kUtility;
  RewardCosts costs;
};

// 2N sum (x_v - mean x)^2 of x = loads x scale: eq. (1) over ordered pairs (n >= 1).
double Imbalance(const double* loads, std::uint32_t n, double scale);

// The team reward of a step. `latency` is the step's p99 (kNegP99) or mean (kNegMean) latency in load units, used
// only when `completed` > 0 (an empty step costs nothing); `previous_imbalance` is used by kImbalanceDelta.
double TeamReward(const RewardSpec& spec, double previous_imbalance, double imbalance, const CostCounts& counts,
                  double latency, std::uint64_t completed, std::size_t n);

// How a step writes observations: obs[k, v, j] = clip(belief_v(j) x scale, 0, clip) for j < N and obs[k, v, N] =
// clip(true load of v x scale, 0, clip), float32, in rows of `dim` >= N + 1 (the rest left 0 for the caller).
struct ObsSpec {
  double scale = 1.0;
  float clip = 0.0f;
  std::size_t dim = 0;  // 0: no observations
};

// Where a step of B racks of N nodes writes (every pointer to rows of its shape, row-major; null = not wanted).
// Simulation k writes row rows[k] (row k without `rows`), so a caller's buffers of R >= B rows, allocated once, take
// the step of any subset of its copies in place:
struct StepBuffers {
  const std::int64_t* rows = nullptr;          // (B): the row of each simulation, distinct, in [0, R)
  double* beliefs = nullptr;                   // (N, N)
  double* loads = nullptr;                     // (N): true loads, in the engine's unit
  std::uint64_t* migrate = nullptr;            // (N, N): decisions node i -> j of the step
  std::uint64_t* steal = nullptr;              // (N, N)
  std::uint64_t* migrations = nullptr;         // (N)
  std::uint64_t* steals = nullptr;             // (N)
  std::uint64_t* failed_steals = nullptr;      // (N)
  std::uint64_t* dropped = nullptr;            // (N)
  std::uint64_t* completed_by_node = nullptr;  // (N)
  double* latency_mean = nullptr;              // (): the step's tasks, us
  double* latency_p99 = nullptr;               // ()
  std::uint64_t* completed = nullptr;          // ()
  double* now = nullptr;                       // ()
  float* obs = nullptr;                        // (N, dim), with ObsSpec::dim > 0
  double* imbalance = nullptr;                 // (): Imbalance(loads, N, obs or reward scale)
  double* cost_counts = nullptr;               // (4): CostCounts of the step
  double* reward = nullptr;                    // (): TeamReward, with a RewardSpec
};

// The simulations of a batched step: node-entry racks of one size (std::invalid_argument otherwise).
void CheckBatch(const std::vector<RackSim*>& sims);

// What Advance refuses before anything runs (std::invalid_argument naming the argument): a batch CheckBatch
// refuses, a duration that is negative or not finite, and with observations (dim > 0) rows narrower than N + 1
// or a scale or clip that is not finite and > 0. A caller that changes the racks before advancing (tables from
// actions) calls it first, so that a refused step changes nothing.
void CheckAdvance(const std::vector<RackSim*>& sims, double duration_us, const ObsSpec& obs);

// Every node's tables from actions (B, N, 2N): per node N migration then N stealing entries, logits (softmax of
// the values clipped to +-max_logit, in (0, 100]) or weights (normalised). Every row is validated before any
// table changes; std::invalid_argument names the copy, node and half.
template <typename T>
void SetTablesFromActions(const std::vector<RackSim*>& sims, const T* actions, bool logits, double max_logit);

// Advance every simulation by `duration_us` and write what the step observed into `out`. With `reward` (and
// `previous_imbalance`, one value per row, read before and written after with the new imbalance for
// kImbalanceDelta), the team reward too. `scale` (finite, > 0) turns the engine's loads into load units (1 / mean
// service time for expected_wait). Checks CheckAdvance's conditions and the scale first.
void Advance(const std::vector<RackSim*>& sims, double duration_us, const ObsSpec& obs, double scale,
             const RewardSpec* reward, double* previous_imbalance, const StepBuffers& out);

}  // namespace dcgym::rack::game
