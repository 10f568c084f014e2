// The `fill` head (policy file kind 4, docs/policy_format.md): a rack policy
// whose class contains water-filling. Node i's migration table is the
// water-filling table (runtime/water_fill.hpp) over levels and capacities that
// linear gains of a few features adjust; with every gain 0 it is the engine's
// `water_fill` heuristic with the file's horizon, mix and steal rule, so
// learning starts from that rule and can only move away from it by choice.
//
// Node i sees the levels u_j (N, in mean service times) it believes and the
// rack's arrivals per heartbeat a (> 0). Its features are
//
//   psi = [1, min(rho, 2), tanh(mean_j u_j), tanh(u_i)],  rho = a / (sum_j c_j x heartbeat_services),
//
// rho the rack's utilisation the arrivals imply, so one file acts at every
// load. Its gains, rows of W_i (2N + 3 rows of 4), give
//
//   volume     = horizon x a x exp(clip(<W_i[0], psi>, +-8))     (the fill level's volume)
//   mix        = clip(mix0 + <W_i[1], psi>, 0, 1)                 (the share of the capacity split)
//   threshold  = <W_i[2], psi>                                    (the steal rule's margin)
//   c'_j       = c_j x exp(clip(<W_i[3 + j], psi>, +-8))          (per-destination capacity gains)
//   u'_j       = u_j + <W_i[3 + N + j], psi>                      (per-destination level offsets)
//
// and the migration table is WaterFillTable(u', c', volume, mix). With
// steal on, the stealing table is one-hot on the first node of the highest
// u'_j if u'_j > u'_i + threshold, else on i (no steal): water_fill's steal
// rule at threshold 0. Arithmetic is double (the parameters are float32).
//
// A file with `per_task` (format version 6) is meant to be asked at every
// arriving task, with the node's beliefs then (its own sends since the last
// broadcast included), not once per heartbeat: the `water_fill` heuristic's
// per_task rule. The tables are the same function of what the node believes;
// only how often it is asked differs (the engine's FillController does it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "dcgym/runtime/water_fill.hpp"

namespace dcgym::runtime {

inline constexpr std::size_t kFillFeatures = 4;  // psi's length
inline constexpr double kFillMaxExponent = 8.0;  // the log gains are clipped to +-8: exp stays finite
inline constexpr double kFillMaxUtilisation = 2.0;

/// Rows of a node's gains for N nodes: volume, mix, threshold, N capacity gains, N level offsets.
inline constexpr std::size_t FillRows(std::size_t n) { return 2 * n + 3; }

class FillPolicy {
 public:
  FillPolicy() = default;
  /// `capacity` N floats > 0; `weights` N x FillRows(N) x kFillFeatures floats (node, row, feature).
  FillPolicy(std::size_t n, float level_scale, float heartbeat_services, float horizon, float mix, bool steal,
             std::vector<float> capacity, std::vector<float> weights, bool per_task = false)
      : n_(n),
        level_scale_(level_scale),
        heartbeat_services_(heartbeat_services),
        horizon_(horizon),
        mix_(mix),
        steal_(steal),
        per_task_(per_task),
        capacity_(std::move(capacity)),
        weights_(std::move(weights)),
        level_(n),
        cap_(n),
        nodes_(n),
        order_(n) {
    for (std::size_t j = 0; j < n; ++j) nodes_[j] = static_cast<std::uint32_t>(j);
    for (float c : capacity_) total_capacity_ += c;
  }

  std::size_t num_nodes() const { return n_; }
  float level_scale() const { return level_scale_; }
  float heartbeat_services() const { return heartbeat_services_; }
  float horizon() const { return horizon_; }
  float mix() const { return mix_; }
  bool steal() const { return steal_; }
  /// The migration table is meant to be recomputed at each arriving task (format version 6).
  bool per_task() const { return per_task_; }
  const std::vector<float>& capacity() const { return capacity_; }
  /// Node `node`'s gains: FillRows(N) rows of kFillFeatures floats.
  const float* gains(std::size_t node) const { return weights_.data() + node * FillRows(n_) * kFillFeatures; }
  /// The same, writable (the online learner, runtime/fill_learner.hpp, steps them in place).
  float* mutable_gains(std::size_t node) { return weights_.data() + node * FillRows(n_) * kFillFeatures; }

  /// The levels of raw loads in the engine's units (expected wait in us): raw x level_scale, N each.
  void Levels(const double* raw, double* levels) const {
    for (std::size_t j = 0; j < n_; ++j) levels[j] = raw[j] * static_cast<double>(level_scale_);
  }

  /// psi for node `node` (kFillFeatures doubles).
  void Features(std::size_t node, const double* levels, double arrivals, double* psi) const {
    double mean = 0;
    for (std::size_t j = 0; j < n_; ++j) mean += levels[j];
    mean /= static_cast<double>(n_);
    const double rho = arrivals / (total_capacity_ * static_cast<double>(heartbeat_services_));
    psi[0] = 1.0;
    psi[1] = std::min(std::max(rho, 0.0), kFillMaxUtilisation);
    psi[2] = std::tanh(mean);
    psi[3] = std::tanh(levels[node]);
  }

  /// Node `node`'s migration and stealing tables (N doubles each, summing to 1) for the levels it believes
  /// (N, finite) and the rack's arrivals per heartbeat (finite, > 0). Precondition: node < num_nodes().
  /// Works in scratch allocated at construction: never allocates.
  void Tables(std::size_t node, const double* levels, double arrivals, double* migration, double* stealing) {
    double psi[kFillFeatures];
    Features(node, levels, arrivals, psi);
    const float* w = gains(node);
    const auto dot = [&](std::size_t row) {
      double s = 0;
      for (std::size_t k = 0; k < kFillFeatures; ++k) s += static_cast<double>(w[row * kFillFeatures + k]) * psi[k];
      return s;
    };
    const auto gain = [](double g) { return std::exp(std::min(std::max(g, -kFillMaxExponent), kFillMaxExponent)); };
    const double volume = std::max(static_cast<double>(horizon_) * arrivals * gain(dot(0)), 1e-12);
    const double mix = std::min(std::max(static_cast<double>(mix_) + dot(1), 0.0), 1.0);
    const double threshold = dot(2);
    for (std::size_t j = 0; j < n_; ++j) {
      cap_[j] = static_cast<double>(capacity_[j]) * gain(dot(3 + j));
      level_[j] = levels[j] + dot(3 + n_ + j);
    }
    WaterFillTable(level_.data(), cap_.data(), nodes_, volume, mix, order_, migration);
    std::size_t victim = 0;
    for (std::size_t j = 1; j < n_; ++j)
      if (level_[j] > level_[victim]) victim = j;
    if (!(steal_ && level_[victim] > level_[node] + threshold)) victim = node;
    for (std::size_t j = 0; j < n_; ++j) stealing[j] = j == victim ? 1.0 : 0.0;
  }

 private:
  std::size_t n_ = 0;
  float level_scale_ = 1.0f, heartbeat_services_ = 1.0f, horizon_ = 1.0f, mix_ = 0.0f;
  bool steal_ = false, per_task_ = false;
  double total_capacity_ = 0;
  std::vector<float> capacity_;
  std::vector<float> weights_;
  std::vector<double> level_, cap_;  // scratch: u' and c'
  std::vector<std::uint32_t> nodes_, order_;
};

}  // namespace dcgym::runtime
