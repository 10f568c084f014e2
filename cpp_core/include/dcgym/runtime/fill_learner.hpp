// Malcolm's online learning of the `fill` head (runtime/fill.hpp): Algorithm 1's
// TD(0) actor-critic (POMACS 2022, §6.1-6.2) on every node's fill gains, the
// update agents/malcolm/malcolm_learner.py's fill loss makes in torch:
//
//   loss = -(1/D) Σ_t δ_t (V(x_t) + Σ_j c̃_tj log p_j(t)),   δ detached,
//
// δ_t as learner.hpp (paper: u_t + γ V(x'_t) - V(x_t); code: minus R̄),
// c̃ the node's migration decisions of heartbeat t (paper: counts; code:
// counts / total, 0 with none) and p the node's migration table
// (FillPolicy::Tables). The stealing half is the rule: no gradient. The
// gradient of log p_j reaches the gains through the water-filling table in
// closed form (FillLogProbGradient, the backward pass of
// fill_rl_module.water_fill_torch); the learned rows are the torch actor's
// (volume, capacity gains, level offsets); the mix and steal-margin rows are
// never changed. One AdamW per block as in torch (critic at lr_critic, the
// gains at lr_actor), critics averaged every consensus_period rounds. The
// critic starts at 0, the gains at the policy file's (0: water_fill).
//
// A per-task policy (FillPolicy::per_task) decides each task from a table of
// its own moment: its batch lists the decisions of each heartbeat with the
// levels and arrivals each acted on, and the actor term is Σ_t δ_t Σ_{k in t}
// c̃_k ∇ log p_{j_k}(levels_k), c̃_k 1 (paper) or 1 / (decisions of heartbeat t)
// (code). A heartbeat's decisions all made on the heartbeat's levels give the
// heartbeat batch's gradient exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dcgym/runtime/fill.hpp"
#include "dcgym/runtime/learner.hpp"

