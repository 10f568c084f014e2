#include "dcgym/colo/colo_sim.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "dcgym/colo/validate.hpp"
#include "dcgym/kernel/check.hpp"

namespace dcgym::colo {
namespace {

using kernel::Fail;
using kernel::Str;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kMiB = 1048576.0;  // cache sizes are binary megabytes (45 MB = 20 x 2.25 MB)
constexpr double kGiB = 1073741824.0;
// Noise streams: one per service, apart from the rack model's stream ids.
constexpr uint64_t kNoiseStream = uint64_t{0xC010} << 32;

bool SameDemand(const std::vector<Demand>& a, const std::vector<Demand>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const Demand &x = a[i], &y = b[i];
    if (x.active != y.active || x.lambda != y.lambda || x.saturated != y.saturated || x.cache_mb != y.cache_mb ||
        x.slowdown != y.slowdown)
      return false;
  }
  return true;
}

bool SameAllocation(const Allocation& a, const Allocation& b) {
  return a.cores == b.cores && a.ways == b.ways && a.mba == b.mba && a.freq_mhz == b.freq_mhz;
}

std::string ServiceField(uint32_t i, const std::string& name) { return "service " + Str(i) + " (" + name + ")"; }

}  // namespace

ColoSim::ColoSim(ColoConfig config) : config_(std::move(config)) {
  config_.Validate();
  const uint32_t n = NumServices();
  for (uint32_t i = 0; i < n; ++i) {
    const auto& sc = config_.services[i];
    params_.push_back(sc.params);
    models_.push_back(
        ServiceModel::Derive(sc.params, sc.workload.threads, config_.platform, "services[" + Str(i) + "]"));
    shapes_.push_back(ServiceShape::FromMoments(1.0, sc.params.cv2));
  }
  window_ticks_ = std::max<size_t>(1, static_cast<size_t>(std::llround(config_.latency_window_s / config_.dt_s)));
  Reset(config_.seed);
}

void ColoSim::Reset(uint64_t seed) {
  const uint32_t n = NumServices();
  ticks_ = 0;
  Allocation none;
  none.freq_mhz = config_.platform.freq_max_mhz;
  alloc_.assign(n, none);
  groups_.assign(ColoConfig::kMaxGroups, ShareGroup{});
  active_.assign(n, 0);
  state_.assign(n, State{});
  rng_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    state_[i].rps = config_.services[i].workload.rps;
    state_[i].window.assign(window_ticks_, 0.0);
    rng_.emplace_back(seed, kNoiseStream + i);
  }
  ops_.assign(n, Operating{});
  demand_.assign(n, Demand{});
  counters_.assign(static_cast<size_t>(n) * kNumCounters, 0.0);
  contention_.Reset();
  layout_dirty_ = true;
  last_demand_.clear();
  ProcessEvents();
  for (uint32_t i = 0; i < n; ++i) WriteCounters(i, Operating{}, 0.0, nullptr);
}

// ---------------------------------------------------------------- lifecycle

void ColoSim::ProcessEvents() {
  const double now = Now(), eps = 1e-9 * config_.dt_s;
  // Departures first: what they free is idle for launches at the same instant.
  for (uint32_t i = 0; i < NumServices(); ++i)
    if (active_[i] && config_.services[i].workload.end_s <= now + eps) End(i);
  for (uint32_t i = 0; i < NumServices(); ++i) {
    State& s = state_[i];
    const Workload& w = config_.services[i].workload;
    while (s.next_change < w.changes.size() && w.changes[s.next_change].first <= now + eps)
      s.rps = w.changes[s.next_change++].second;
    if (s.phase == Phase::kPending && w.launch_s <= now + eps) {
      Launch(i);
      if (w.end_s <= now + eps) End(i);  // a zero-length life still launches and ends
    }
    if (s.phase == Phase::kWarming && now + eps >= s.launched_at + params_[i].warmup_s) s.phase = Phase::kRunning;
  }
}

