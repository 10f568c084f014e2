// Configuration of a colo simulation, as the engine receives it (the binding
// parses a plain dict into this and the engine validates it again).
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/colo/platform.hpp"
#include "dcgym/colo/service.hpp"

namespace dcgym::colo {

enum class Mode {
  kOnline,  // a backlog left by a bad allocation stays until capacity drains it (OSML §6)
  kFresh,   // every allocation change starts every queue empty (CLITE restarts the services)
};

enum class OnLaunch {
  kNone,  // a service launches with what its workload entry requests (else nothing)
  kIdle,  // a service launches with every idle core and way (OSML's unmanaged launch)
};

struct NoiseConfig {
  // Scale of the latency counter's sampling error: 1 = the standard error of
  // a quantile estimated from the window's requests (see ColoSim).
  double latency = 1.0;
  // Relative (lognormal) error of CPU_Utilization, IPC, Misses and MBL.
  double counters = 0.02;
};

struct ColoConfig {
  Platform platform;
  std::vector<ServiceConfig> services;
  double dt_s = 0.1;  // one tick (OSML's perf sampling interval)
  uint64_t seed = 0;
  Mode mode = Mode::kOnline;
  OnLaunch on_launch = OnLaunch::kNone;
  bool sharing = false;  // share groups allowed (OSML Algo. 4, Unmanaged)
  NoiseConfig noise;
  double latency_window_s = 1.0;  // the latency counter covers this much (tailbench: the last second)
  double latency_cap_s = 3600;    // latencies are reported at most this (a starved service)

  // Bounds, checked by Validate() and exported by the binding (ColoSim.limits).
  static constexpr uint32_t kMaxServices = 64;  // share-group members are a 64-bit mask
  static constexpr uint32_t kMaxGroups = 8;
  static constexpr double kMaxTickS = 60;         // dt_s
  static constexpr double kMaxWindowTicks = 1e5;  // latency_window_s / dt_s: the window's ring
  static constexpr double kMaxCounterNoise = 1;   // noise.counters, a relative error

  // Throws std::invalid_argument naming the field; also derives nothing.
  void Validate() const;
};

}  // namespace dcgym::colo
