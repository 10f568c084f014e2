// AuTO's two agents on a FlowSim: the maps of auto_agents.hpp.
#include "dcgym/flow/auto_agents.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <thread>

#include "dcgym/kernel/check.hpp"

namespace dcgym::flow {

using kernel::Fail;
using kernel::Str;

namespace {

constexpr double kBytesScale = 10;  // log10(1 + bytes) / 10: 1 GB -> 0.9
constexpr double kTimeUnit = 1e-6;  // seconds are scaled as microseconds ...
constexpr double kTimeScale = 10;   // ... log10(1 + t / 1 us) / 10: 1 s -> 0.6

// Both clipped to [0, 1] (10 GB, 2.8 hours): the observation space is the unit box.
float Bytes(double b) { return static_cast<float>(std::min(1.0, std::log10(1 + std::max(0.0, b)) / kBytesScale)); }
float Seconds(double t) {
  return static_cast<float>(std::min(1.0, std::log10(1 + std::max(0.0, t) / kTimeUnit) / kTimeScale));
}
float Fraction(double index, double count) { return static_cast<float>(index / std::max(1.0, count)); }

double Ratio(double numerator, double denominator, double cap) {
  if (!(numerator > 0) || !(denominator > 0)) return 1.0;
  return std::min(numerator / denominator, cap);
}

void CheckThresholdRange(double lo_bytes, double hi_bytes) {
  if (!(lo_bytes > 0) || !std::isfinite(lo_bytes))
    Fail("threshold_range_bytes[0]", "must be a positive finite number of bytes, got " + Str(lo_bytes));
  if (!(hi_bytes > lo_bytes) || !std::isfinite(hi_bytes))
    Fail("threshold_range_bytes[1]",
         "must be finite and > threshold_range_bytes[0] = " + Str(lo_bytes) + ", got " + Str(hi_bytes));
}

void CheckSeconds(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds))
    Fail("seconds", "must be a positive finite number, got " + Str(seconds));
}

}  // namespace

void AutoSpec::Validate() const {
  CheckThresholdRange(threshold_lo_bytes, threshold_hi_bytes);
  if (cap_fractions.empty()) Fail("rate_caps", "needs at least one cap (1 = no cap)");
  for (size_t i = 0; i < cap_fractions.size(); ++i)
    if (!(cap_fractions[i] > 0) || !std::isfinite(cap_fractions[i]))
      Fail("rate_caps[" + Str(i) + "]", "must be a positive fraction of link_gbps, got " + Str(cap_fractions[i]));
  if (!(srla_reward_cap > 0)) Fail("srla_reward_cap", "must be > 0 (inf: no cap), got " + Str(srla_reward_cap));
  if (!(lrla_reward_cap > 0)) Fail("lrla_reward_cap", "must be > 0 (inf: no cap), got " + Str(lrla_reward_cap));
}

void ThresholdsFromAction(const double* action, uint32_t n, double lo_bytes, double hi_bytes, double* out) {
  CheckThresholdRange(lo_bytes, hi_bytes);
  const auto weight = [&](uint32_t i) {
    const double a = std::isnan(action[i]) ? -1.0 : std::clamp(action[i], -1.0, 1.0);
    return std::exp(kThresholdGapScale * a);
  };
  double total = 1.0;  // the last gap's, from t_n to hi
  for (uint32_t i = 0; i < n; ++i) total += weight(i);
  const double log_lo = std::log(lo_bytes), span = std::log(hi_bytes) - log_lo;
  double cumulative = 0.0;
  for (uint32_t i = 0; i < n; ++i) {
    cumulative += weight(i);
    out[i] = std::clamp(std::exp(log_lo + span * cumulative / total), lo_bytes, hi_bytes);
    if (i > 0) out[i] = std::max(out[i], out[i - 1]);  // rounding never reorders them
  }
}

AutoAgents::AutoAgents(const FlowSim& sim, const AutoSpec& spec)
    : spec_((spec.Validate(), spec)),
      levels_(sim.Config().levels),
      paths_(sim.Topo().MaxPaths()),
      hosts_(sim.Topo().NumHosts()),
      short_rows_(sim.Config().observation.short_finished),
      long_rows_(sim.Config().observation.long_active),
      long_finished_rows_(sim.Config().observation.long_finished),
      link_gbps_(sim.Config().topology.link_gbps),
      flows_(long_rows_, -1),
      pair_paths_(long_rows_, 1) {
  const Discipline d = sim.Config().discipline;
  if (d != Discipline::kMlfq && d != Discipline::kQsjf)
    Fail("scheduling.discipline", "AuTO's agents need MLFQ (qlas, pias) or qsjf: thresholds and priority levels");
  if (levels_ < 2) Fail("scheduling.levels", "AuTO's agents need at least 2 priority levels, got " + Str(levels_));
  if (spec_.path_loads_last && !spec_.path_loads)
    Fail("path_loads_last", "adds the costs at the last level after path_loads' own: needs path_loads");
  if (spec_.path_loads) costs_.resize(size_t{long_rows_} * paths_ * (spec_.path_loads_last ? 2 : 1));
  raw_.resize(std::max<size_t>({size_t{short_rows_} * kFinishedFeatures, size_t{long_rows_} * kActiveFeatures,
                                size_t{long_finished_rows_} * kFinishedFeatures}));
  Reset();
}

