// A latency-critical service: how its requests use a core, the LLC and
// memory, and the workload it receives over time.
//
// Time per request on one hyperthread (research note §4: a first-order
// superscalar model, Karkhanis & Smith ISCA 2004):
//
//   t = I x (cpi_core / f + mpki(C) / 1000 x L(u) / mlp) x slowdowns + io
//
// Only the core part scales with the frequency f; a miss costs the loaded
// memory latency L(u) divided by the memory-level parallelism. I and
// cpi_core are derived from the two calibration facts service_ms and ipc,
// both measured at a reference point: one thread alone on a physical core at
// ref_freq_mhz, holding ref_cache_mb of LLC, misses served in
// ref_mem_latency_ns (ServiceModel::Derive). They are the service's own, so
// the same service runs slower on a platform with a smaller LLC.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dcgym/colo/platform.hpp"

namespace dcgym::colo {

// LLC misses per thousand instructions as a function of the cache capacity C
// the service holds (MB): a floor no cache removes, a power law (Hartstein et
// al. CF 2006, the "sqrt 2 rule" at alpha = 0.5) and a working-set cliff:
// `hot` more MPKI once C drops below hot_mb, ramping in over hot_width_mb
// (LRU over a loop just larger than the cache; Beckmann & Sanchez, Talus,
// HPCA 2015). The cliff gives Moses its cache cliff (OSML §3.1, Fig. 1a).
inline constexpr uint32_t kMaxThreads = 4096;  // worker threads of one service (Workload::Validate)

// The fields of a service entry by name, in the order of the config schema: its parameters
// (ServiceParams), its miss-rate curve's and its workload's. The binding reads these, and the colo catalog
// (envs/colo/catalog.py) takes its list of per-service entries from here (ColoSim.service_fields).
inline constexpr const char* kServiceFields[] = {"name",
                                                 "qos_ms",
                                                 "percentile",
                                                 "service_ms",
                                                 "cv2",
                                                 "ipc",
                                                 "ref_freq_mhz",
                                                 "ref_cache_mb",
                                                 "ref_mem_latency_ns",
                                                 "mlp",
                                                 "bytes_per_miss",
                                                 "mrc",
                                                 "io_ms",
                                                 "smt_penalty",
                                                 "ctx_overhead",
                                                 "warmup_s",
                                                 "warmup_slowdown",
                                                 "virt_memory_gb",
                                                 "res_memory_gb"};
inline constexpr const char* kMissRateFields[] = {"floor", "pow", "alpha", "hot", "hot_mb", "hot_width_mb"};
inline constexpr const char* kWorkloadFields[] = {"rps", "threads", "launch_s", "end_s", "changes", "cores", "ways"};

struct MissRateCurve {
  double floor = 0;         // MPKI at any capacity
  double pow = 0;           // MPKI of the power-law term at 1 MB
  double alpha = 0.5;       // power-law exponent
  double hot = 0;           // extra MPKI below the hot working set
  double hot_mb = 0;        // size of the hot working set, MB
  double hot_width_mb = 1;  // width of the ramp below hot_mb, MB

  double Mpki(double mb) const;
  void Validate(const std::string& field) const;
};

struct ServiceParams {
  std::string name = "service";
  double qos_ms = 10;        // latency target (the controllers' business; reported only)
  double percentile = 0.99;  // the latency counter is this quantile (CLITE: 0.95)
  double service_ms = 1;     // mean CPU time per request at the reference point
  double cv2 = 1;            // squared coefficient of variation of the service time
  double ipc = 1;            // instructions per cycle at the reference point
  // The reference point of service_ms and ipc; 0 = the platform's maximum
  // frequency, whole LLC and unloaded memory latency.
  double ref_freq_mhz = 0;
  double ref_cache_mb = 0;
  double ref_mem_latency_ns = 0;
  double mlp = 2;              // memory-level parallelism: misses overlapped
  double bytes_per_miss = 64;  // memory traffic per LLC miss (line + writebacks, prefetch)
  MissRateCurve mrc;
  double io_ms = 0;            // time per request blocked off-core (holds a thread, not a core)
  double smt_penalty = 0;      // extra slowdown factor when a sibling hyperthread runs another service
  double ctx_overhead = 0.03;  // slowdown per extra thread per core when threads > cores (OSML §3.2)
  double warmup_s = 0;         // after launch: service times inflated, fading linearly
  double warmup_slowdown = 0;  // inflation at launch (0.5: 50% longer); none is published
  double virt_memory_gb = 0;   // reported as Virt_Memory (bytes)
  double res_memory_gb = 0;    // reported as Res_Memory (bytes)

  void Validate(const std::string& field) const;
};

// One entry of OSML's workload file (`name RPS value [threads] [launch_s]
// [end_s]`, `CHANGE_RPS name RPS value time_s`), with rates in RPS.
struct Workload {
  double rps = 0;
  uint32_t threads = 0;  // 0: the platform's logical cores (OSML's MAX_THREADS)
  double launch_s = 0;
  double end_s = std::numeric_limits<double>::infinity();
  std::vector<std::pair<double, double>> changes;  // (time_s, rps), time order
  // Allocation requested at launch, granted from what is idle then (-1: none
  // requested, the config's on_launch rule applies).
  int64_t cores = -1;
  int64_t ways = -1;

  void Validate(const std::string& field) const;
};

struct ServiceConfig {
  ServiceParams params;
  Workload workload;
};

// What the tick needs of a service on a given platform.
struct ServiceModel {
  double instructions = 0;  // per request
  double cpi_core = 0;      // cycles per instruction of the frequency-scaled part
  double io_s = 0;
  uint32_t threads = 1;

  // Throws std::invalid_argument naming `field`.ipc when the reference IPC
  // leaves less than kMinCpiCore cycles per instruction for the core part.
  static ServiceModel Derive(const ServiceParams& p, uint32_t threads, const Platform& platform,
                             const std::string& field);
  static constexpr double kMinCpiCore = 0.2;  // a 5-wide core at best
};

}  // namespace dcgym::colo