void ColoSim::Launch(uint32_t i) {
  State& s = state_[i];
  const Workload& w = config_.services[i].workload;
  const uint32_t idle_cores = IdleCores(), idle_ways = IdleWays();
  s.phase = params_[i].warmup_s > 0 ? Phase::kWarming : Phase::kRunning;
  s.launched_at = Now();
  s.backlog = s.warm_mb = s.share_mb = s.miss_rate = 0;
  ClearWindow(s);
  active_[i] = 1;
  const bool take_idle = config_.on_launch == OnLaunch::kIdle;
  Allocation& a = alloc_[i];
  a.cores = w.cores >= 0 ? std::min<uint32_t>(static_cast<uint32_t>(w.cores), idle_cores) : take_idle ? idle_cores : 0;
  a.ways = w.ways >= 0 ? std::min<uint32_t>(static_cast<uint32_t>(w.ways), idle_ways) : take_idle ? idle_ways : 0;
  a.mba = 1.0;
  a.freq_mhz = config_.platform.freq_max_mhz;
  a.group = -1;
  layout_dirty_ = true;
}

void ColoSim::End(uint32_t i) {
  State& s = state_[i];
  s.phase = Phase::kEnded;
  s.backlog = 0;
  active_[i] = 0;
  Allocation& a = alloc_[i];
  if (a.group >= 0) {
    ShareGroup& g = groups_[a.group];
    g.members &= ~(uint64_t{1} << i);
    if (g.Empty()) g = ShareGroup{};  // its pool returns to the idle resources
  }
  a.cores = a.ways = 0;
  a.group = -1;
  layout_dirty_ = true;
}

void ColoSim::ClearWindow(State& s) {
  std::fill(s.window.begin(), s.window.end(), 0.0);
  s.window_next = s.window_count = 0;
  s.window_sum = 0;
}

// ---------------------------------------------------------------- allocation

uint32_t ColoSim::IdleCores() const {
  uint32_t used = 0;
  for (const auto& a : alloc_) used += a.cores;
  for (const auto& g : groups_)
    if (!g.Empty()) used += g.cores;
  return config_.platform.logical_cores - std::min(used, config_.platform.logical_cores);
}

uint32_t ColoSim::IdleWays() const {
  uint32_t used = 0;
  for (const auto& a : alloc_) used += a.ways;
  for (const auto& g : groups_)
    if (!g.Empty()) used += g.ways;
  return config_.platform.ways - std::min(used, config_.platform.ways);
}

void ColoSim::CheckAllocation(uint32_t i, const Allocation& a) const {
  const Platform& pf = config_.platform;
  // The message (and its string building) only on failure: this runs on every allocation.
  auto field = [&](const char* name) { return ServiceField(i, params_[i].name) + "." + name; };
  if (a.cores > pf.logical_cores)
    Fail(field("cores"), "must be at most the platform's " + Str(pf.logical_cores) + ", got " + Str(a.cores));
  if (a.ways > pf.ways) Fail(field("ways"), "must be at most the platform's " + Str(pf.ways) + ", got " + Str(a.ways));
  if (!(std::isfinite(a.freq_mhz) && a.freq_mhz >= pf.freq_min_mhz && a.freq_mhz <= pf.freq_max_mhz))
    Fail(field("freq_mhz"),
         "must be in [" + Str(pf.freq_min_mhz) + ", " + Str(pf.freq_max_mhz) + "], got " + Str(a.freq_mhz));
  if (!pf.mba && a.mba != 1.0)
    Fail(field("mba"), "must be 1 on a platform without MBA (" + pf.name + "), got " + Str(a.mba));
  if (!(std::isfinite(a.mba) && a.mba >= 0.01 && a.mba <= 1))
    Fail(field("mba"), "must be in [0.01, 1], got " + Str(a.mba));
}

const Allocation& ColoSim::AllocationOf(uint32_t service) const {
  if (service >= NumServices()) Fail("service", "must be in [0, " + Str(NumServices() - 1) + "], got " + Str(service));
  return alloc_[service];
}

