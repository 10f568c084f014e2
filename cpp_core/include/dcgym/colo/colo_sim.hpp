// One server shared by latency-critical services, advanced in ticks of
// dt_s seconds with no per-request events (docs/colo.md).
//
// Per tick, for every service that is running:
//  1. its effective cache is the LLC it holds warm: ways added since the last
//     tick fill at its miss rate (Ubik, Kasture & Sanchez ASPLOS 2014), ways
//     taken away are lost at once; shared ways are split in proportion to
//     the members' miss rates;
//  2. Contention solves hyperthreads, share pools and memory bandwidth
//     jointly: service time, capacity K and throughput;
//  3. latency: the stationary quantile of an M/G/c queue (queueing.hpp) while
//     the offered load is below capacity (its utilization capped at
//     kStationaryRhoMax), plus the wait behind a fluid backlog B that grows
//     at lambda - K above capacity and drains at K - lambda below it
//     (OSML §6.2: "requests accumulate");
//  4. counters under OSML's names (counters.hpp); the latency counter is
//     the mean of the tick quantiles over the latency window, times a
//     lognormal error whose sigma is the standard error of a quantile
//     estimated from the window's requests:
//       sigma = noise.latency x sqrt(q / ((1 - q) n)) / ln(1 / (1 - q))
//     (an exponential tail's quantile estimator; n = requests in the window).
// Services launch, end and change load at the times of their workload
// entries (OSML's workload file), processed at tick boundaries.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/colo/allocation.hpp"
#include "dcgym/colo/config.hpp"
#include "dcgym/colo/contention.hpp"
#include "dcgym/colo/counters.hpp"
#include "dcgym/colo/queueing.hpp"
#include "dcgym/kernel/rng.hpp"

namespace dcgym::colo {

enum class Phase : uint8_t { kPending = 0, kWarming = 1, kRunning = 2, kEnded = 3 };

class ColoSim {
 public:
  static constexpr double kStationaryRhoMax = 0.98;
  static constexpr double kLineBytes = 64;  // an LLC fill
  static constexpr int kNoiseDraws = 5;     // latency, CPU utilization, IPC, misses, bandwidth

  explicit ColoSim(ColoConfig config);

  // Back to time 0 with the config's workload, every stream reseeded.
  void Reset(uint64_t seed);

  // Sets service i's private cores and ways, MBA cap and frequency (group
  // membership is SetGroup's). Throws std::invalid_argument, changing
  // nothing, when the service is not launched or ended, a value is out of
  // range, or the platform's cores or ways would be exceeded.
  void SetAllocation(uint32_t service, const Allocation& a);
  // All services at once (conservation checked on the whole); services not
  // running must get zero cores and ways.
  void SetAllocations(const std::vector<Allocation>& all);
  // Share group g: its pool of cores and ways and its members (bit i =
  // service i; 0 dissolves it). Needs sharing enabled.
  void SetGroup(uint32_t group, uint64_t members, uint32_t cores, uint32_t ways);
  // The same with the members as service indices (an empty list dissolves it).
  void SetGroup(uint32_t group, const std::vector<uint32_t>& members, uint32_t cores, uint32_t ways);
  // Offered load of service i from now on (until its next scheduled change).
  void SetRps(uint32_t service, double rps);

  void Step(uint64_t ticks = 1);

  // The stationary latency quantile (s) of every service for allocation
  // `alloc` and offered loads `rps`: no backlog, warm caches, no noise, the
  // current share groups; +infinity when a service's load reaches its
  // capacity, NaN where rps <= 0 (absent). Does not change the simulation.
  std::vector<double> SteadyState(const std::vector<Allocation>& alloc, const std::vector<double>& rps);

  // Row-major [NumServices() x kNumCounters], updated in place by Step.
  const double* Counters() const { return counters_.data(); }
  uint32_t NumServices() const { return static_cast<uint32_t>(config_.services.size()); }
  const ColoConfig& Config() const { return config_; }
  const std::vector<Allocation>& Allocations() const { return alloc_; }
  // Service i's allocation; std::invalid_argument when there is no service i.
  const Allocation& AllocationOf(uint32_t service) const;
  const std::vector<ShareGroup>& Groups() const { return groups_; }
  Phase PhaseOf(uint32_t i) const { return state_[i].phase; }
  bool Active(uint32_t i) const { return active_[i] != 0; }
  double Now() const { return static_cast<double>(ticks_) * config_.dt_s; }
  uint64_t Ticks() const { return ticks_; }
  uint32_t IdleCores() const;
  uint32_t IdleWays() const;
  double MemLatencyNs() const { return contention_.mem_latency_s() * 1e9; }
  double MemUtilization() const { return contention_.mem_utilization(); }
  const std::vector<Operating>& Operation() const { return ops_; }

 private:
  struct State {
    Phase phase = Phase::kPending;
    double rps = 0;
    size_t next_change = 0;
    double launched_at = 0;
    double backlog = 0;    // requests
    double warm_mb = 0;    // LLC holding its data
    double share_mb = 0;   // its part of its group's ways
    double miss_rate = 0;  // misses/s, for the shared-ways split
    // Latency window: a ring of tick quantiles (s).
    std::vector<double> window;
    size_t window_next = 0, window_count = 0;
    double window_sum = 0;
    // Stationary quantile of the last inputs (most ticks repeat them).
    uint32_t cache_servers = 0;
    double cache_lambda = -1, cache_t = -1, cache_value = 0;
  };

  void ProcessEvents();
  void Launch(uint32_t i);
  void End(uint32_t i);
  void AllocationChanged();
  double Slowdown(uint32_t i) const;
  void CheckAllocation(uint32_t i, const Allocation& a) const;
  double CapacityMb(uint32_t i) const;
  void UpdateShares();
  void Tick();
  double TickQuantile(uint32_t i, const Operating& op, double b0, double b1);
  // z: kNoiseDraws standard normals when the service ran this tick; nullptr
  // writes only its allocation and state.
  void WriteCounters(uint32_t i, const Operating& op, double tick_quantile, const double* z);
  // The allocation and state columns (Frequency, Allocated_*, MBA, RPS, State).
  void WriteAllocation(uint32_t i);
  // `count` standard normals into z.
  static void Normals(kernel::Rng& rng, double* z, int count);
  void ClearWindow(State& s);

  ColoConfig config_;
  std::vector<ServiceModel> models_;
  std::vector<ServiceParams> params_;
  std::vector<ServiceShape> shapes_;  // unit-mean shape of each service's time
  std::vector<Allocation> alloc_;
  std::vector<ShareGroup> groups_;
  std::vector<uint8_t> active_;
  std::vector<State> state_;
  std::vector<kernel::Rng> rng_;
  Layout layout_;
  bool layout_dirty_ = true;
  bool solve_dirty_ = true;
  Contention contention_;
  std::vector<Demand> demand_, last_demand_;
  std::vector<Operating> ops_;
  std::vector<double> counters_;
  uint64_t ticks_ = 0;
  size_t window_ticks_ = 1;
  // Scratch of SteadyState.
  Contention steady_contention_;
  std::vector<Demand> steady_demand_;
  std::vector<Operating> steady_ops_;
};

// Advances every simulation by `ticks` (a vector env's step).
void StepBatch(const std::vector<ColoSim*>& sims, uint64_t ticks);

}  // namespace dcgym::colo
