#include "dcgym/lb/lb_sim.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "dcgym/kernel/check.hpp"

namespace dcgym::lb {

using kernel::Stream;

namespace {

using kernel::Fail;
using kernel::Str;

void RequireNonNegativeFinite(double v, const std::string& field) {
  if (!(v >= 0) || !std::isfinite(v)) Fail(field, "must be a finite number >= 0, got " + Str(v));
}

// A weight vector: one finite non-negative weight per server, not all zero.
void CheckWeights(const std::vector<double>& w, uint32_t n, const std::string& field) {
  if (w.size() != n) Fail(field, "needs one weight per server (" + Str(n) + "), got " + Str(w.size()));
  double total = 0;
  for (size_t j = 0; j < w.size(); ++j) {
    RequireNonNegativeFinite(w[j], field + "[" + Str(j) + "]");
    total += w[j];
  }
  if (!(total > 0)) Fail(field, "at least one weight must be positive");
}

void RequireCount(uint64_t v, uint64_t lo, uint64_t hi, const std::string& field) {
  if (v < lo || v > hi) Fail(field, "must be in [" + Str(lo) + ", " + Str(hi) + "], got " + Str(v));
}

}  // namespace

// ------------------------------------------------------------------ config

uint32_t LbConfig::NumServers() const {
  uint64_t n = 0;
  for (const auto& g : groups) n += g.count;
  return static_cast<uint32_t>(n);
}

double LbConfig::Capacity() const {
  double c = 0;
  for (const auto& g : groups) c += g.count * g.workers * g.speed;
  return c;
}

double LbConfig::ArrivalRate() const {
  double d = app.cpu.Mean();
  if (load_basis == LoadBasis::kTotal && app.IoStages() > 0) d += app.io.Mean();
  return load * Capacity() / d;
}

void LbConfig::Validate() const {
  if (groups.empty()) Fail("servers", "needs at least one server group");
  uint64_t total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const auto& g = groups[i];
    const std::string f = "servers[" + Str(i) + "]";
    RequireCount(g.count, 1, kMaxServers, f + ".count");
    RequireCount(g.workers, 1, kMaxWorkers, f + ".workers");
    if (!(g.speed > 0) || !std::isfinite(g.speed))
      Fail(f + ".speed", "must be a positive finite number, got " + Str(g.speed));
    RequireCount(g.mp_level, 1, kMaxMpLevel, f + ".mp_level");
    total += g.count;
  }
  if (total > kMaxServers) Fail("servers", "at most " + Str(kMaxServers) + " servers, got " + Str(total));
  for (size_t i = 0; i < capacity_changes.size(); ++i) {
    const auto& c = capacity_changes[i];
    const std::string f = "capacity_changes[" + Str(i) + "]";
    RequireNonNegativeFinite(c.at_us, f + ".at_us");
    if (c.group >= groups.size())
      Fail(f + ".group", "must be a server group index in [0, " + Str(groups.size() - 1) + "], got " + Str(c.group));
    if (!(c.speed > 0) || !std::isfinite(c.speed))
      Fail(f + ".speed", "must be a positive finite number, got " + Str(c.speed));
  }
  const auto n = static_cast<uint32_t>(total);
  RequireCount(app.stages, 1, kMaxStages, "application.stages");
  if (lbs.empty() || lbs.size() > kMaxLbs)
    Fail("lbs", "needs 1 to " + Str(kMaxLbs) + " load balancers, got " + Str(lbs.size()));
  double shares = 0;
  for (size_t i = 0; i < lbs.size(); ++i) {
    const std::string f = "lbs[" + Str(i) + "]";
    RequireNonNegativeFinite(lbs[i].share, f + ".share");
    shares += lbs[i].share;
    if (!lbs[i].weights.empty()) CheckWeights(lbs[i].weights, n, f + ".weights");
  }
  if (!(shares > 0)) Fail("lbs", "at least one share must be positive");
  if (!(load > 0) || !(load <= kernel::kMaxLoad))
    Fail("load", "must be in (0, " + Str(kernel::kMaxLoad) + "], got " + Str(load));
  RequireCount(backlog, 0, kMaxBacklog, "backlog");
  RequireNonNegativeFinite(timeout_us, "timeout_us");
  RequireNonNegativeFinite(hop_min_us, "hop_delay_us.min");
  RequireNonNegativeFinite(hop_max_us, "hop_delay_us.max");
  if (hop_max_us < hop_min_us)
    Fail("hop_delay_us.max", "must be >= hop_delay_us.min (" + Str(hop_min_us) + "), got " + Str(hop_max_us));
  if (!(decision_period_us > 0) || !std::isfinite(decision_period_us))
    Fail("decision_period_us", "must be a positive finite number, got " + Str(decision_period_us));
  const auto& o = observation;
  RequireCount(o.reservoir_size, 1, kMaxReservoir, "observation.reservoir_size");
  RequireCount(o.fd_density, 0, kMaxFdDensity, "observation.fd_density");
  RequireNonNegativeFinite(o.fd_min_us, "observation.fd_min_us");
  if (!(o.decay_half_life_us > 0) || !std::isfinite(o.decay_half_life_us))
    Fail("observation.decay_half_life_us", "must be a positive finite number, got " + Str(o.decay_half_life_us));
  if (uint64_t{lbs.size()} * n * o.reservoir_size > kMaxReservoirSamples)
    Fail("observation.reservoir_size", "lbs x servers x reservoir_size must be <= " + Str(kMaxReservoirSamples) +
                                           " samples, got " + Str(uint64_t{lbs.size()} * n * o.reservoir_size));
}