namespace dcgym::runtime {

/// Adds `coef` x Σ_j weight_j ∇ log p_j to `grad` (FillRows(N) x kFillFeatures, node `node`'s gains), p the
/// migration table policy.Tables writes for these levels and arrivals. Rows 1 and 2 (mix, steal margin) get
/// nothing. `scratch` and `order` are reused (resized once). Entries with weight 0 contribute nothing.
inline void FillLogProbGradient(const FillPolicy& policy, std::size_t node, const double* levels, double arrivals,
                                const float* weight, double coef, double* grad, std::vector<double>& scratch,
                                std::vector<std::uint32_t>& order) {
  const std::size_t n = policy.num_nodes(), rows = FillRows(n);
  scratch.resize(7 * n + rows);
  double* c = scratch.data();  // c'
  double* u = c + n;           // u'
  double* a = u + n;           // ∂objective / ∂p_j = weight_j / p_j
  double* dc = a + n;
  double* du = dc + n;
  double* w = du + n;
  double* p = w + n;
  double* dz = p + n;  // z_r, then ∂objective / ∂z_r
  double psi[kFillFeatures];
  policy.Features(node, levels, arrivals, psi);
  const float* g = policy.gains(node);
  for (std::size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (std::size_t k = 0; k < kFillFeatures; ++k) s += static_cast<double>(g[r * kFillFeatures + k]) * psi[k];
    dz[r] = s;  // z_r for now
  }
  const auto inside = [](double z) { return z >= -kFillMaxExponent && z <= kFillMaxExponent; };
  const auto gain = [](double z) { return std::exp(std::min(std::max(z, -kFillMaxExponent), kFillMaxExponent)); };
  const double raw_volume = static_cast<double>(policy.horizon()) * arrivals * gain(dz[0]);
  const double volume = std::max(raw_volume, 1e-12);
  const double mix = std::min(std::max(static_cast<double>(policy.mix()) + dz[1], 0.0), 1.0);
  double total = 0;
  for (std::size_t j = 0; j < n; ++j) {
    c[j] = static_cast<double>(policy.capacity()[j]) * gain(dz[3 + j]);
    u[j] = levels[j] + dz[3 + n + j];
    total += c[j];
  }
  // The fill level over the lowest nodes (WaterFillTable's order and stop rule).
  order.resize(n);
  for (std::size_t j = 0; j < n; ++j) order[j] = static_cast<std::uint32_t>(j);
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t x, std::uint32_t y) { return u[x] < u[y] || (u[x] == u[y] && x < y); });
  double c_sum = 0, cu_sum = 0, fill = 0;
  std::size_t filled = 0;
  for (std::size_t k = 0; k < n; ++k) {
    c_sum += c[order[k]];
    cu_sum += c[order[k]] * u[order[k]];
    fill = (volume + cu_sum) / c_sum;
    filled = k + 1;
    if (k + 1 == n || fill <= u[order[k + 1]]) break;
  }
  double h = 0;
  for (std::size_t j = 0; j < n; ++j) h += (w[j] = c[j] * std::max(fill - u[j], 0.0));
  for (std::size_t j = 0; j < n; ++j) {
    p[j] = h > 0 ? (1 - mix) * w[j] / h + mix * c[j] / total : mix * c[j] / total + (j == order[0] ? 1 - mix : 0.0);
    a[j] = weight[j] != 0.0f ? static_cast<double>(weight[j]) / p[j] : 0.0;
    dc[j] = du[j] = 0;
  }
  // The capacity split mix c'_j / Σ c'.
  double ac = 0;
  for (std::size_t j = 0; j < n; ++j) ac += a[j] * c[j];
  for (std::size_t j = 0; j < n; ++j) dc[j] += mix * (a[j] / total - ac / (total * total));
  double d_volume = 0;
  if (h > 0) {
    double aw = 0;
    for (std::size_t j = 0; j < n; ++j) aw += a[j] * w[j];
    double d_fill = 0;
    for (std::size_t j = 0; j < n; ++j) {
      const double dw = (1 - mix) * (a[j] / h - aw / (h * h));
      if (fill - u[j] > 0) {  // relu's gradient is 0 at 0, as torch's
        dc[j] += dw * (fill - u[j]);
        d_fill += dw * c[j];
        du[j] -= dw * c[j];
      }
    }
    // fill = (volume + Σ_filled c' u') / Σ_filled c'.
    d_volume = d_fill / c_sum;
    for (std::size_t k = 0; k < filled; ++k) {
      const std::uint32_t j = order[k];
      du[j] += d_fill * c[j] / c_sum;
      dc[j] += d_fill * (u[j] - fill) / c_sum;
    }
  }
  const double z0 = dz[0];
  dz[0] = (raw_volume >= 1e-12 && inside(z0)) ? d_volume * raw_volume : 0.0;
  dz[1] = dz[2] = 0.0;
  for (std::size_t j = 0; j < n; ++j) {
    dz[3 + j] = inside(dz[3 + j]) ? dc[j] * c[j] : 0.0;
    dz[3 + n + j] = du[j];
  }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < kFillFeatures; ++k) grad[r * kFillFeatures + k] += coef * dz[r] * psi[k];
}

/// One node's mini-batch of D heartbeats for the fill learner (row-major).
struct FillBatch {
  std::size_t d = 0;
  const float* x = nullptr;          // (D + 1) x N critic inputs (levels clipped, x load_scale): x_t, then x_D
  const double* levels = nullptr;    // D x N levels the node acted on (mean service times)
  const double* arrivals = nullptr;  // D arrivals per heartbeat the node acted on
  const double* reward = nullptr;    // D team rewards, unscaled
  const float* migrate = nullptr;    // D x N migration decisions per destination
  // Per task (all null otherwise): heartbeat t's decisions are [task_offsets[t], task_offsets[t + 1]); decision k
  // acted on task_levels[k N .. k N + N) and task_arrivals[k] and chose task_dest[k]. migrate and levels are unused.
  const std::uint32_t* task_offsets = nullptr;  // D + 1, non-decreasing, from 0
  const double* task_levels = nullptr;
  const double* task_arrivals = nullptr;
  const std::uint32_t* task_dest = nullptr;
};

/// Every node's critic, AdamW states and R̄, and the update of a FillPolicy's gains.
class FillLearner {
 public:
  struct Node {
    std::vector<float> critic, grad_critic, m_critic, v_critic;  // θ (F_c), its loss gradient, AdamW moments
    std::vector<float> grad_gains, m_gains, v_gains;             // FillRows(N) x kFillFeatures each
    std::uint64_t steps = 0;
    double reward_rate = 0.0;  // R̄ (code)
  };