void AutoAgents::Reset() {
  last_fct_ = std::nan("");
  last_throughput_ = std::nan("");
  std::fill(flows_.begin(), flows_.end(), int64_t{-1});
}

void AutoAgents::CheckLrla(const int64_t* choices) const {
  const int64_t limits[kLrlaChoices] = {LevelChoices(), static_cast<int64_t>(spec_.cap_fractions.size()), paths_};
  static const char* kNames[kLrlaChoices] = {"level", "cap", "path"};
  for (uint32_t i = 0; i < long_rows_; ++i)
    for (uint32_t k = 0; k < kLrlaChoices; ++k) {
      const int64_t v = choices[i * kLrlaChoices + k];
      if (v < 0 || v >= limits[k])
        Fail("action[" + Str(i * kLrlaChoices + k) + "]", "long flow " + Str(i) + "'s " + kNames[k] +
                                                              " index must be in [0, " + Str(limits[k] - 1) +
                                                              "], got " + Str(v));
    }
}

void AutoAgents::Act(FlowSim& sim, const double* srla, const int64_t* lrla) const {
  if (srla != nullptr) {
    std::vector<double> thresholds(SrlaActions());
    ThresholdsFromAction(srla, SrlaActions(), spec_.threshold_lo_bytes, spec_.threshold_hi_bytes, thresholds.data());
    sim.SetThresholds(thresholds);
  }
  if (lrla == nullptr) return;
  CheckLrla(lrla);
  std::vector<FlowAction> actions;
  for (uint32_t i = 0; i < long_rows_; ++i) {
    if (flows_[i] < 0) continue;
    const int64_t* c = lrla + i * kLrlaChoices;
    const double fraction = spec_.cap_fractions[static_cast<size_t>(c[1])];
    FlowAction a;
    a.flow = static_cast<uint64_t>(flows_[i]);
    a.level = c[0] == levels_ ? -1 : static_cast<int32_t>(c[0]);  // keep_level's extra choice: leave it
    a.cap_gbps = fraction >= 1 ? std::numeric_limits<double>::infinity() : fraction * link_gbps_;
    a.path = static_cast<int32_t>(c[2] % pair_paths_[i]);
    actions.push_back(a);
  }
  if (spec_.move_check) sim.CheckMoves(actions);
  sim.SetFlowActions(actions);
}

void AutoAgents::Observe(const FlowSim& sim, float* srla_obs, float* lrla_obs) {
  const double hosts = hosts_, paths = paths_, levels = levels_;
  const auto finished = [&](uint32_t rows, float* out) {
    for (uint32_t i = 0; i < rows; ++i) {
      const double* r = raw_.data() + size_t{i} * kFinishedFeatures;
      float* o = out + size_t{i} * kFinishedFeatures;
      if (r[4] <= 0) {  // padding: no flow
        std::fill(o, o + kFinishedFeatures, 0.0f);
        continue;
      }
      o[0] = Fraction(r[0], hosts);
      o[1] = Fraction(r[1], hosts);
      o[2] = Fraction(r[2], paths);
      o[3] = Fraction(r[3], levels);
      o[4] = Bytes(r[4]);
      o[5] = Seconds(r[5]);
      o[6] = Seconds(r[6]);
    }
  };
  sim.ObserveShortFinished(raw_.data());
  finished(short_rows_, srla_obs);
  sim.ObserveLongActive(raw_.data(), flows_.data());
  const size_t block = size_t{long_rows_} * paths_;
  if (spec_.path_loads) sim.ObservePathCosts(flows_.data(), long_rows_, paths_, costs_.data());
  if (spec_.path_loads_last)
    sim.ObservePathCosts(flows_.data(), long_rows_, paths_, costs_.data() + block, static_cast<int32_t>(levels_ - 1));
  const uint32_t width = LrlaRowWidth();
  for (uint32_t i = 0; i < long_rows_; ++i) {
    const double* r = raw_.data() + size_t{i} * kActiveFeatures;
    float* o = lrla_obs + size_t{i} * width;
    if (flows_[i] < 0) {
      std::fill(o, o + width, 0.0f);
      pair_paths_[i] = 1;
      continue;
    }
    pair_paths_[i] = sim.Topo().NumPaths(static_cast<uint32_t>(r[0]), static_cast<uint32_t>(r[1]));
    o[0] = Fraction(r[0], hosts);
    o[1] = Fraction(r[1], hosts);
    o[2] = Fraction(r[2], paths);
    o[3] = Fraction(r[3], levels);
    o[4] = Bytes(r[4]);
    o[5] = Seconds(r[5]);
    for (uint32_t k = 0; k < (spec_.path_loads ? 1u : 0u) + (spec_.path_loads_last ? 1u : 0u); ++k) {
      const double* c = costs_.data() + k * block + size_t{i} * paths_;
      const double most = *std::max_element(c, c + paths_);
      for (uint32_t q = 0; q < paths_; ++q)
        o[kActiveFeatures + k * paths_ + q] = c[q] < 0 ? 1.0f : most > 0 ? static_cast<float>(c[q] / most) : 0.0f;
    }
  }
  sim.ObserveLongFinished(raw_.data());
  finished(long_finished_rows_, lrla_obs + size_t{long_rows_} * width);
}