// ------------------------------------------------------------- simulator

LbSim::LbSim(const LbConfig& config)
    : config_((config.Validate(), config)),
      future_cpu_(config.NumServers(), 0.0),
      future_io_(config.NumServers(), 0.0),
      committed_(config.NumServers(), 0),
      server_events_(config.NumServers()),
      fd_(static_cast<uint32_t>(config.lbs.size()) * config.NumServers(), config.observation.reservoir_size),
      fct_samples_(static_cast<uint32_t>(config.lbs.size()) * config.NumServers(), config.observation.reservoir_size),
      arrival_rng_(kernel::MakeRng(config.seed, Stream::kArrivals)),
      split_rng_(kernel::MakeRng(config.seed, Stream::kArrivals, 1)),
      service_rng_(kernel::MakeRng(config.seed, Stream::kService)),
      network_rng_(kernel::MakeRng(config.seed, Stream::kNetwork)),
      rate_(config.ArrivalRate()),
      hop_min_(config.hop_min_us),
      hop_span_(config.hop_max_us - config.hop_min_us),
      server_counters_(config.NumServers()) {
  for (const auto& g : config_.groups) {
    group_start_.push_back(static_cast<uint32_t>(servers_.size()));
    for (uint32_t k = 0; k < g.count; ++k) servers_.emplace_back(g.workers, g.speed, g.mp_level);
  }
  const uint32_t n = NumServers();
  double shares = 0;
  for (uint32_t i = 0; i < config_.lbs.size(); ++i) {
    const BalancerConfig& c = config_.lbs[i];
    Lb lb;
    lb.policy = c.policy;
    lb.weights = c.weights;
    if (lb.weights.empty()) {
      for (const auto& s : servers_)
        lb.weights.push_back(c.policy == LbPolicy::kWeights ? 1.0 : s.Workers() * s.Speed());
    }
    lb.count.assign(n, 0);
    lb.dispatched.assign(n, 0);
    lb.dispatched_period.assign(n, -1);
    lb.rng = kernel::MakeRng(config_.seed, Stream::kDispatch, i);
    lb.obs_rng = kernel::MakeRng(config_.seed, Stream::kPolicy, i);
    BuildCumulative(lb);
    lbs_.push_back(std::move(lb));
    shares += c.share;
    lb_cumulative_.push_back(shares);
  }
  for (auto& c : lb_cumulative_) c /= shares;
  lb_cumulative_.back() = 1.0;
  next_arrival_ = arrival_rng_.Exp1() / rate_;
  // Scheduled like any event; at equal times they follow the file's order.
  for (uint32_t c = 0; c < config_.capacity_changes.size(); ++c)
    queue_.Push(config_.capacity_changes[c].at_us, Event{kCapacityChange, c});
}

