// One server as the colo model sees it: cores with two hyperthreads each, a
// last-level cache partitioned by ways (Intel CAT), one memory controller,
// per-core frequency (DVFS) and optionally per-service bandwidth caps (MBA).
//
// The engine takes explicit values only; the presets (OSML's E5-2697 v4,
// PARTIES' E5-2699 v4, CLITE's Silver 4114, OSML+'s Gold 6338 and 5220R) live
// with their sources in envs/colo/catalog.yaml.
#pragma once

#include <cstdint>
#include <string>

namespace dcgym::colo {

// The bounds of a platform, checked by Platform::Validate() and exported by the binding (ColoSim.limits).
inline constexpr uint32_t kMaxCores = 1024;  // logical cores
inline constexpr uint32_t kMaxWays = 64;     // LLC ways
inline constexpr double kMaxSmtGain = 2;     // two hyperthreads at most double a core's throughput

// The platform's fields by name, in the order of the config schema: the binding reads these, and the colo
// catalog (envs/colo/catalog.py) takes its list of per-platform entries from here (ColoSim.platform_fields).
inline constexpr const char* kPlatformFields[] = {
    "name",         "logical_cores", "physical_cores", "ways",     "mb_per_way", "mem_bw_gbs",
    "freq_min_mhz", "freq_max_mhz",  "mem_latency_ns", "smt_gain", "mba"};

struct Platform {
  std::string name = "custom";
  uint32_t logical_cores = 36;   // the unit of core allocation (OSML: "cores")
  uint32_t physical_cores = 18;  // logical_cores / physical_cores hyperthreads each (1 or 2)
  uint32_t ways = 20;            // LLC ways, the unit of cache allocation
  double mb_per_way = 2.25;      // LLC capacity of one way, MB
  double mem_bw_gbs = 76.8;      // peak memory bandwidth, GB/s (1e9 bytes)
  double freq_min_mhz = 1200;
  double freq_max_mhz = 2300;  // also the reference frequency of service_ms and ipc
  double mem_latency_ns = 90;  // unloaded memory latency of an LLC miss
  // Throughput of a physical core running two threads, relative to one thread
  // alone: each of two busy hyperthreads runs at smt_gain / 2 of full speed.
  double smt_gain = 1.25;
  bool mba = false;  // per-service memory-bandwidth caps (MBA) available

  uint32_t ThreadsPerCore() const { return logical_cores / physical_cores; }
  double CacheMb() const { return ways * mb_per_way; }
  // Speed lost by a thread whose sibling hyperthread is busy: 1 - smt_gain / 2.
  double SmtLoss() const { return ThreadsPerCore() == 2 ? 1.0 - smt_gain / 2.0 : 0.0; }

  // Throws std::invalid_argument naming `field`.<member> on a bad value.
  void Validate(const std::string& field) const;
};

}  // namespace dcgym::colo
