#include "dcgym/rack/game.hpp"

#include <algorithm>

#include "dcgym/kernel/check.hpp"

namespace dcgym::rack::game {

using kernel::Fail;
using kernel::Str;

Reward RewardNamed(const std::string& name, const std::string& field) {
  return static_cast<Reward>(kernel::IndexOfName(kRewardNames, name, field));
}

RewardCosts RewardCosts::Default(Reward r) {
  switch (r) {
    case Reward::kUtility: return {1e-4, 1e-4, 0.0, 0.0};
    case Reward::kImbalanceDelta: return {1e-4, 1e-4, 0.0, 10.0};
    case Reward::kNegP99:
    case Reward::kNegMean: return {0.0, 0.0, 0.0, 0.0};
  }
  return {};
}

double Imbalance(const double* loads, std::uint32_t n, double scale) {
  if (n == 0) Fail("loads", "must hold at least one node's load");
  double total = 0.0;
  for (std::uint32_t v = 0; v < n; ++v) total += loads[v] * scale;
  const double mean = total / n;
  double squares = 0.0;
  for (std::uint32_t v = 0; v < n; ++v) squares += (loads[v] * scale - mean) * (loads[v] * scale - mean);
  return 2.0 * n * squares;
}

double TeamReward(const RewardSpec& spec, double previous_imbalance, double imbalance, const CostCounts& counts,
                  double latency, std::uint64_t completed, std::size_t n) {
  const RewardCosts& c = spec.costs;
  const double cost = counts.migrations * c.migration + counts.steal_requests * c.steal +
                      counts.failed_steals * c.failed_steal + counts.dropped * c.drop;
  switch (spec.kind) {
    case Reward::kUtility: return 0.0 - imbalance - cost;  // 0.0 first: a 1-node rack scores +0, not -0
    case Reward::kImbalanceDelta: {
      const double pairs = std::max<double>(1.0, static_cast<double>(n * (n - 1)));
      return (previous_imbalance - imbalance) / pairs - cost;
    }
    case Reward::kNegP99:
    case Reward::kNegMean: return -(completed > 0 ? latency : 0.0) - cost;
  }
  return 0.0;
}

void CheckBatch(const std::vector<RackSim*>& sims) {
  if (sims.empty()) throw std::invalid_argument("sims: needs at least one simulation");
  for (std::size_t i = 0; i < sims.size(); ++i)
    if (sims[i] == nullptr) Fail("sims[" + Str(i) + "]", "None");
  const std::uint32_t n = sims[0]->NumNodes();
  for (auto* s : sims)
    if (s->NumNodes() != n || s->NumViewers() != n)
      throw std::invalid_argument("sims: every simulation needs entry 'nodes' and the same number of nodes");
}

void CheckAdvance(const std::vector<RackSim*>& sims, double duration_us, const ObsSpec& obs) {
  CheckBatch(sims);
  if (!(duration_us >= 0) || !std::isfinite(duration_us))
    Fail("duration_us", "must be a finite number >= 0, got " + Str(duration_us));
  if (obs.dim == 0) return;
  const std::uint32_t n = sims[0]->NumNodes();
  if (obs.dim < n + std::size_t{1}) Fail("obs_dim", "must be >= N + 1 = " + Str(n + 1) + ", got " + Str(obs.dim));
  if (!(obs.scale > 0) || !std::isfinite(obs.scale))
    Fail("obs_scale", "must be a finite number > 0, got " + Str(obs.scale));
  if (!(obs.clip > 0) || !std::isfinite(obs.clip))
    Fail("obs_clip", "must be a finite number > 0, got " + Str(obs.clip));
}

namespace {

// Whether one half (N entries) of a node's action is valid: finite logits, or finite non-negative weights with a
// positive finite sum.
template <typename T>
bool ValidHalf(const T* a, std::uint32_t n, bool logits) {
  double total = 0.0;
  for (std::uint32_t j = 0; j < n; ++j) {
    const double v = static_cast<double>(a[j]);
    if (!std::isfinite(v) || (!logits && v < 0)) return false;
    total += v;
  }
  return logits || (total > 0 && std::isfinite(total));
}

float ClipObs(double v, float clip) {
  const float f = static_cast<float>(v);
  return f < 0.0f ? 0.0f : (f > clip ? clip : f);
}

}  // namespace

template <typename T>
void SetTablesFromActions(const std::vector<RackSim*>& sims, const T* actions, bool logits, double max_logit) {
  CheckBatch(sims);
  if (!(max_logit > 0 && max_logit <= 100)) Fail("max_logit", "must be in (0, 100], got " + Str(max_logit));
  const std::uint32_t n = sims[0]->NumNodes();
  const std::size_t rows = sims.size() * 2 * n;
  for (std::size_t row = 0; row < rows; ++row)
    if (!ValidHalf(actions + row * n, n, logits))
      throw std::invalid_argument("actions: copy " + std::to_string(row / (2 * n)) + ", node " +
                                  std::to_string(row / 2 % n) + ", " + (row % 2 ? "stealing" : "migration") +
                                  " half: invalid values");
  for (auto* s : sims)
    if (!s->HasTables()) throw std::invalid_argument("sims: every simulation needs entry 'nodes' with policy 'table'");
  // |logit| <= max_logit <= 100: exp neither overflows nor vanishes, so no maximum needs subtracting.
  std::vector<double> w(n);
  for (std::size_t row = 0; row < rows; ++row) {
    const T* a = actions + row * n;
    double total = 0.0;
    for (std::uint32_t j = 0; j < n; ++j) {
      const double v = static_cast<double>(a[j]);
      w[j] = logits ? std::exp(std::min(std::max(v, -max_logit), max_logit)) : v;
      total += w[j];
    }
    sims[row / (2 * n)]->SetTableWeights(static_cast<std::uint32_t>(row / 2 % n), row % 2 == 1, w.data(), total);
  }
}

template void SetTablesFromActions<float>(const std::vector<RackSim*>&, const float*, bool, double);
template void SetTablesFromActions<double>(const std::vector<RackSim*>&, const double*, bool, double);

void Advance(const std::vector<RackSim*>& sims, double duration_us, const ObsSpec& obs, double scale,
             const RewardSpec* reward, double* previous_imbalance, const StepBuffers& out) {
  CheckAdvance(sims, duration_us, obs);
  if (!(scale > 0) || !std::isfinite(scale)) Fail("scale", "must be a finite number > 0, got " + Str(scale));
  const std::uint32_t n = sims[0]->NumNodes();
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  std::vector<double> loads(n), belief(n);
  for (std::size_t i = 0; i < sims.size(); ++i) {
    RackSim& s = *sims[i];
    const std::size_t k = out.rows ? static_cast<std::size_t>(out.rows[i]) : i;  // the row simulation i writes
    s.EnableStepLatency();
    s.RunUntil(s.Now() + duration_us);
    auto& h = s.StepLatency();
    const double mean = h.Mean(), p99 = h.Quantile(0.99);
    const std::uint64_t completed = h.Count();
    h.Clear();
    if (out.latency_mean) out.latency_mean[k] = mean;
    if (out.latency_p99) out.latency_p99[k] = p99;
    if (out.completed) out.completed[k] = completed;
    auto& dc = s.Decisions();
    auto copy = [&](const std::vector<std::uint64_t>& from, std::uint64_t* to, std::size_t size) {
      if (to) std::copy(from.begin(), from.end(), to + k * size);
    };
    copy(dc.migrate, out.migrate, nn);
    copy(dc.steal, out.steal, nn);
    copy(dc.migrations, out.migrations, n);
    copy(dc.steals, out.steals, n);
    copy(dc.failed_steals, out.failed_steals, n);
    copy(dc.dropped, out.dropped, n);
    copy(dc.completed, out.completed_by_node, n);
    CostCounts counts;
    for (std::uint32_t v = 0; v < n; ++v) {
      counts.migrations += static_cast<double>(dc.migrations[v]);
      counts.steal_requests += static_cast<double>(dc.steals[v] + dc.failed_steals[v]);
      counts.failed_steals += static_cast<double>(dc.failed_steals[v]);
      counts.dropped += static_cast<double>(dc.dropped[v]);
    }
    dc.Reset();
    for (std::uint32_t v = 0; v < n; ++v) {
      if (out.beliefs) s.BeliefRow(v, out.beliefs + k * nn + v * n);
      loads[v] = s.TrueLoad(v);
    }
    if (out.loads) std::copy(loads.begin(), loads.end(), out.loads + k * n);
    if (out.now) out.now[k] = s.Now();
    const double imbalance = Imbalance(loads.data(), n, scale);
    if (out.imbalance) out.imbalance[k] = imbalance;
    if (out.cost_counts) {
      double* t = out.cost_counts + 4 * k;
      t[0] = counts.migrations, t[1] = counts.steal_requests, t[2] = counts.failed_steals, t[3] = counts.dropped;
    }
    if (reward && out.reward) {
      const double latency = (reward->kind == Reward::kNegP99 ? p99 : mean) * scale;
      out.reward[k] = TeamReward(*reward, previous_imbalance[k], imbalance, counts, latency, completed, n);
      if (reward->kind == Reward::kImbalanceDelta) previous_imbalance[k] = imbalance;
    }
    if (obs.dim > 0 && out.obs) {
      float* rows = out.obs + k * n * obs.dim;
      std::fill(rows, rows + n * obs.dim, 0.0f);
      for (std::uint32_t v = 0; v < n; ++v) {
        float* o = rows + v * obs.dim;
        const double* row = out.beliefs ? out.beliefs + k * nn + v * n : belief.data();
        if (!out.beliefs) s.BeliefRow(v, belief.data());
        for (std::uint32_t j = 0; j < n; ++j) o[j] = ClipObs(row[j] * obs.scale, obs.clip);
        o[n] = ClipObs(loads[v] * obs.scale, obs.clip);
      }
    }
  }
}

}  // namespace dcgym::rack::game