void LbSim::BuildCumulative(Lb& lb) {
  lb.cumulative.resize(lb.weights.size());
  double s = 0;
  for (size_t j = 0; j < lb.weights.size(); ++j) lb.cumulative[j] = (s += lb.weights[j]);
}

const std::vector<double>& LbSim::Weights(uint32_t i) const {
  if (i >= lbs_.size()) Fail("lb", "must be in [0, " + Str(lbs_.size() - 1) + "], got " + Str(i));
  return lbs_[i].weights;
}

void LbSim::SetWeights(uint32_t i, const std::vector<double>& w) {
  if (i >= lbs_.size()) Fail("lb", "must be in [0, " + Str(lbs_.size() - 1) + "], got " + Str(i));
  const LbPolicy p = lbs_[i].policy;
  if (p != LbPolicy::kWcmp && p != LbPolicy::kSed && p != LbPolicy::kWeights)
    Fail("lb", "load balancer " + Str(i) + " runs a policy without weights (only wcmp, sed and weights use them)");
  CheckWeights(w, NumServers(), "weights");
  lbs_[i].weights = w;
  BuildCumulative(lbs_[i]);
}

// ------------------------------------------------------------ event loop

template <typename Stop>
[[gnu::flatten]] void LbSim::Run(Stop stop) {
  for (;;) {
    const double t_server = server_events_.TopKey();
    const double t_queue = queue_.TopTime();
    if (t_server <= t_queue && t_server <= next_arrival_) {
      if (stop(t_server, false)) return;
      now_ = t_server;
      OnServerEvent(server_events_.Top());
    } else if (t_queue <= next_arrival_) {
      if (stop(t_queue, false)) return;
      now_ = t_queue;
      OnEvent(queue_.Pop().payload);
    } else {
      if (stop(next_arrival_, true)) return;
      now_ = next_arrival_;
      OnArrival();
    }
  }
}

void LbSim::RunFlows(uint64_t n) {
  const uint64_t target = counters_.arrived + n;
  Run([&](double, bool arrival) { return arrival && counters_.arrived >= target; });
}

void LbSim::RunCompletions(uint64_t n) {
  const uint64_t target = counters_.completed + counters_.rejected + n;
  Run([&](double, bool) { return counters_.completed + counters_.rejected >= target; });
}

void LbSim::RunUntil(double t_us) {
  if (!(t_us >= now_) || !std::isfinite(t_us))
    Fail("time_us", "must be finite and >= the current time " + Str(now_) + ", got " + Str(t_us));
  Run([&](double t, bool) { return t > t_us; });
  now_ = t_us;
}

// --------------------------------------------------------------- handlers

double LbSim::Hop() { return hop_span_ > 0 ? hop_min_ + hop_span_ * network_rng_.Uniform() : hop_min_; }

int64_t LbSim::PeriodOf(double t) const {
  // Period k is (k P, (k + 1) P]: a sample at a boundary closes the period before it.
  return static_cast<int64_t>(std::ceil(t / config_.decision_period_us)) - 1;
}

void LbSim::After(double delay, EventKind kind, uint32_t slot) {
  if (delay > 0)
    queue_.Push(now_ + delay, Event{kind, slot});
  else
    OnEvent(Event{kind, slot});
}

