// Per-service counters, named and scaled as OSML's data set and monitor
// record them (Sys-Inventor-Lab/AI4System-OSML configs.py COLLECT_FEATURES,
// program_mgr.py: top, pqos, /proc/cpuinfo, the tailbench latency file),
// then the model's own quantities.
#pragma once

#include <cstdint>

namespace dcgym::colo {

enum Counter : uint32_t {
  kCpuUtilization,  // % of one logical core (0 .. 100 x cores), like top
  kFrequency,       // MHz
  kIpc,             // instructions per cycle of its busy threads
  kMisses,          // LLC misses, thousands per second
  kMbl,             // local memory bandwidth, MB/s (1e6 bytes), like pqos
  kVirtMemory,      // bytes
  kResMemory,       // bytes
  kAllocatedCache,  // MB of LLC ways held (private + share group)
  kAllocatedCore,   // logical cores held (private + share group)
  kLatency,         // measured latency quantile over the window, ms (noisy)
  kRps,             // offered load, requests/s
  kThroughput,      // requests/s served this tick
  kCapacity,        // requests/s the allocation can serve
  kUtilization,     // throughput / capacity
  kBacklog,         // requests queued beyond the stationary queue
  kP99,             // this tick's latency quantile, ms, without window or noise
  kWarmCache,       // MB of LLC holding its data (warms after ways are added)
  kMba,             // bandwidth cap, fraction of peak
  kState,           // 0 pending, 1 warming up, 2 running, 3 ended
  kNumCounters
};

inline constexpr const char* kCounterNames[kNumCounters] = {
    "CPU_Utilization", "Frequency",      "IPC",        "Misses", "MBL",        "Virt_Memory", "Res_Memory",
    "Allocated_Cache", "Allocated_Core", "Latency",    "RPS",    "Throughput", "Capacity",    "Utilization",
    "Backlog",         "P99_ms",         "Warm_Cache", "MBA",    "State"};

}  // namespace dcgym::colo