  /// std::invalid_argument naming the field for a config the fill learner cannot run: LearnerConfig's checks,
  /// except that the learning rates may be 0 (no change), and trace_lambda must resolve to 0 (TD(0)).
  static void Validate(const LearnerConfig& config) {
    if (!(config.lr_critic >= 0))
      throw std::invalid_argument("lr_critic: must be >= 0, got " + std::to_string(config.lr_critic));
    if (!(config.lr_actor >= 0))
      throw std::invalid_argument("lr_actor: must be >= 0, got " + std::to_string(config.lr_actor));
    LearnerConfig rest = config;
    rest.lr_critic = rest.lr_actor = 1.0f;
    rest.Validate();
    if (config.Lambda() != 0.0)
      throw std::invalid_argument("trace_lambda: must be 0 with the fill head (TD(0)), got " +
                                  std::to_string(config.Lambda()));
  }

  FillLearner(std::size_t num_nodes, const LearnerConfig& config)
      : n_(num_nodes),
        config_((Validate(config), config)),
        fc_(NumFeatures(config.critic_basis, num_nodes)),
        nodes_(num_nodes),
        rank_table_(num_nodes),
        rank_(num_nodes),
        phi_(fc_) {
    if (num_nodes < 1 || num_nodes > MalcolmLearner::kMaxNodes)
      throw std::invalid_argument("num_nodes: must be in [1, " + std::to_string(MalcolmLearner::kMaxNodes) + "], got " +
                                  std::to_string(num_nodes));
    RankFeatureTable(n_, rank_table_.data());
    const std::size_t g = FillRows(n_) * kFillFeatures;
    for (Node& node : nodes_) {
      for (auto* v : {&node.critic, &node.grad_critic, &node.m_critic, &node.v_critic}) v->assign(fc_, 0.0f);
      for (auto* v : {&node.grad_gains, &node.m_gains, &node.v_gains}) v->assign(g, 0.0f);
    }
    value_.resize(config_.minibatch_size + 1);
    delta_.resize(config_.minibatch_size);
    grad_.resize(g);
  }

  std::size_t NumNodes() const { return n_; }
  std::size_t CriticFeatures() const { return fc_; }
  const LearnerConfig& Config() const { return config_; }
  Node& At(std::size_t i) { return nodes_[CheckedNode(i)]; }
  const Node& At(std::size_t i) const { return nodes_[CheckedNode(i)]; }
  std::uint64_t NumUpdates() const { return num_updates_; }

  /// V_θ(x) of node i (x: N critic inputs).
  float Value(std::size_t i, const float* x) {
    Features(config_.critic_basis, x, n_, rank_table_.data(), rank_.data(), phi_.data());
    const auto& th = nodes_[i].critic;
    float v = 0.0f;
    for (std::size_t c = 0; c < fc_; ++c) v += th[c] * phi_[c];
    return v;
  }