uint32_t LbSim::NewSlot() {
  if (!free_.empty()) {
    const uint32_t s = free_.back();
    free_.pop_back();
    return s;
  }
  flows_.emplace_back();
  works_.resize(works_.size() + config_.app.stages);
  return static_cast<uint32_t>(flows_.size() - 1);
}

void LbSim::OnArrival() {
  ++counters_.events;
  const uint32_t slot = NewSlot();
  Flow& f = flows_[slot];
  f.t0 = now_;
  f.stage = 0;
  f.warmup = counters_.arrived < config_.warmup_flows;
  counters_.warmup += f.warmup;
  // Past the measured window a flow is served like any other and left out of every statistic.
  const bool measured =
      !f.warmup && (config_.measure_flows == 0 || counters_.arrived - config_.warmup_flows < config_.measure_flows);
  f.warmup = !measured;
  ++counters_.arrived;
  next_arrival_ = now_ + arrival_rng_.Exp1() / rate_;

  // The workload (LB and stage times) comes from the arrival and service
  // streams only, so every policy sees the same flows.
  const double u = split_rng_.Uniform();
  f.lb = static_cast<uint32_t>(std::upper_bound(lb_cumulative_.begin(), lb_cumulative_.end() - 1, u) -
                               lb_cumulative_.begin());
  const Application& app = config_.app;
  double* w = Works(slot);
  for (int resource = 0; resource < 2; ++resource) {
    const uint32_t pieces = resource == 0 ? app.CpuStages() : app.IoStages();
    if (pieces == 0) continue;
    double left = (resource == 0 ? app.cpu : app.io).Draw(service_rng_).value;
    for (uint32_t k = 0; k < pieces; ++k) {
      double piece = left;
      if (k + 1 < pieces)
        piece = app.split == Application::Split::kEqual ? left / (pieces - k) : left * service_rng_.Uniform();
      w[resource + 2 * k] = piece;
      left -= piece;
    }
  }

  Lb& lb = lbs_[f.lb];
  if (config_.observation.fd_density > 0) SampleFlowDurations(lb);
  lb.last_arrival = now_;
  const uint32_t j = Pick(lb, slot);
  f.server = j;
  f.lb_pos = static_cast<uint32_t>(lb.tracked.size());
  lb.tracked.push_back(Tracked{now_, j, slot});
  ++lb.count[j];
  const int64_t period = PeriodOf(now_);
  if (lb.dispatched_period[j] != period) {
    lb.dispatched_period[j] = period;
    lb.dispatched[j] = 0;
  }
  ++lb.dispatched[j];
  ++server_counters_[j].dispatched;
  ++committed_[j];
  for (uint32_t k = 0; k < app.stages; ++k) (k % 2 == 0 ? future_cpu_ : future_io_)[j] += w[k];
  if (measured && config_.record_flows) {
    double cpu = 0, io = 0;
    for (uint32_t k = 0; k < app.stages; ++k) (k % 2 == 0 ? cpu : io) += w[k];
    records_.arrival_us.push_back(f.t0);
    records_.cpu_us.push_back(cpu);
    records_.io_us.push_back(io);
  }
  ++in_transit_;
  After(Hop(), kReachServer, slot);
}

void LbSim::OnEvent(const Event& e) {
  ++counters_.events;
  switch (e.kind) {
    case kReachServer: ReachServer(e.slot); break;
    case kClientReceive: ClientReceive(e.slot); break;
    case kLbNotify: LbNotify(e.slot); break;
    case kCapacityChange: ChangeCapacity(e.slot); break;
  }
}

void LbSim::ChangeCapacity(uint32_t change) {
  const CapacityChange& c = config_.capacity_changes[change];
  const uint32_t first = group_start_[c.group];
  for (uint32_t j = first; j < first + config_.groups[c.group].count; ++j) {
    servers_[j].SetCpuSpeed(now_, c.speed);
    Refresh(j);
  }
}

