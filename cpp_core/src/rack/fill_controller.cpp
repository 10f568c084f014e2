#include "dcgym/rack/fill_controller.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace dcgym::rack {

namespace {
// rack_v0's observation of a level (float32, clipped to [0, obs_clip]) times load_scale: the critic's input.
void CriticInputs(const double* levels, std::size_t n, const ControllerOptions& o, float* x) {
  for (std::size_t j = 0; j < n; ++j)
    x[j] = std::min(std::max(static_cast<float>(levels[j]), 0.0f), o.obs_clip) * o.learner.load_scale;
}

ControllerOptions Timing(double heartbeat_us, double warmup_us) {
  ControllerOptions o;
  o.heartbeat_us = heartbeat_us;
  o.warmup_us = warmup_us;
  return o;
}
}  // namespace

FillController::FillController(RackSim& sim, runtime::FillPolicy policy, double heartbeat_us, double warmup_us)
    : FillController(sim, std::move(policy), Timing(heartbeat_us, warmup_us)) {}

FillController::FillController(RackSim& sim, runtime::FillPolicy policy, const ControllerOptions& options)
    : sim_(sim), policy_(std::move(policy)), options_(options), n_(sim.NumNodes()) {
  const auto& cfg = sim.Config();
  if (cfg.entry.kind != EntryKind::kNodes || cfg.dispatch.kind != DispatchKind::kTable)
    throw std::invalid_argument("config: the controller needs entry kind 'nodes' and dispatch policy 'table'");
  if (policy_.num_nodes() != n_)
    throw std::invalid_argument("policy: made for " + std::to_string(policy_.num_nodes()) + " nodes, the rack has " +
                                std::to_string(n_));
  if (!(options.heartbeat_us > 0 && std::isfinite(options.heartbeat_us)))
    throw std::invalid_argument("heartbeat_us: must be finite and > 0");
  if (!(options.warmup_us >= 0)) throw std::invalid_argument("warmup_us: must be >= 0");
  if (!(options.obs_clip > 0)) throw std::invalid_argument("obs_clip: must be > 0");
  raw_.resize(n_);
  levels_.resize(n_);
  table_m_.resize(n_ * n_);
  table_s_.resize(n_ * n_);
  loads_.resize(n_);
  if (options.learn) {
    learner_.emplace(n_, options.learner);
    d_ = options.learner.minibatch_size;
    x_.resize(n_ * (d_ + 1) * n_);
    migrate_.resize(n_ * d_ * n_);
    batch_levels_.resize(n_ * d_ * n_);
    arrivals_.resize(d_);
    rewards_.resize(d_);
    scale_ = WaitMetric(cfg.dispatch.metric) ? 1.0 / cfg.service.Mean() : 1.0;
  }
  if (options.warmup_us > 0) {
    sim_.RunUntil(options.warmup_us);
    sim_.StepLatency().Clear();
  }
  if (learner_) {
    sim_.Decisions().Reset();
    if (options_.reward == Reward::kNegP99 || options_.reward == Reward::kNegMean) sim_.EnableStepLatency();
    previous_imbalance_ = TrueImbalance(sim_, scale_, loads_);
  }
  if (policy_.per_task()) {
    task_.emplace(sim_, policy_, options_.heartbeat_us, learner_.has_value());
    if (learner_) task_offsets_.assign(n_, std::vector<std::uint32_t>(d_ + 1, 0));
  }
}

double FillController::HeartbeatArrivals() const { return sim_.ArrivalRate() * options_.heartbeat_us; }

void FillController::BelievedLevels(uint32_t node) {
  sim_.BeliefRow(node, raw_.data());
  policy_.Levels(raw_.data(), levels_.data());
}

void FillController::Act() {
  const double arrivals = HeartbeatArrivals();
  if (learner_) arrivals_[row_] = arrivals;
  for (std::size_t i = 0; i < n_; ++i) {
    BelievedLevels(static_cast<uint32_t>(i));
    double* tm = table_m_.data() + i * n_;
    double* ts = table_s_.data() + i * n_;
    policy_.Tables(i, levels_.data(), arrivals, tm, ts);
    sim_.SetTableWeights(static_cast<uint32_t>(i), false, tm, 1.0);
    sim_.SetTableWeights(static_cast<uint32_t>(i), true, ts, 1.0);
    if (!learner_) continue;
    std::copy(levels_.begin(), levels_.end(), batch_levels_.begin() + (i * d_ + row_) * n_);
    CriticInputs(levels_.data(), n_, options_, x_.data() + (i * (d_ + 1) + row_) * n_);
  }
}

RunStats FillController::Run(std::uint64_t heartbeats) {
  RunStats stats;
  for (std::uint64_t k = 0; k < heartbeats; ++k) {
    Act();
    sim_.RunUntil(sim_.Now() + options_.heartbeat_us);
    ++stats.heartbeats;
    if (!learner_) {
      sim_.Decisions().Reset();
      continue;
    }
    const double imbalance = TrueImbalance(sim_, scale_, loads_);
    const double reward = HeartbeatReward(sim_, options_, previous_imbalance_, imbalance, scale_);
    if (options_.reward == Reward::kImbalanceDelta) previous_imbalance_ = imbalance;
    stats.imbalance_sum += imbalance;
    stats.reward_sum += reward;
    rewards_[row_] = reward;
    auto& dc = sim_.Decisions();
    for (std::size_t i = 0; i < n_; ++i)
      for (std::size_t j = 0; j < n_; ++j)
        migrate_[(i * d_ + row_) * n_ + j] = static_cast<float>(dc.migrate[i * n_ + j]);
    dc.Reset();
    for (std::size_t i = 0; i < task_offsets_.size(); ++i)
      task_offsets_[i][row_ + 1] = static_cast<std::uint32_t>(task_->Recorded(static_cast<uint32_t>(i)).dest.size());
    if (++row_ < d_) continue;
    // The batch's last next state x_D: the levels the next heartbeat will act on.
    for (std::size_t i = 0; i < n_; ++i) {
      BelievedLevels(static_cast<uint32_t>(i));
      CriticInputs(levels_.data(), n_, options_, x_.data() + (i * (d_ + 1) + d_) * n_);
    }
    for (std::size_t i = 0; i < n_; ++i) {
      runtime::FillBatch b;
      b.d = d_;
      b.x = x_.data() + i * (d_ + 1) * n_;
      b.levels = batch_levels_.data() + i * d_ * n_;
      b.arrivals = arrivals_.data();
      b.reward = rewards_.data();
      b.migrate = migrate_.data() + i * d_ * n_;
      if (!task_offsets_.empty()) {
        const TaskFill::Decisions& decided = task_->Recorded(static_cast<uint32_t>(i));
        b.task_offsets = task_offsets_[i].data();
        b.task_levels = decided.levels.data();
        b.task_arrivals = decided.arrivals.data();
        b.task_dest = decided.dest.data();
      }
      learner_->Update(i, b, policy_);
    }
    learner_->CompleteRound();
    row_ = 0;
    if (task_) task_->Clear();  // the next batch's decisions start empty
  }
  return stats;
}

}  // namespace dcgym::rack
