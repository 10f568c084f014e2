#include "dcgym/colo/contention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dcgym::colo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxOuter = 60;        // hyperthread / pool iterations
constexpr double kOuterTol = 1e-10;  // on utilizations
constexpr int kMaxIllinois = 200;
constexpr double kLatencyTol = 1e-12;  // relative, on the memory latency
constexpr double kWarmBracket = 1e-4;  // relative half-width of the first bracket around the last root

// Max-min fair shares of `capacity` among demands (water filling).
void WaterFill(double capacity, const std::vector<double>& need, std::vector<double>* share) {
  const size_t n = need.size();
  share->assign(n, 0.0);
  std::vector<uint8_t> done(n, 0);
  size_t left = n;
  double rest = capacity;
  while (left > 0 && rest > 0) {
    const double fair = rest / static_cast<double>(left);
    bool any = false;
    for (size_t j = 0; j < n; ++j) {
      if (!done[j] && need[j] <= fair) {
        (*share)[j] = need[j];
        rest -= need[j];
        done[j] = 1;
        --left;
        any = true;
      }
    }
    if (!any) {
      for (size_t j = 0; j < n; ++j)
        if (!done[j]) (*share)[j] = fair;
      return;
    }
  }
}

}  // namespace

double LoadedLatency(double unloaded_s, double u) {
  if (u >= 1) return kInf;
  return unloaded_s * (1.0 + u / (2.0 * (1.0 - u)));
}

void Contention::ComputeSpeeds(const ContentionInput& in, const std::vector<Operating>& out) {
  const Platform& pf = *in.platform;
  const double loss = pf.SmtLoss();
  const uint32_t n = static_cast<uint32_t>(in.demand->size());
  speeds_.assign(n, Speeds{});
  for (uint32_t i = 0; i < n; ++i) {
    if (!(*in.demand)[i].active) continue;
    const Allocation& al = (*in.alloc)[i];
    const Placement& pl = in.layout->services[i];
    const uint32_t servers = out[i].servers;
    const uint32_t on_private = std::min(servers, al.cores);
    Speeds s;
    if (pf.ThreadsPerCore() == 1) {
      s.a = on_private;
    } else {
      // The OS spreads threads over idle physical cores first (own ones,
      // then half-shared ones), then doubles up on its own.
      const uint32_t alone = std::min(on_private, pl.own_pairs);
      uint32_t rest = on_private - alone;
      const uint32_t on_partial = std::min(rest, pl.partials);
      rest -= on_partial;
      const uint32_t doubled = rest;
      s.a = alone + doubled;
      s.b = 2.0 * doubled * loss;
      const double penalty = 1.0 + (*in.params)[i].smt_penalty;
      for (uint32_t k = 0; k < on_partial; ++k) {
        const Neighbour& nb = pl.neighbour[k];
        double busy = 0;
        if (nb.kind == Neighbour::Kind::kService)
          busy = out[nb.id].cpu_busy;
        else if (nb.kind == Neighbour::Kind::kGroup && nb.id < group_use_.size())
          busy = group_use_[nb.id];
        s.a += 1.0 - loss * penalty * busy;
      }
    }
    if (al.group >= 0) {
      const double on_pool = servers - on_private;
      s.a += std::min(on_pool, group_avail_[i]) * group_speed_[i];
    }
    speeds_[i] = s;
  }
}