void LbSim::ReachServer(uint32_t slot) {
  --in_transit_;
  Flow& f = flows_[slot];
  f.t_server = now_;
  if (servers_[f.server].Jobs() > config_.backlog) {  // App. C.1: connections beyond the backlog are rejected
    Finish(slot, true);
    return;
  }
  EnterStage(slot);
  Refresh(f.server);
}

void LbSim::EnterStage(uint32_t slot) {
  Flow& f = flows_[slot];
  const uint32_t j = f.server;
  const double w = Works(slot)[f.stage];
  if (f.stage % 2 == 0) {
    future_cpu_[j] -= w;
    const double key = config_.wait_order == WaitOrder::kFifo ? now_ : f.t_server;
    servers_[j].EnterCpu(now_, slot, w, key);
  } else {
    future_io_[j] -= w;
    servers_[j].EnterIo(now_, slot, w);
  }
}

void LbSim::OnServerEvent(uint32_t j) {
  ++counters_.events;
  bool was_cpu;
  const uint32_t slot = servers_[j].EndStage(now_, &was_cpu);
  Flow& f = flows_[slot];
  if (++f.stage < config_.app.stages)
    EnterStage(slot);
  else
    Finish(slot, false);
  Refresh(j);
}

void LbSim::Finish(uint32_t slot, bool rejected) {
  Flow& f = flows_[slot];
  const uint32_t j = f.server;
  if (rejected) {
    for (uint32_t k = f.stage; k < config_.app.stages; ++k)
      (k % 2 == 0 ? future_cpu_ : future_io_)[j] -= Works(slot)[k];
    ++server_counters_[j].rejected;
    f.stage = UINT32_MAX;  // marks the flow as rejected until the client receives the reset
  } else {
    ++server_counters_[j].completed;
  }
  if (--committed_[j] == 0) future_cpu_[j] = future_io_[j] = 0;  // drop rounding residue
  ++returning_;
  After(Hop(), kClientReceive, slot);
}

void LbSim::ClientReceive(uint32_t slot) {
  --returning_;
  const Flow& f = flows_[slot];
  const bool rejected = f.stage == UINT32_MAX;
  ++(rejected ? counters_.rejected : counters_.completed);
  if (!f.warmup) {
    ++measured_done_;
    const double fct = now_ - f.t0 + (rejected ? config_.timeout_us : 0.0);
    fct_.Record(fct);
    if (!rejected) fct_served_.Record(fct);
  }
  After(Hop(), kLbNotify, slot);
}

void LbSim::LbNotify(uint32_t slot) {
  const Flow& f = flows_[slot];
  Lb& lb = lbs_[f.lb];
  --lb.count[f.server];
  const Tracked last = lb.tracked.back();
  lb.tracked[f.lb_pos] = last;
  flows_[last.slot].lb_pos = f.lb_pos;
  lb.tracked.pop_back();
  // The LB sees the flow from its first packet to the client's last: its FCT
  // sample (the authors' expire_flow), without the timeout of a reset flow.
  fct_samples_.Add(f.lb * NumServers() + f.server, PeriodOf(now_), now_, now_ - f.t0, lb.obs_rng);
  free_.push_back(slot);
}

void LbSim::Refresh(uint32_t j) {
  const double next = servers_[j].NextEventTime();
  if (next != server_events_.Key(j)) server_events_.Update(j, next);
}

// --------------------------------------------------------------- dispatch

