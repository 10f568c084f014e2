// AuTO's two agents on a FlowSim (Chen et al. SIGCOMM 2018, §4): what they
// observe, how their actions map onto the model, and their rewards, defined
// once for flow_v0 (envs/flow/) and for a policy run inside the engine.
//
// sRLA (§4.1) sets the K - 1 MLFQ thresholds from K - 1 numbers in [-1, 1]
// (a tanh actor's output). They split [lo, hi] in log bytes into K gaps, the
// i-th of weight exp(8 a_i), the last (from t_{K-1} to hi) of weight 1:
//   log t_i = log lo + (log hi - log lo) x sum_{j <= i} w_j / (1 + sum_j w_j)
// so every point of the box is a valid increasing set; a = 0 spaces the
// thresholds evenly in log bytes; the map is smooth, with no flat region
// where an action stops mattering; and every set whose gaps lie within a
// factor e^8 (about 3000) of its last gap is exactly one action (PIAS's
// sets, whose first threshold is far above lo and the rest close together,
// within 0.1%). AuTO's actor outputs gaps g_i in the size CDF (§4.1, eq. 7);
// gaps in log bytes need no CDF, so one policy serves several workloads.
//
// lRLA (§4.2) chooses, for each of the n_l oldest active long flows, a
// priority level, a rate cap and a path: three indices per flow. Level l is
// level l (the flow is pinned there); with `keep_level` index `levels` (one
// past the last level) leaves the flow's level alone: a flow never pinned
// stays with MLFQ, whose thresholds demote it as it sends (PIAS's handling of
// a flow no rule targets), a pinned one keeps its level; cap c is
// cap_fractions[c] x link_gbps
// (a fraction >= 1 removes the cap); path p is p modulo the flow's number of
// paths (pairs in one rack have one). With `move_check` a path change is
// made only if, counted after the changes of the older listed flows, the new
// path costs the flow less than its current one (FlowSim::CheckMoves):
// pathbal's one-at-a-time accounting, which choices made for every flow from
// one observation lack.
//
// Observations are AuTO's flow lists (§5.1.1), each feature scaled to about
// [0, 1] so a network can take them as they are:
//   host index / hosts, path / paths, level / levels,
//   bytes: log10(1 + bytes) / 10, seconds: log10(1 + t / 1 us) / 10,
// the last two clipped to 1 (10 GB, 2.8 hours), so every value is in [0, 1].
// sRLA: the last m_s finished short flows (7 features each); lRLA: the n_l
// oldest active long flows (6), then the last m_l finished long flows (7).
// Rows without a flow are zeros. With `path_loads` each active long flow's
// row also holds, per path q of the P paths, pathbal's cost of q for it (the
// unfinished bytes of the other flows at its level or above on q's links,
// FlowSim::ObservePathCosts) over the largest of its paths' costs: in [0, 1],
// the least-loaded path the smallest, 1 for paths its pair does not have,
// 0 for all when no path carries anything. What a network applied to each
// row alone (a row-wise lRLA) needs to balance paths as pathbal does. With
// `path_loads_last` the row then holds the same costs counted at the last
// level (all the bytes on the links): what the paths cost a flow the action
// pins there, as pathbal counts them for the flows it demotes.
//
// Rewards: sRLA's T_{t-1} / T_t, the ratio of the mean FCT of the flows
// finished in two consecutive intervals (§4.1); lRLA's P_t / P_{t-1}, the
// ratio of the mean throughput (size / FCT) of the long flows finished in
// them (§4.2, eq. 3 as its text states it: averages), capped. An interval
// in which no flow (long flow) finished gives reward 1 and keeps the last
// mean for the next ratio.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/flow/flow_sim.hpp"

namespace dcgym::flow {

// The maps' parameters (flow_v0's arguments; its docstring gives the defaults).
struct AutoSpec {
  double threshold_lo_bytes = 0, threshold_hi_bytes = 0;  // sRLA's range, 0 < lo < hi
  std::vector<double> cap_fractions;                      // lRLA's rate caps, fractions of link_gbps, > 0
  double srla_reward_cap = 0;                             // > 0; +infinity: none
  double lrla_reward_cap = 0;
  bool path_loads = false;       // lRLA's rows also hold their paths' relative loads
  bool path_loads_last = false;  // and, after them, the same at the last level (the costs once pinned there)
  bool keep_level = false;       // lRLA's level index has one more choice, `levels`: leave the flow's level alone
  bool move_check = false;       // lRLA's path changes go through FlowSim::CheckMoves (oldest flow first)

