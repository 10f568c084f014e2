#include "dcgym/colo/config.hpp"

#include "dcgym/colo/validate.hpp"
#include "dcgym/kernel/check.hpp"

namespace dcgym::colo {

void ColoConfig::Validate() const {
  using kernel::Fail;
  using kernel::Str;
  platform.Validate("platform");
  if (services.empty()) Fail("services", "needs at least one service");
  if (services.size() > kMaxServices)
    Fail("services", "at most " + Str(kMaxServices) + " services, got " + Str(services.size()));
  for (size_t i = 0; i < services.size(); ++i) {
    const std::string f = "services[" + Str(i) + "]";
    services[i].params.Validate(f);
    services[i].workload.Validate(f);
    const Workload& w = services[i].workload;
    if (w.cores > static_cast<int64_t>(platform.logical_cores))
      Fail(f + ".cores", "must be at most the platform's " + Str(platform.logical_cores) + ", got " + Str(w.cores));
    if (w.ways > static_cast<int64_t>(platform.ways))
      Fail(f + ".ways", "must be at most the platform's " + Str(platform.ways) + ", got " + Str(w.ways));
    ServiceModel::Derive(services[i].params, w.threads, platform, f);  // checks ipc against the curve
  }
  Require(std::isfinite(dt_s) && dt_s > 0 && dt_s <= kMaxTickS, "dt_s", "must be in (0, " + Str(kMaxTickS) + "]", dt_s);
  Require(std::isfinite(latency_window_s) && latency_window_s >= dt_s, "latency_window_s",
          "must be at least dt_s (" + Str(dt_s) + ")", latency_window_s);
  Require(latency_window_s / dt_s <= kMaxWindowTicks, "latency_window_s",
          "must span at most " + Str(kMaxWindowTicks) + " ticks", latency_window_s);
  RequirePositive(latency_cap_s, "latency_cap_s");
  RequireNonNegative(noise.latency, "noise.latency");
  Require(std::isfinite(noise.counters) && noise.counters >= 0 && noise.counters <= kMaxCounterNoise, "noise.counters",
          "must be in [0, " + Str(kMaxCounterNoise) + "]", noise.counters);
}

}  // namespace dcgym::colo