void AutoAgents::Rewards(const FlowSim& sim, double* srla, double* lrla) {
  const IntervalStats& s = sim.Interval();
  const double fct = s.finished ? s.fct_sum_s / static_cast<double>(s.finished) : std::nan("");
  const double tput = s.long_finished ? s.long_throughput_sum_bps / static_cast<double>(s.long_finished) : std::nan("");
  *srla = Ratio(last_fct_, fct, spec_.srla_reward_cap);
  *lrla = Ratio(tput, last_throughput_, spec_.lrla_reward_cap);
  if (fct > 0) last_fct_ = fct;
  if (tput > 0) last_throughput_ = tput;
}

void AutoAgents::Step(FlowSim& sim, const double* srla, const int64_t* lrla, double seconds, float* srla_obs,
                      float* lrla_obs, double* rewards) {
  CheckSeconds(seconds);  // before the actions change anything
  Act(sim, srla, lrla);
  sim.StepInterval(seconds);
  Observe(sim, srla_obs, lrla_obs);
  Rewards(sim, rewards, rewards + 1);
}

void CheckAutoBatch(const std::vector<FlowSim*>& sims, const std::vector<AutoAgents*>& agents, uint32_t threads) {
  if (sims.empty() || sims.size() != agents.size()) Fail("agents", "one per simulation, at least one");
  CheckBatch({sims.begin(), sims.end()}, "sims", threads);
  CheckBatch({agents.begin(), agents.end()}, "agents", threads);
  const AutoAgents& a0 = *agents[0];
  for (size_t i = 1; i < agents.size(); ++i) {
    const AutoAgents& a = *agents[i];
    if (a.SrlaActions() != a0.SrlaActions() || a.SrlaObservations() != a0.SrlaObservations() ||
        a.LrlaFlows() != a0.LrlaFlows() || a.LrlaObservations() != a0.LrlaObservations())
      Fail("agents[" + Str(i) + "]", "sizes differ from agents[0]");
  }
}

void StepAutoBatch(const std::vector<FlowSim*>& sims, const std::vector<AutoAgents*>& agents, const double* srla,
                   const int64_t* lrla, double seconds, float* srla_obs, float* lrla_obs, double* rewards,
                   uint32_t threads) {
  CheckAutoBatch(sims, agents, threads);
  CheckSeconds(seconds);
  const auto one = [&](size_t i) {
    AutoAgents& a = *agents[i];
    a.Step(*sims[i], srla ? srla + i * a.SrlaActions() : nullptr,
           lrla ? lrla + i * size_t{a.LrlaFlows()} * kLrlaChoices : nullptr, seconds,
           srla_obs + i * a.SrlaObservations(), lrla_obs + i * a.LrlaObservations(), rewards + 2 * i);
  };
  threads = std::max<uint32_t>(1, std::min<uint32_t>(threads, static_cast<uint32_t>(sims.size())));
  if (threads <= 1) {
    for (size_t i = 0; i < sims.size(); ++i) one(i);
    return;
  }
  std::vector<std::exception_ptr> errors(threads);
  std::vector<std::thread> pool;
  for (uint32_t k = 0; k < threads; ++k)
    pool.emplace_back([&, k] {
      try {
        for (size_t i = k; i < sims.size(); i += threads) one(i);
      } catch (...) {
        errors[k] = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace dcgym::flow