void ColoSim::SetAllocation(uint32_t service, const Allocation& a) {
  if (service >= NumServices()) Fail("service", "must be in [0, " + Str(NumServices() - 1) + "], got " + Str(service));
  if (!active_[service]) {
    static const char* kPhase[] = {"pending", "warming", "running", "ended"};
    Fail(ServiceField(service, params_[service].name), std::string("not running (") +
                                                           kPhase[static_cast<int>(state_[service].phase)] +
                                                           "); resources go only to launched services");
  }
  CheckAllocation(service, a);
  std::vector<Allocation> trial = alloc_;
  trial[service] = a;
  trial[service].group = alloc_[service].group;
  CheckConservation(config_.platform, trial, groups_);
  if (SameAllocation(a, alloc_[service])) return;
  alloc_[service] = trial[service];
  AllocationChanged();
}

void ColoSim::SetAllocations(const std::vector<Allocation>& all) {
  if (all.size() != NumServices())
    Fail("allocations", "needs one per service (" + Str(NumServices()) + "), got " + Str(all.size()));
  bool changed = false;
  for (uint32_t i = 0; i < NumServices(); ++i) {
    if (!active_[i]) {
      if (all[i].cores != 0 || all[i].ways != 0)
        Fail(ServiceField(i, params_[i].name),
             "not running; it must get 0 cores and 0 ways, got " + Str(all[i].cores) + " and " + Str(all[i].ways));
      continue;
    }
    CheckAllocation(i, all[i]);
    changed = changed || !SameAllocation(all[i], alloc_[i]);
  }
  std::vector<Allocation> trial = all;
  for (uint32_t i = 0; i < NumServices(); ++i) {
    trial[i].group = alloc_[i].group;
    if (!active_[i]) trial[i] = alloc_[i];
  }
  CheckConservation(config_.platform, trial, groups_);
  if (!changed) return;
  alloc_ = trial;
  AllocationChanged();
}

void ColoSim::SetGroup(uint32_t group, uint64_t members, uint32_t cores, uint32_t ways) {
  if (!config_.sharing) Fail("sharing", "share groups need sharing: true in the config");
  if (group >= ColoConfig::kMaxGroups)
    Fail("group", "must be in [0, " + Str(ColoConfig::kMaxGroups - 1) + "], got " + Str(group));
  const uint32_t n = NumServices();
  if (n < 64 && (members >> n) != 0) Fail("members", "names a service beyond the last (" + Str(n - 1) + ")");
  for (uint32_t i = 0; i < n; ++i) {
    if (!((members >> i) & 1)) continue;
    if (!active_[i]) Fail("members", ServiceField(i, params_[i].name) + " is not running");
    if (alloc_[i].group >= 0 && static_cast<uint32_t>(alloc_[i].group) != group)
      Fail("members", ServiceField(i, params_[i].name) + " is already in group " + Str(alloc_[i].group));
  }
  std::vector<ShareGroup> trial = groups_;
  trial[group] = members == 0 ? ShareGroup{} : ShareGroup{cores, ways, members};
  CheckConservation(config_.platform, alloc_, trial);
  groups_ = trial;
  for (uint32_t i = 0; i < n; ++i) {
    if ((members >> i) & 1)
      alloc_[i].group = static_cast<int32_t>(group);
    else if (alloc_[i].group == static_cast<int32_t>(group))
      alloc_[i].group = -1;
  }
  AllocationChanged();
}

void ColoSim::SetGroup(uint32_t group, const std::vector<uint32_t>& members, uint32_t cores, uint32_t ways) {
  uint64_t mask = 0;
  for (uint32_t i : members) {
    if (i >= NumServices())
      Fail("members", "service " + Str(i) + " does not exist (0.." + Str(NumServices() - 1) + ")");
    mask |= uint64_t{1} << i;
  }
  SetGroup(group, mask, cores, ways);
}

void ColoSim::SetRps(uint32_t service, double rps) {
  if (service >= NumServices()) Fail("service", "must be in [0, " + Str(NumServices() - 1) + "], got " + Str(service));
  RequireNonNegative(rps, "rps");
  state_[service].rps = rps;
}

void ColoSim::AllocationChanged() {
  layout_dirty_ = true;  // also means: solve again (frequency and MBA changes included)
  if (config_.mode != Mode::kFresh) return;
  // CLITE relaunches every service for each sample: every queue starts empty.
  for (auto& s : state_) {
    s.backlog = 0;
    ClearWindow(s);
  }
}

