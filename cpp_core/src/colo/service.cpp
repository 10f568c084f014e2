#include "dcgym/colo/service.hpp"

#include <algorithm>
#include <cmath>

#include "dcgym/colo/validate.hpp"
#include "dcgym/kernel/check.hpp"

namespace dcgym::colo {

using kernel::Fail;
using kernel::Str;

double MissRateCurve::Mpki(double mb) const {
  // Below a sliver of cache the power law would diverge; one way is the least
  // any platform gives, so 0.25 MB is a floor on C no allocation reaches.
  const double c = std::max(mb, 0.25);
  double mpki = floor + pow * std::pow(c, -alpha);
  if (hot > 0 && c < hot_mb) mpki += hot * std::min(1.0, (hot_mb - c) / hot_width_mb);
  return mpki;
}

void MissRateCurve::Validate(const std::string& field) const {
  const std::string f = field + ".";
  RequireNonNegative(floor, f + "floor");
  RequireNonNegative(pow, f + "pow");
  Require(std::isfinite(alpha) && alpha >= 0 && alpha <= 3, f + "alpha", "must be in [0, 3]", alpha);
  RequireNonNegative(hot, f + "hot");
  RequireNonNegative(hot_mb, f + "hot_mb");
  RequirePositive(hot_width_mb, f + "hot_width_mb");
}

void ServiceParams::Validate(const std::string& field) const {
  const std::string f = field + ".";
  if (name.empty()) Fail(f + "name", "must not be empty");
  RequirePositive(qos_ms, f + "qos_ms");
  Require(std::isfinite(percentile) && percentile >= 0.5 && percentile < 1, f + "percentile", "must be in [0.5, 1)",
          percentile);
  RequirePositive(service_ms, f + "service_ms");
  Require(std::isfinite(cv2) && cv2 >= 0 && cv2 <= 100, f + "cv2", "must be in [0, 100]", cv2);
  Require(std::isfinite(ipc) && ipc > 0 && ipc <= 8, f + "ipc", "must be in (0, 8]", ipc);
  Require(std::isfinite(mlp) && mlp >= 1, f + "mlp", "must be a finite number >= 1", mlp);
  RequirePositive(bytes_per_miss, f + "bytes_per_miss");
  mrc.Validate(f + "mrc");
  RequireNonNegative(ref_freq_mhz, f + "ref_freq_mhz");
  RequireNonNegative(ref_cache_mb, f + "ref_cache_mb");
  RequireNonNegative(ref_mem_latency_ns, f + "ref_mem_latency_ns");
  RequireNonNegative(io_ms, f + "io_ms");
  RequireNonNegative(smt_penalty, f + "smt_penalty");
  RequireNonNegative(ctx_overhead, f + "ctx_overhead");
  RequireNonNegative(warmup_s, f + "warmup_s");
  RequireNonNegative(warmup_slowdown, f + "warmup_slowdown");
  RequireNonNegative(virt_memory_gb, f + "virt_memory_gb");
  RequireNonNegative(res_memory_gb, f + "res_memory_gb");
}

void Workload::Validate(const std::string& field) const {
  const std::string f = field + ".";
  RequireNonNegative(rps, f + "rps");
  Require(threads <= kMaxThreads, f + "threads", "must be at most " + Str(kMaxThreads), threads);
  RequireNonNegative(launch_s, f + "launch_s");
  Require(!std::isnan(end_s) && end_s > launch_s, f + "end_s", "must be after launch_s (" + Str(launch_s) + ")", end_s);
  double last = 0;
  for (size_t k = 0; k < changes.size(); ++k) {
    const std::string c = f + "changes[" + Str(k) + "]";
    Require(std::isfinite(changes[k].first) && changes[k].first >= last, c + ".time_s",
            "must be finite and not before the previous change (" + Str(last) + ")", changes[k].first);
    RequireNonNegative(changes[k].second, c + ".rps");
    last = changes[k].first;
  }
  Require(cores >= -1, f + "cores", "must be >= 0 (or absent)", static_cast<double>(cores));
  Require(ways >= -1, f + "ways", "must be >= 0 (or absent)", static_cast<double>(ways));
}

ServiceModel ServiceModel::Derive(const ServiceParams& p, uint32_t threads, const Platform& platform,
                                  const std::string& field) {
  // At the reference point: 1 / ipc = cpi_core + mpki / 1000 x L0 x f / mlp.
  const double f_mhz = p.ref_freq_mhz > 0 ? p.ref_freq_mhz : platform.freq_max_mhz;
  const double cache_mb = p.ref_cache_mb > 0 ? p.ref_cache_mb : platform.CacheMb();
  const double latency_ns = p.ref_mem_latency_ns > 0 ? p.ref_mem_latency_ns : platform.mem_latency_ns;
  const double mpki = p.mrc.Mpki(cache_mb);
  const double mem_cpi = mpki * 1e-3 * latency_ns * f_mhz * 1e-3 / p.mlp;
  ServiceModel m;
  m.cpi_core = 1.0 / p.ipc - mem_cpi;
  if (m.cpi_core < kMinCpiCore)
    Fail(field + ".ipc", "too high for its miss-rate curve: at " + Str(mpki) + " MPKI memory stalls alone take " +
                             Str(mem_cpi) + " cycles per instruction, leaving " + Str(m.cpi_core) +
                             " for the core (at least " + Str(kMinCpiCore) + "); got ipc " + Str(p.ipc));
  m.instructions = p.service_ms * 1e-3 * f_mhz * 1e6 * p.ipc;
  m.io_s = p.io_ms * 1e-3;
  m.threads = threads == 0 ? platform.logical_cores : threads;
  return m;
}

}  // namespace dcgym::colo