void Contention::ShareGroups(const ContentionInput& in, const std::vector<Operating>& out) {
  const auto& groups = *in.groups;
  const uint32_t n = static_cast<uint32_t>(in.demand->size());
  const double loss = in.platform->SmtLoss();
  group_use_.resize(groups.size(), 0.0);
  group_avail_.assign(n, 0.0);
  group_speed_.assign(n, 1.0);
  std::vector<uint32_t> members;
  std::vector<double> need, share;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].Empty() || groups[g].cores == 0) {
      group_use_[g] = 0;
      continue;
    }
    const double pool = groups[g].cores;
    const double speed = 1.0 - loss * group_use_[g];
    members.clear();
    need.clear();
    for (uint32_t i = 0; i < n; ++i) {
      if (!((groups[g].members >> i) & 1) || !(*in.demand)[i].active) continue;
      const Demand& d = (*in.demand)[i];
      const Operating& op = out[i];
      // Pool cores wanted: the CPU work not covered by its private cores.
      const double on_pool = op.servers - std::min(op.servers, (*in.alloc)[i].cores);
      double want = 0;
      if (d.saturated) {
        want = on_pool;
      } else if (op.t_cpu > 0 && op.servers > 0) {
        const double busy_cores = d.lambda * op.t_cpu;  // servers' worth of CPU busy
        const double on_private = std::min(op.servers, (*in.alloc)[i].cores);
        want = std::min(on_pool, std::max(0.0, busy_cores - on_private) / std::max(speed, 1e-9));
      } else {
        want = on_pool;  // first solve: no estimate yet
      }
      members.push_back(i);
      need.push_back(want);
    }
    WaterFill(pool, need, &share);
    double used = 0;
    for (double s : share) used += s;
    group_use_[g] = std::min(1.0, used / pool);
    for (size_t k = 0; k < members.size(); ++k) {
      const uint32_t i = members[k];
      const double others = used - share[k];
      group_avail_[i] = std::max(0.0, pool - others);
      const double other_frac = used > 0 ? others / used : 0.0;
      group_speed_[i] = 1.0 - loss * group_use_[g] * (1.0 + (*in.params)[i].smt_penalty * other_frac);
    }
  }
}

double Contention::Evaluate(const ContentionInput& in, uint32_t i, double latency_s, Operating* op) const {
  const ServiceModel& m = (*in.models)[i];
  const ServiceParams& p = (*in.params)[i];
  const Allocation& al = (*in.alloc)[i];
  const Demand& d = (*in.demand)[i];
  const double f_hz = al.freq_mhz * 1e6;
  const double per_instr = m.cpi_core / f_hz + op->mpki * 1e-3 * latency_s / p.mlp;
  const double t0 = m.instructions * per_instr * d.slowdown;  // at full speed
  const uint32_t n = op->servers;
  if (n == 0) {
    op->t_cpu = op->t_service = kInf;
    op->capacity = op->throughput = op->utilization = op->cpu_busy = 0;
    return 0;
  }
  const Speeds& s = speeds_[i];
  // Fraction rho of servers busy on a core: (a - b rho) rho = lambda t0.
  double rho = 1.0;
  if (!d.saturated) {
    const double work = d.lambda * t0;
    const double disc = s.a * s.a - 4.0 * s.b * work;
    if (work <= 0)
      rho = 0;
    else if (disc >= 0)
      rho = std::min(1.0, 2.0 * work / (s.a + std::sqrt(disc)));
  }
  const double speed_sum = std::max(s.a - s.b * rho, 1e-9 * n);
  double t_cpu = t0 * n / speed_sum;
  if (al.mba < 1.0 && op->bytes_per_req > 0) {
    // MBA: n servers together move at most mba x peak bytes/s.
    t_cpu = std::max(t_cpu, n * op->bytes_per_req / (al.mba * in.platform->mem_bw_gbs * 1e9));
  }
  op->t_cpu = t_cpu;
  op->t_service = t_cpu + m.io_s;
  op->capacity = n / op->t_service;
  op->throughput = d.saturated ? op->capacity : std::min(d.lambda, op->capacity);
  op->utilization = op->throughput / op->capacity;
  op->cpu_busy = op->throughput * t_cpu / n;
  return op->throughput * op->bytes_per_req;
}

double Contention::Traffic(const ContentionInput& in, double latency_s, std::vector<Operating>* out) const {
  double bytes = 0;
  const uint32_t n = static_cast<uint32_t>(in.demand->size());
  for (uint32_t i = 0; i < n; ++i)
    if ((*in.demand)[i].active) bytes += Evaluate(in, i, latency_s, &(*out)[i]);
  return bytes;
}