double ColoSim::CapacityMb(uint32_t i) const {
  return alloc_[i].ways * config_.platform.mb_per_way + state_[i].share_mb;
}

void ColoSim::UpdateShares() {
  // Shared LRU ways: each member holds a part in proportion to its fills.
  for (size_t g = 0; g < groups_.size(); ++g) {
    if (groups_[g].Empty()) continue;
    double total = 0;
    uint32_t count = 0;
    for (uint32_t i = 0; i < NumServices(); ++i) {
      if (!((groups_[g].members >> i) & 1)) continue;
      total += state_[i].miss_rate;
      ++count;
    }
    const double pool_mb = groups_[g].ways * config_.platform.mb_per_way;
    for (uint32_t i = 0; i < NumServices(); ++i) {
      if (!((groups_[g].members >> i) & 1)) continue;
      state_[i].share_mb = total > 0 ? pool_mb * state_[i].miss_rate / total : pool_mb / count;
    }
  }
  for (uint32_t i = 0; i < NumServices(); ++i)
    if (alloc_[i].group < 0) state_[i].share_mb = 0;
}

// ---------------------------------------------------------------- the tick

void ColoSim::Step(uint64_t ticks) {
  for (uint64_t k = 0; k < ticks; ++k) Tick();
}

double ColoSim::Slowdown(uint32_t i) const {
  const Allocation& a = alloc_[i];
  const uint32_t cores = a.cores + (a.group >= 0 ? groups_[a.group].cores : 0);
  const double threads = models_[i].threads;
  // More threads than cores: time slicing and its context switches (OSML §3.2, Fig. 2).
  double slowdown = 1.0;
  if (cores > 0 && threads > cores) slowdown += params_[i].ctx_overhead * (threads / cores - 1.0);
  const State& s = state_[i];
  if (s.phase == Phase::kWarming) {
    const double left = 1.0 - (Now() - s.launched_at) / params_[i].warmup_s;
    slowdown *= 1.0 + params_[i].warmup_slowdown * std::clamp(left, 0.0, 1.0);
  }
  return slowdown;
}

void ColoSim::Tick() {
  const uint32_t n = NumServices();
  if (layout_dirty_) {
    layout_ = BuildLayout(config_.platform, alloc_, groups_, active_);
    layout_dirty_ = false;
    solve_dirty_ = true;
  }
  UpdateShares();
  for (uint32_t i = 0; i < n; ++i) {
    Demand& d = demand_[i];
    d = Demand{};
    if (!active_[i]) continue;
    State& s = state_[i];
    s.warm_mb = std::min(s.warm_mb, CapacityMb(i));  // ways taken away are lost at once
    d.active = true;
    d.lambda = s.rps;
    d.saturated = s.backlog > 0;
    d.cache_mb = s.warm_mb;
    d.slowdown = Slowdown(i);
  }
  // Most ticks repeat the last one's inputs (a controller acts every 5-20
  // ticks): then the solution is the same and is kept.
  if (solve_dirty_ || !SameDemand(demand_, last_demand_)) {
    const ContentionInput in{&config_.platform, &params_, &models_, &alloc_, &groups_, &layout_, &demand_};
    contention_.Solve(in, &ops_);
    last_demand_ = demand_;
    solve_dirty_ = false;
  }
  const double dt = config_.dt_s;
  const bool noisy = config_.noise.latency > 0 || config_.noise.counters > 0;
  double z[kNoiseDraws] = {};
  for (uint32_t i = 0; i < n; ++i) {
    // Fixed draws per service and tick, running or not: the streams stay
    // aligned across schedulers (common random numbers).
    if (noisy) Normals(rng_[i], z, kNoiseDraws);
    if (!active_[i]) {
      WriteCounters(i, Operating{}, 0.0, nullptr);
      continue;
    }
    State& s = state_[i];
    const Operating& op = ops_[i];
    const double b0 = s.backlog;
    const double b1 = std::max(0.0, b0 + (s.rps - op.capacity) * dt);
    const double quantile = TickQuantile(i, op, b0, b1);
    s.backlog = b1;
    const double misses = op.throughput * models_[i].instructions * op.mpki * 1e-3;
    s.miss_rate = misses;
    s.warm_mb = std::min(CapacityMb(i), s.warm_mb + misses * kLineBytes * dt / kMiB);
    WriteCounters(i, op, quantile, z);
  }
  ++ticks_;
  ProcessEvents();
  // Launches and departures at the tick's end show in the allocation columns.
  for (uint32_t i = 0; i < n; ++i) WriteAllocation(i);
}