uint32_t LbSim::Pick(Lb& lb, uint32_t slot) {
  const uint32_t n = NumServers();
  switch (lb.policy) {
    case LbPolicy::kEcmp: return lb.rng.Below(n);
    case LbPolicy::kWcmp:
    case LbPolicy::kWeights: {
      const double u = lb.rng.Uniform() * lb.cumulative.back();
      const auto it = std::upper_bound(lb.cumulative.begin(), lb.cumulative.end(), u);
      return std::min(static_cast<uint32_t>(it - lb.cumulative.begin()), n - 1);
    }
    default: break;
  }
  // The least score, ties uniformly at random (one pass, reservoir style).
  double cpu = 0, io = 0;
  if (lb.policy == LbPolicy::kOracle) {
    const double* w = Works(slot);
    for (uint32_t k = 0; k < config_.app.stages; ++k) (k % 2 == 0 ? cpu : io) += w[k];
  }
  uint32_t best = 0, ties = 0;
  double best_score = kernel::kInfinity;
  for (uint32_t j = 0; j < n; ++j) {
    double score;
    switch (lb.policy) {
      case LbPolicy::kLsq: score = lb.count[j]; break;
      case LbPolicy::kSed: score = lb.weights[j] > 0 ? (lb.count[j] + 1.0) / lb.weights[j] : kernel::kInfinity; break;
      default: {
        const Server& s = servers_[j];
        score = s.DrainTime(now_, future_cpu_[j], future_io_[j]) + cpu / (s.Workers() * s.Speed()) + io;
      }
    }
    if (score < best_score) {
      best_score = score;
      best = j;
      ties = 1;
    } else if (score == best_score && lb.rng.Below(++ties) == 0) {
      best = j;
    }
  }
  return best;
}

// The authors' simulator samples the age of every flow an LB tracks at
// random "packet" times between two arrivals at that LB (0 to fd_density
// samples per flow, RESERVOIR_FD_PACKET_DENSITY), keeping ages above
// fd_min_us, into the reservoir of the flow's server.
void LbSim::SampleFlowDurations(Lb& lb) {
  const ObservationConfig& o = config_.observation;
  const uint32_t n = NumServers(), lb_index = static_cast<uint32_t>(&lb - lbs_.data());
  const double from = lb.last_arrival, span = now_ - lb.last_arrival;
  const int64_t period = PeriodOf(now_);  // samples are taken (lazily) now, so they belong to this period
  const uint32_t base = lb_index * n;
  for (const Tracked& f : lb.tracked) {
    for (uint32_t c = lb.obs_rng.Below(o.fd_density + 1); c > 0; --c) {
      const double t = from + span * lb.obs_rng.Uniform();
      const double age = t - f.t0;
      if (age > o.fd_min_us) fd_.Add(base + f.server, period, t, age, lb.obs_rng);
    }
  }
}

// ----------------------------------------------------------- observation

void LbSim::Observe(double* out) const {
  const uint32_t n = NumServers();
  const int64_t period = PeriodOf(now_);
  const double half_life = config_.observation.decay_half_life_us;
  for (uint32_t i = 0; i < lbs_.size(); ++i) {
    const Lb& lb = lbs_[i];
    for (uint32_t j = 0; j < n; ++j) {
      double* o = out + (size_t{i} * n + j) * kNumObservationFeatures;
      const ReservoirSummary fd = fd_.Summarize(i * n + j, period, now_, half_life);
      const ReservoirSummary fct = fct_samples_.Summarize(i * n + j, period, now_, half_life);
      const double feats[kNumObservationFeatures] = {
          static_cast<double>(lb.count[j]),
          static_cast<double>(lb.dispatched_period[j] == period ? lb.dispatched[j] : 0),
          static_cast<double>(fd.count),
          fd.mean,
          fd.p90,
          fd.std,
          fd.decayed,
          static_cast<double>(fct.count),
          fct.mean,
          fct.p90,
          fct.std,
          fct.decayed};
      std::copy(feats, feats + kNumObservationFeatures, o);
    }
  }
}

double LbSim::DrainTime(uint32_t j) const { return servers_[j].DrainTime(now_, future_cpu_[j], future_io_[j]); }

uint64_t LbSim::InFlight() const {
  uint64_t n = in_transit_ + returning_;
  for (const auto& s : servers_) n += s.Jobs();
  return n;
}

}  // namespace dcgym::lb