  // Throws std::invalid_argument naming the bad field.
  void Validate() const;
};

// sRLA's gap weights are exp(kThresholdGapScale x a).
inline constexpr double kThresholdGapScale = 8.0;

// sRLA's map: n = K - 1 actions (clipped to [-1, 1]; NaN counts as -1) -> n thresholds in bytes in
// [lo_bytes, hi_bytes] (0 < lo < hi, finite; std::invalid_argument otherwise).
void ThresholdsFromAction(const double* action, uint32_t n, double lo_bytes, double hi_bytes, double* out);

// Scaled features (the table in the header comment).
inline constexpr uint32_t kLrlaChoices = 3;  // per long flow: level, cap, path

class AutoAgents {
 public:
  AutoAgents(const FlowSim& sim, const AutoSpec& spec);

  uint32_t SrlaActions() const { return levels_ - 1; }
  uint32_t SrlaObservations() const { return short_rows_ * kFinishedFeatures; }
  uint32_t LrlaFlows() const { return long_rows_; }
  // Features of an active long flow's row: 6, and one per path with path_loads and with path_loads_last.
  uint32_t LrlaRowWidth() const {
    return kActiveFeatures + (spec_.path_loads ? paths_ : 0) + (spec_.path_loads_last ? paths_ : 0);
  }
  uint32_t LrlaObservations() const { return long_rows_ * LrlaRowWidth() + long_finished_rows_ * kFinishedFeatures; }
  uint32_t Levels() const { return levels_; }
  // The number of choices of each of a long flow's three indices (MultiDiscrete's nvec): levels (one more with
  // keep_level), caps, paths.
  uint32_t LevelChoices() const { return levels_ + (spec_.keep_level ? 1 : 0); }
  uint32_t Caps() const { return static_cast<uint32_t>(spec_.cap_fractions.size()); }
  uint32_t Paths() const { return paths_; }
  const AutoSpec& Spec() const { return spec_; }

  // Forget the last means (a new episode).
  void Reset();
  // Checks an lRLA action (long_rows x 3 indices); throws std::invalid_argument naming the first bad index.
  void CheckLrla(const int64_t* choices) const;
  // Applies the agents' actions to the flows observed last; a null action leaves that agent's part alone.
  void Act(FlowSim& sim, const double* srla, const int64_t* lrla) const;
  // Writes both observations and remembers the long flows they list (the next Act's targets).
  void Observe(const FlowSim& sim, float* srla_obs, float* lrla_obs);
  // The rewards of the interval that just ended (FlowSim::Interval()); updates the last means.
  void Rewards(const FlowSim& sim, double* srla, double* lrla);
  // Act, run one interval of `seconds` (> 0, finite: checked before acting), Observe, Rewards.
  void Step(FlowSim& sim, const double* srla, const int64_t* lrla, double seconds, float* srla_obs, float* lrla_obs,
            double* rewards);
  const std::vector<int64_t>& Flows() const { return flows_; }

 private:
  AutoSpec spec_;
  uint32_t levels_, paths_, hosts_;
  uint32_t short_rows_, long_rows_, long_finished_rows_;
  double link_gbps_;
  std::vector<int64_t> flows_;        // handles of the listed long flows (-1: none)
  std::vector<uint32_t> pair_paths_;  // paths between each listed flow's endpoints
  std::vector<double> raw_;           // scratch: unscaled rows
  std::vector<double> costs_;         // scratch: path costs (long_rows x paths) with path_loads
  double last_fct_, last_throughput_;
};

// Refuses (std::invalid_argument) pairs StepAutoBatch cannot step: not one agents per simulation, an entry
// null or repeated, agents whose sizes differ from the first's (the arrays' strides), no thread.
void CheckAutoBatch(const std::vector<FlowSim*>& sims, const std::vector<AutoAgents*>& agents, uint32_t threads);

// Steps every (simulation, agents) pair by one interval, on up to `threads`
// threads (each pair on one thread: results do not depend on the count).
// Row i of each array belongs to pair i; srla or lrla may be null (that agent
// does not act), otherwise strides are SrlaActions() and LrlaFlows() x 3.
// Checks CheckAutoBatch's conditions and `seconds` first.
void StepAutoBatch(const std::vector<FlowSim*>& sims, const std::vector<AutoAgents*>& agents, const double* srla,
                   const int64_t* lrla, double seconds, float* srla_obs, float* lrla_obs, double* rewards,
                   uint32_t threads = 1);

}  // namespace dcgym::flow
