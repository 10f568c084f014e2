#include "dcgym/rack/controller.hpp"

#include <algorithm>
#include <stdexcept>

namespace dcgym::rack {

using runtime::Batch;
using runtime::FastSoftmax;
using runtime::TableExponentials;

Reward DefaultReward(runtime::Variant variant) {
  return variant == runtime::Variant::kCode ? Reward::kImbalanceDelta : Reward::kUtility;
}

RackController::RackController(RackSim& sim, const ControllerOptions& options, MalcolmLearner& learner)
    : sim_(sim),
      options_(options),
      learner_(learner),
      policy_(learner.NumNodes(), learner.Config().actor_basis),
      n_(learner.NumNodes()),
      fa_(learner.ActorFeatures()),
      s_(learner.ActorWidth()),
      d_(learner.Config().minibatch_size) {
  const auto& cfg = sim.Config();
  if (cfg.entry.kind != EntryKind::kNodes || cfg.dispatch.kind != DispatchKind::kTable)
    throw std::invalid_argument("config: the controller needs entry kind 'nodes' and dispatch policy 'table'");
  if (sim.NumNodes() != n_)
    throw std::invalid_argument("parameters: made for " + std::to_string(n_) + " nodes, the rack has " +
                                std::to_string(sim.NumNodes()));
  if (!(options.heartbeat_us > 0)) throw std::invalid_argument("heartbeat_us: must be > 0");
  if (!(options.warmup_us >= 0)) throw std::invalid_argument("warmup_us: must be >= 0");
  if (!(options.obs_clip > 0)) throw std::invalid_argument("obs_clip: must be > 0");
  if (!(options.max_logit > 0)) throw std::invalid_argument("max_logit: must be > 0");
  scale_ = WaitMetric(cfg.dispatch.metric) ? 1.0 / cfg.service.Mean() : 1.0;
  const std::size_t nn = n_ * n_;
  obs_.resize(nn);
  last_obs_.resize(nn);
  x_.resize(nn);
  z_.resize(s_);
  tmp_.resize(2 * n_);
  beliefs_.resize(n_);
  shared_obs_.resize(2 * n_);
  phi_.resize(fa_);
  table_m_.resize(nn);
  table_s_.resize(nn);
  loads_.resize(n_);
  if (options_.learn) {
    learner_.Reserve(d_);
    states_.resize(n_ * (d_ + 1) * n_);
    migrate_.resize(n_ * d_ * n_);
    steal_.resize(n_ * d_ * n_);
    phi_a_.resize(n_ * d_ * fa_);
    pi_.resize(n_ * d_ * s_);
    rewards_.resize(d_);
  }
  if (options_.warmup_us > 0) {  // as RackGame.reset
    sim_.RunUntil(options_.warmup_us);
    sim_.StepLatency().Clear();
  }
  sim_.Decisions().Reset();
  if (options_.reward == Reward::kNegP99 || options_.reward == Reward::kNegMean) sim_.EnableStepLatency();
  previous_imbalance_ = TrueImbalance(sim_, scale_, loads_);
  Observe();
  last_obs_ = obs_;
}

void RackController::Observe() {
  const float clip = options_.obs_clip, load_scale = learner_.Config().load_scale;
  auto observe = [&](double belief) {  // rack_game.observe: belief x scale, float32, clipped to [0, obs_clip]
    const float o = static_cast<float>(belief * scale_);
    return o < 0.0f ? 0.0f : (o > clip ? clip : o);
  };
  if (const double* shared = sim_.SharedBeliefRow()) {
    // Periodic or fresh load information: every node sees the same row but for its own corrections,
    // so the row is converted once and each node's corrections are written over it.
    float* base_obs = shared_obs_.data();
    float* base_x = shared_obs_.data() + n_;
    for (std::size_t j = 0; j < n_; ++j) {
      base_obs[j] = observe(shared[j]);
      base_x[j] = base_obs[j] * load_scale;
    }
    for (std::size_t i = 0; i < n_; ++i) {
      float* obs = obs_.data() + i * n_;
      float* x = x_.data() + i * n_;
      std::copy(base_obs, base_obs + n_, obs);
      std::copy(base_x, base_x + n_, x);
      sim_.ForEachOwnBelief(static_cast<uint32_t>(i), [&](uint32_t j, double belief) {
        obs[j] = observe(belief);
        x[j] = obs[j] * load_scale;
      });
    }
    return;
  }
  double* b = beliefs_.data();
  for (std::size_t i = 0; i < n_; ++i) {
    sim_.BeliefRow(static_cast<uint32_t>(i), b);
    float* obs = obs_.data() + i * n_;
    float* x = x_.data() + i * n_;
    for (std::size_t j = 0; j < n_; ++j) {
      obs[j] = observe(b[j]);
      x[j] = obs[j] * load_scale;
    }
  }
}

namespace {

// The learner's π of one actor from the table's exponentials: softmax(z) = softmax(z - centre),
// the same exponentials, unless the clip acted (then FastSoftmax of the raw logits).
void Policy(const float* z, const float* e, float total, bool clipped, std::size_t n, float* pi) {
  if (!clipped) {
    const float inv_f = 1.0f / total;
    for (std::size_t j = 0; j < n; ++j) pi[j] = e[j] * inv_f;
  } else {
    std::copy(z, z + n, pi);
    FastSoftmax(pi, n);
  }
}

// z -> the table rack_v0 makes from MalcolmRLModule's action: centre (z - ½(max + min)), clip to
// ±max_logit, softmax (TableExponentials); the row in double, normalised to sum to 1 to rounding.
// `tmp` and `e` are scratch of n floats. If `pi` is given, it receives the float softmax of z
// without the clip (what the learner differentiates). The portable twin of SortTableRows.
void TableRow(const float* z, std::size_t n, float max_logit, float* tmp, float* e, double* row, float* pi) {
  bool clipped = false;
  const float total = TableExponentials(z, n, max_logit, tmp, e, &clipped);
  const double inv = 1.0 / static_cast<double>(total);
  for (std::size_t j = 0; j < n; ++j) row[j] = e[j] * inv;
  if (pi) Policy(z, e, total, clipped, n, pi);
}

}  // namespace

void RackController::Act() {
  const bool learn = options_.learn;
  const float max_logit = options_.max_logit;
  float* z = z_.data();
  for (std::size_t i = 0; i < n_; ++i) {
    const auto& node = learner_.At(i);
    const float* x = x_.data() + i * n_;
    const std::size_t slot = i * d_ + row_;  // the learner's row of node i
    float* phi = learn ? phi_a_.data() + slot * fa_ : phi_.data();
    double* tm = table_m_.data() + i * n_;
    double* ts = table_s_.data() + i * n_;
    float* pi = learn ? pi_.data() + slot * s_ : nullptr;
    float* e = tmp_.data();
    float totals[2];
    bool clipped[2];
    // Both actors: z[0, N) migration, z[N, 2N) stealing.
    if (policy_.TableRows(x, node.actor.data(), max_logit, phi, z, e, tm, ts, totals, clipped)) {
      if (pi) {
        Policy(z, e, totals[0], clipped[0], n_, pi);
        Policy(z + n_, e + n_, totals[1], clipped[1], n_, pi + n_);
      }
    } else {
      policy_.FeaturesAndLogits(x, node.actor.data(), phi, z);
      TableRow(z, n_, max_logit, tmp_.data(), tmp_.data() + n_, tm, pi);
      TableRow(z + n_, n_, max_logit, tmp_.data(), tmp_.data() + n_, ts, pi ? pi + n_ : nullptr);
    }
    if (learn) std::copy(x, x + n_, states_.data() + (i * (d_ + 1) + row_) * n_);
    // The rows are finite, >= 0 and sum to 1 to rounding: the unchecked setter.
    sim_.SetTableWeights(static_cast<uint32_t>(i), false, tm, 1.0);
    sim_.SetTableWeights(static_cast<uint32_t>(i), true, ts, 1.0);
  }
}

double TrueImbalance(RackSim& sim, double scale, std::vector<double>& loads) {
  const std::size_t n = sim.NumNodes();
  for (std::size_t j = 0; j < n; ++j) loads[j] = sim.TrueLoad(static_cast<uint32_t>(j));
  return game::Imbalance(loads.data(), static_cast<uint32_t>(n), scale);
}

double HeartbeatReward(RackSim& sim, const ControllerOptions& options, double previous_imbalance, double imbalance,
                       double scale) {
  const std::size_t n = sim.NumNodes();
  const auto& dc = sim.Decisions();
  game::CostCounts counts;
  for (std::size_t j = 0; j < n; ++j) {
    counts.migrations += static_cast<double>(dc.migrations[j]);
    counts.steal_requests += static_cast<double>(dc.steals[j] + dc.failed_steals[j]);
    counts.failed_steals += static_cast<double>(dc.failed_steals[j]);
    counts.dropped += static_cast<double>(dc.dropped[j]);
  }
  double latency = 0.0;
  std::uint64_t completed = 0;
  if (options.reward == Reward::kNegP99 || options.reward == Reward::kNegMean) {
    auto& h = sim.StepLatency();
    completed = h.Count();
    if (completed > 0) latency = (options.reward == Reward::kNegP99 ? h.Quantile(0.99) : h.Mean()) * scale;
    h.Clear();
  }
  return game::TeamReward({options.reward, options.costs}, previous_imbalance, imbalance, counts, latency, completed,
                          n);
}

RunStats RackController::Run(std::uint64_t heartbeats) {
  RunStats stats;
  for (std::uint64_t k = 0; k < heartbeats; ++k) {
    std::copy(obs_.begin(), obs_.end(), last_obs_.begin());
    Act();
    sim_.RunUntil(sim_.Now() + options_.heartbeat_us);
    const double imbalance = TrueImbalance(sim_, scale_, loads_);
    const double reward = HeartbeatReward(sim_, options_, previous_imbalance_, imbalance, scale_);
    if (options_.reward == Reward::kImbalanceDelta) previous_imbalance_ = imbalance;
    stats.imbalance_sum += imbalance;
    stats.reward_sum += reward;
    auto& dc = sim_.Decisions();
    if (options_.learn) {
      rewards_[row_] = reward;
      for (std::size_t i = 0; i < n_; ++i) {
        float* m = migrate_.data() + (i * d_ + row_) * n_;
        float* s = steal_.data() + (i * d_ + row_) * n_;
        for (std::size_t j = 0; j < n_; ++j) {
          m[j] = static_cast<float>(dc.migrate[i * n_ + j]);
          s[j] = static_cast<float>(dc.steal[i * n_ + j]);
        }
      }
    }
    dc.Reset();
    Observe();
    if (options_.learn && ++row_ == d_) {
      for (std::size_t i = 0; i < n_; ++i) {
        float* states = states_.data() + i * (d_ + 1) * n_;
        std::copy(x_.data() + i * n_, x_.data() + (i + 1) * n_, states + d_ * n_);
        Batch b;
        b.d = d_;
        b.x = states;
        b.next_x = states + n_;
        b.reward = rewards_.data();
        b.migrate = migrate_.data() + i * d_ * n_;
        b.steal = steal_.data() + i * d_ * n_;
        b.phi_a = phi_a_.data() + i * d_ * fa_;
        b.pi = pi_.data() + i * d_ * s_;
        learner_.Update(i, b);
      }
      learner_.CompleteRound();
      row_ = 0;
    }
    ++stats.heartbeats;
  }
  return stats;
}

}  // namespace dcgym::rack