double ColoSim::TickQuantile(uint32_t i, const Operating& op, double b0, double b1) {
  State& s = state_[i];
  const double cap = config_.latency_cap_s;
  if (op.servers == 0 || !(op.capacity > 0)) return s.rps > 0 || b1 > 0 ? cap : 0.0;
  if (s.rps <= 0 && b0 <= 0 && b1 <= 0) return 0.0;
  const double q = params_[i].percentile;
  // Near and above capacity the stationary part stays at kStationaryRhoMax;
  // the backlog carries the rest.
  const double lambda = std::min(s.rps, kStationaryRhoMax * op.capacity);
  if (op.servers != s.cache_servers || lambda != s.cache_lambda || op.t_service != s.cache_t) {
    // The last answer starts the search when only the operating point moved a little.
    const double guess = op.servers == s.cache_servers && std::isfinite(s.cache_value) ? s.cache_value : 0.0;
    s.cache_servers = op.servers;
    s.cache_lambda = lambda;
    s.cache_t = op.t_service;
    s.cache_value = StationaryQuantile(op.servers, lambda, shapes_[i].Scaled(op.t_service), q, guess);
  }
  // Requests of this tick queue behind a backlog moving from b0 to b1.
  const double behind = std::min(b0, b1) + q * std::fabs(b1 - b0);
  return std::min(cap, s.cache_value + behind / op.capacity);
}

