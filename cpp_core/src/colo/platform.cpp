#include "dcgym/colo/platform.hpp"

#include "dcgym/colo/validate.hpp"
#include "dcgym/kernel/check.hpp"

namespace dcgym::colo {

void Platform::Validate(const std::string& field) const {
  const std::string f = field + ".";
  Require(logical_cores >= 1 && logical_cores <= kMaxCores, f + "logical_cores",
          "must be in [1, " + kernel::Str(kMaxCores) + "]", logical_cores);
  Require(physical_cores >= 1, f + "physical_cores", "must be >= 1", physical_cores);
  if (logical_cores != physical_cores && logical_cores != 2 * physical_cores)
    kernel::Fail(f + "logical_cores", "must equal physical_cores or twice it (" + kernel::Str(physical_cores) +
                                          "), got " + kernel::Str(logical_cores));
  Require(ways >= 1 && ways <= kMaxWays, f + "ways", "must be in [1, " + kernel::Str(kMaxWays) + "]", ways);
  RequirePositive(mb_per_way, f + "mb_per_way");
  RequirePositive(mem_bw_gbs, f + "mem_bw_gbs");
  RequirePositive(freq_min_mhz, f + "freq_min_mhz");
  Require(std::isfinite(freq_max_mhz) && freq_max_mhz >= freq_min_mhz, f + "freq_max_mhz",
          "must be >= freq_min_mhz (" + kernel::Str(freq_min_mhz) + ")", freq_max_mhz);
  RequirePositive(mem_latency_ns, f + "mem_latency_ns");
  Require(std::isfinite(smt_gain) && smt_gain >= 1 && smt_gain <= kMaxSmtGain, f + "smt_gain",
          "must be in [1, " + kernel::Str(kMaxSmtGain) + "]", smt_gain);
}

}  // namespace dcgym::colo