  /// Node i's loss gradients for `b` into grad_critic and grad_gains (the gains of `policy`, which acted), and
  /// R̄ carried on; nothing else changes.
  void ComputeGradients(std::size_t i, const FillBatch& b, const FillPolicy& policy) {
    const std::size_t d = b.d, n = n_;
    if (d < 1 || d > delta_.size()) throw std::invalid_argument("batch: rows must be in [1, minibatch_size]");
    if (policy.num_nodes() != n) throw std::invalid_argument("policy: wrong number of nodes");
    Node& node = At(i);
    const bool code = config_.variant == Variant::kCode;
    for (std::size_t t = 0; t <= d; ++t) value_[t] = Value(i, b.x + t * n);
    double rate = node.reward_rate;
    for (std::size_t t = 0; t < d; ++t) {
      const double r = static_cast<double>(static_cast<float>(b.reward[t] * config_.reward_scale));
      if (code) {
        const double advantage = r + value_[t + 1] - value_[t];
        delta_[t] = advantage - rate;
        rate += config_.average_reward_step * (advantage - rate);
      } else {
        delta_[t] = r + config_.gamma * value_[t + 1] - value_[t];
      }
    }
    node.reward_rate = rate;
    const double inv_d = -1.0 / static_cast<double>(d);
    std::fill(node.grad_critic.begin(), node.grad_critic.end(), 0.0f);
    std::fill(grad_.begin(), grad_.end(), 0.0);
    weight_.resize(n);
    for (std::size_t t = 0; t < d; ++t) {
      Features(config_.critic_basis, b.x + t * n, n, rank_table_.data(), rank_.data(), phi_.data());
      const float kc = static_cast<float>(delta_[t] * inv_d);
      for (std::size_t c = 0; c < fc_; ++c) node.grad_critic[c] += kc * phi_[c];
      if (b.task_offsets) {  // per task: each decision on the table of its own moment
        const std::uint32_t first = b.task_offsets[t], last = b.task_offsets[t + 1];
        if (last <= first) continue;
        const float w = code ? 1.0f / static_cast<float>(last - first) : 1.0f;
        std::fill(weight_.begin(), weight_.end(), 0.0f);
        for (std::uint32_t k = first; k < last; ++k) {
          const std::uint32_t dest = b.task_dest[k];
          if (dest >= n) throw std::invalid_argument("batch: task_dest must be < N");
          weight_[dest] = w;
          FillLogProbGradient(policy, i, b.task_levels + static_cast<std::size_t>(k) * n, b.task_arrivals[k],
                              weight_.data(), delta_[t] * inv_d, grad_.data(), scratch_, order_);
          weight_[dest] = 0.0f;
        }
        continue;
      }
      const float* counts = b.migrate + t * n;
      float total = 0.0f;
      for (std::size_t j = 0; j < n; ++j) total += counts[j];
      if (total <= 0.0f) continue;  // no decision: no actor term (either variant)
      for (std::size_t j = 0; j < n; ++j) weight_[j] = code ? counts[j] / total : counts[j];
      FillLogProbGradient(policy, i, b.levels + t * n, b.arrivals[t], weight_.data(), delta_[t] * inv_d, grad_.data(),
                          scratch_, order_);
    }
    for (std::size_t k = 0; k < grad_.size(); ++k) node.grad_gains[k] = static_cast<float>(grad_[k]);
  }

  /// One AdamW step of node i's critic and of its learned gain rows (0 and 3 .. 2N + 2) in `policy`.
  void ApplyGradients(std::size_t i, FillPolicy& policy) {
    FlushDenormals flush;
    Node& node = At(i);
    ++node.steps;
    const AdamWConfig critic = config_.CriticAdam(), actor = config_.ActorAdam();
    AdamWStep(node.critic.data(), node.grad_critic.data(), node.m_critic.data(), node.v_critic.data(), fc_, node.steps,
              critic);
    float* gains = policy.mutable_gains(i);
    const std::size_t f = kFillFeatures, rest = 3 * f;
    AdamWStep(gains, node.grad_gains.data(), node.m_gains.data(), node.v_gains.data(), f, node.steps, actor);
    AdamWStep(gains + rest, node.grad_gains.data() + rest, node.m_gains.data() + rest, node.v_gains.data() + rest,
              FillRows(n_) * f - rest, node.steps, actor);
  }

  /// ComputeGradients then ApplyGradients.
  void Update(std::size_t i, const FillBatch& b, FillPolicy& policy) {
    ComputeGradients(i, b, policy);
    ApplyGradients(i, policy);
  }

  /// Ends a round (one update of every node); every consensus_period rounds averages the critics.
  bool CompleteRound() {
    ++num_updates_;
    const std::uint32_t p = config_.consensus_period;
    if (p == 0 || num_updates_ % p != 0 || n_ < 2) return false;
    AverageCritics(nodes_, fc_, phi_.data());  // phi_: scratch of F_c floats
    return true;
  }

 private:
  std::size_t CheckedNode(std::size_t i) const {
    if (i >= n_)
      throw std::invalid_argument("node: must be in [0, " + std::to_string(n_ - 1) + "], got " + std::to_string(i));
    return i;
  }

  std::size_t n_;
  LearnerConfig config_;
  std::size_t fc_;
  std::vector<Node> nodes_;
  std::uint64_t num_updates_ = 0;
  std::vector<float> rank_table_;
  std::vector<std::uint32_t> rank_;
  std::vector<float> phi_, value_, weight_;
  std::vector<double> delta_, grad_, scratch_;
  std::vector<std::uint32_t> order_;  // FillLogProbGradient's sort order
};

}  // namespace dcgym::runtime