void ColoSim::Normals(kernel::Rng& rng, double* z, int count) {
  // Marsaglia's polar method: a pair per accepted point, no trigonometry.
  for (int k = 0; k < count; k += 2) {
    double u, v, s;
    do {
      u = 2.0 * rng.Uniform() - 1.0;
      v = 2.0 * rng.Uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    z[k] = u * f;
    if (k + 1 < count) z[k + 1] = v * f;
  }
}

void ColoSim::WriteCounters(uint32_t i, const Operating& op, double tick_quantile, const double* z) {
  double* row = &counters_[static_cast<size_t>(i) * kNumCounters];
  std::fill(row, row + kNumCounters, 0.0);
  WriteAllocation(i);
  if (z == nullptr) return;
  State& st = state_[i];
  const Allocation& a = alloc_[i];
  const ServiceParams& p = params_[i];
  // The latency window: the mean of its ticks' quantiles.
  st.window_sum += tick_quantile - st.window[st.window_next];
  st.window[st.window_next] = tick_quantile;
  st.window_next = (st.window_next + 1) % window_ticks_;
  st.window_count = std::min(st.window_count + 1, window_ticks_);
  if (st.window_count < window_ticks_) {  // exact sum until the ring is full
    st.window_sum = 0;
    for (size_t k = 0; k < st.window_count; ++k) st.window_sum += st.window[k];
  }
  const double window_latency = std::max(0.0, st.window_sum / st.window_count);
  const double q = p.percentile;
  const double requests = st.rps * st.window_count * config_.dt_s;
  const double sigma =
      std::min(1.0, config_.noise.latency * std::sqrt(q / ((1 - q) * std::max(requests, 1.0))) / std::log(1 / (1 - q)));
  const double counter_sigma = config_.noise.counters;
  const ServiceModel& m = models_[i];
  const double f_hz = a.freq_mhz * 1e6;
  row[kLatency] = window_latency * 1e3 * std::exp(sigma * z[0]);
  if (op.servers > 0 && std::isfinite(op.t_cpu)) {
    row[kCpuUtilization] = 100.0 * op.throughput * op.t_cpu * std::exp(counter_sigma * z[1]);
    row[kIpc] = m.instructions / (op.t_cpu * f_hz) * std::exp(counter_sigma * z[2]);
    row[kCapacity] = op.capacity;
  }
  row[kMisses] = op.throughput * m.instructions * op.mpki * 1e-6 * std::exp(counter_sigma * z[3]);
  row[kMbl] = op.throughput * op.bytes_per_req * 1e-6 * std::exp(counter_sigma * z[4]);
  row[kVirtMemory] = p.virt_memory_gb * kGiB;
  row[kResMemory] = p.res_memory_gb * kGiB;
  row[kThroughput] = op.throughput;
  row[kUtilization] = op.utilization;
  row[kBacklog] = st.backlog;
  row[kP99] = tick_quantile * 1e3;
  row[kWarmCache] = st.warm_mb;
}

void ColoSim::WriteAllocation(uint32_t i) {
  double* row = &counters_[static_cast<size_t>(i) * kNumCounters];
  const Allocation& a = alloc_[i];
  const ShareGroup* g = a.group >= 0 ? &groups_[a.group] : nullptr;
  row[kFrequency] = a.freq_mhz;
  row[kAllocatedCore] = a.cores + (g ? g->cores : 0);
  row[kAllocatedCache] = (a.ways + (g ? g->ways : 0)) * config_.platform.mb_per_way;
  row[kMba] = a.mba;
  row[kRps] = state_[i].rps;
  row[kState] = static_cast<double>(state_[i].phase);
}

// ---------------------------------------------------------------- steady state

std::vector<double> ColoSim::SteadyState(const std::vector<Allocation>& alloc, const std::vector<double>& rps) {
  const uint32_t n = NumServices();
  if (alloc.size() != n) Fail("allocations", "needs one per service (" + Str(n) + "), got " + Str(alloc.size()));
  if (rps.size() != n) Fail("rps", "needs one per service (" + Str(n) + "), got " + Str(rps.size()));
  std::vector<Allocation> trial = alloc;
  std::vector<uint8_t> present(n, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (!std::isfinite(rps[i])) Fail("rps[" + Str(i) + "]", "must be finite, got " + Str(rps[i]));
    present[i] = rps[i] > 0;
    CheckAllocation(i, trial[i]);
    trial[i].group = alloc_[i].group;
    if (!present[i]) trial[i].group = -1;
  }
  CheckConservation(config_.platform, trial, groups_);
  const Layout layout = BuildLayout(config_.platform, trial, groups_, present);
  steady_demand_.assign(n, Demand{});
  for (uint32_t i = 0; i < n; ++i) {
    if (!present[i]) continue;
    Demand& d = steady_demand_[i];
    d.active = true;
    d.lambda = rps[i];
    double mb = trial[i].ways * config_.platform.mb_per_way;
    if (trial[i].group >= 0) {  // shared ways split evenly among the present members
      const ShareGroup& g = groups_[trial[i].group];
      uint32_t members = 0;
      for (uint32_t j = 0; j < n; ++j) members += ((g.members >> j) & 1) && present[j];
      mb += g.ways * config_.platform.mb_per_way / std::max(1u, members);
    }
    d.cache_mb = mb;
    const uint32_t cores = trial[i].cores + (trial[i].group >= 0 ? groups_[trial[i].group].cores : 0);
    const double threads = models_[i].threads;
    d.slowdown = cores > 0 && threads > cores ? 1.0 + params_[i].ctx_overhead * (threads / cores - 1.0) : 1.0;
  }
  steady_ops_.assign(n, Operating{});
  steady_contention_.Reset();
  const ContentionInput in{&config_.platform, &params_, &models_, &trial, &groups_, &layout, &steady_demand_};
  steady_contention_.Solve(in, &steady_ops_);
  std::vector<double> out(n, kNaN);
  for (uint32_t i = 0; i < n; ++i) {
    if (!present[i]) continue;
    const Operating& op = steady_ops_[i];
    out[i] = op.servers == 0
                 ? kInf
                 : StationaryQuantile(op.servers, rps[i], shapes_[i].Scaled(op.t_service), params_[i].percentile);
  }
  return out;
}

void StepBatch(const std::vector<ColoSim*>& sims, uint64_t ticks) {
  for (size_t i = 0; i < sims.size(); ++i)
    if (sims[i] == nullptr) Fail("sims[" + Str(i) + "]", "None");
  for (ColoSim* sim : sims) sim->Step(ticks);
}

}  // namespace dcgym::colo