double Contention::SolveLatency(const ContentionInput& in, std::vector<Operating>* out) {
  const double l0 = in.platform->mem_latency_ns * 1e-9;
  const double peak = in.platform->mem_bw_gbs * 1e9;
  // h(L) = L - LoadedLatency(traffic(L) / peak) is increasing in L: more
  // latency, slower services, less traffic. h(L0) <= 0.
  auto h = [&](double lat) { return lat - LoadedLatency(l0, Traffic(in, lat, out) / peak); };
  double lo = l0, h_lo = 0, hi = 0, h_hi = 0;
  bool bracketed = false;
  if (mem_latency_s_ > l0) {
    // Warm start: the root seldom moves far from the last one.
    lo = std::max(l0, mem_latency_s_ * (1 - kWarmBracket));
    hi = mem_latency_s_ * (1 + kWarmBracket);
    h_lo = h(lo);
    if (h_lo <= 0) {
      h_hi = h(hi);
      bracketed = h_hi > 0;
    }
  }
  if (!bracketed) {
    lo = l0;
    h_lo = h(lo);
    if (h_lo >= 0) return lo;
    hi = std::max(2.0 * l0, mem_latency_s_ > l0 ? 1.5 * mem_latency_s_ : 0.0);
    h_hi = h(hi);
    while (!(h_hi > 0)) {
      lo = hi;
      h_lo = h_hi;
      hi *= 2;
      h_hi = h(hi);
    }
  }
  // Illinois (modified regula falsi); -inf values (saturated memory) bisect.
  int side = 0;
  double x = hi;
  for (int it = 0; it < kMaxIllinois && hi - lo > kLatencyTol * hi; ++it) {
    x = std::isfinite(h_lo) ? (lo * h_hi - hi * h_lo) / (h_hi - h_lo) : 0.5 * (lo + hi);
    if (!(x > lo && x < hi)) x = 0.5 * (lo + hi);
    const double hx = h(x);
    if (hx > 0) {
      hi = x;
      h_hi = hx;
      if (side == 1 && std::isfinite(h_lo)) h_lo *= 0.5;
      side = 1;
    } else {
      lo = x;
      h_lo = hx;
      if (side == -1) h_hi *= 0.5;
      side = -1;
    }
    if (hx == 0) {
      hi = x;
      break;
    }
  }
  // Leave `out` at the root, on the side where the memory queue is stable.
  Traffic(in, hi, out);
  return hi;
}

void Contention::Solve(const ContentionInput& in, std::vector<Operating>* out) {
  const uint32_t n = static_cast<uint32_t>(in.demand->size());
  const Platform& pf = *in.platform;
  // What does not change within a solve: servers, miss rates, bytes per request.
  for (uint32_t i = 0; i < n; ++i) {
    Operating& op = (*out)[i];
    const Demand& d = (*in.demand)[i];
    if (!d.active) {
      op = Operating{};
      continue;
    }
    const Allocation& al = (*in.alloc)[i];
    const uint32_t group_cores = al.group >= 0 ? (*in.groups)[al.group].cores : 0;
    op.servers = std::min((*in.models)[i].threads, al.cores + group_cores);
    op.mpki = (*in.params)[i].mrc.Mpki(d.cache_mb);
    op.bytes_per_req = (*in.models)[i].instructions * op.mpki * 1e-3 * (*in.params)[i].bytes_per_miss;
  }
  std::vector<double> prev(n);
  for (int outer = 0; outer < kMaxOuter; ++outer) {
    for (uint32_t i = 0; i < n; ++i) prev[i] = (*out)[i].cpu_busy;
    const double prev_latency = mem_latency_s_;
    ShareGroups(in, *out);
    ComputeSpeeds(in, *out);
    mem_latency_s_ = SolveLatency(in, out);
    double change = std::fabs(mem_latency_s_ - prev_latency) / mem_latency_s_;
    for (uint32_t i = 0; i < n; ++i) change = std::max(change, std::fabs((*out)[i].cpu_busy - prev[i]));
    if (change < kOuterTol) break;
  }
  double traffic = 0;
  for (uint32_t i = 0; i < n; ++i) traffic += (*out)[i].throughput * (*out)[i].bytes_per_req;
  mem_utilization_ = traffic / (pf.mem_bw_gbs * 1e9);
}

}  // namespace dcgym::colo
