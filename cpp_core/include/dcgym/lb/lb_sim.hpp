// The multi-stage server model of the multi-LB paper (Yao et al., CIKM 2022), the lb
// family's engine: M load balancers, each receiving its own share of open-loop
// Poisson traffic and dispatching it with its own policy over N servers whose
// jobs alternate CPU and IO stages (App. C.1, Fig. 5).
//
// A flow's life, as in the authors' simulator: it arrives at its LB (time
// t0), which picks a server; it reaches the server one network hop later; a
// server holding more than `backlog` jobs rejects it, and the client sees the
// flow end `timeout_us` after the reset reaches it (App. C.1: backlog 64, 40 s
// timeout); otherwise it runs its stages and its response reaches the client
// one hop after the last stage. FCT = client receive time - t0 (+ timeout for
// a rejected flow); it is recorded when the client receives the response or
// the reset, so nothing is scheduled 40 s ahead. The LB learns that a flow
// ended one more hop later (the client's notification), when it decrements
// its local count and samples the flow's completion time. Hops are uniform in
// [hop_min_us, hop_max_us] (0.1-1 ms in the paper; 0 allowed).
//
// Time is in microseconds. Memory is proportional to the flows in flight:
// flow records live in a slab with a free list from arrival until their LB
// is notified; FCTs go to fixed-size histograms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcgym/kernel/distribution.hpp"
#include "dcgym/kernel/heap.hpp"
#include "dcgym/kernel/histogram.hpp"
#include "dcgym/kernel/rng.hpp"
#include "dcgym/lb/multistage_server.hpp"
#include "dcgym/lb/reservoir.hpp"

namespace dcgym::lb {

// The bounds of an lb config, checked by LbConfig::Validate() and exported by the binding (LbSim.limits),
// whose values the scenario schema's fields take as their bounds.
inline constexpr uint32_t kMaxServers = 1u << 16;  // servers, every group together
inline constexpr uint32_t kMaxWorkers = 4096;      // CPU workers of one server
inline constexpr uint32_t kMaxMpLevel = 4096;      // jobs in CPU service per worker
inline constexpr uint32_t kMaxStages = 64;         // stages of a flow
inline constexpr uint32_t kMaxLbs = 1024;          // load balancers
inline constexpr uint32_t kMaxBacklog = 1000000;   // jobs a server holds before rejecting
inline constexpr uint32_t kMaxReservoir = 1024;    // samples per server and decision period
inline constexpr uint32_t kMaxFdDensity = 64;      // flow-duration samples per tracked flow per arrival
inline constexpr uint64_t kMaxReservoirSamples = uint64_t{1} << 27;  // lbs x servers x reservoir_size

struct ServerGroup {
  uint32_t count = 1;
  uint32_t workers = 1;   // p: CPU worker threads
  double speed = 1.0;     // CPU work per microsecond per worker (IO is unaffected)
  uint32_t mp_level = 1;  // at most workers x mp_level jobs in CPU service
};

// The application: `stages` stages alternating CPU, IO, CPU, ... A flow's
// total CPU time is drawn from `cpu` and its total IO time from `io`, each
// then split over that resource's stages (the authors' simulator,
// Application.get_query): `uniform` cuts successive pieces uniformly from
// what is left, `equal` gives each stage the same share.
struct Application {
  enum class Split { kUniform, kEqual };
  uint32_t stages = 1;
  kernel::Distribution cpu = kernel::Distribution::Exp(1.0);
  kernel::Distribution io = kernel::Distribution::Exp(1.0);  // unused with one stage
  Split split = Split::kUniform;

  uint32_t CpuStages() const { return (stages + 1) / 2; }
  uint32_t IoStages() const { return stages / 2; }
};

// Dispatch policies (App. C.3). Local counts are the LB's own flows in
// progress per server, as it tracks them; it never sees other LBs' flows.
enum class LbPolicy {
  kEcmp,     // uniform over servers
  kWcmp,     // probability proportional to the LB's weights
  kLsq,      // least local count, ties at random
  kSed,      // least (local count + 1) / weight, ties at random
  kOracle,   // least expected time to finish all work, the new flow included
  kWeights,  // like wcmp, weights set from outside (the RL agent's action)
};

struct BalancerConfig {
  LbPolicy policy = LbPolicy::kEcmp;
  // One weight per server; empty = workers x speed (uniform for kWeights).
  std::vector<double> weights;
  double share = 1.0;  // relative share of the arrivals (normalized over LBs)
};

// How `load` sets the arrival rate: lambda = load x sum(workers x speed) / D.
enum class LoadBasis {
  kTotal,  // D = E[CPU] + E[IO]: the authors' simulator (run.py); CPU utilization for 1 stage
  kCpu,    // D = E[CPU]: the exact CPU utilization whatever the stages
};

enum class WaitOrder {
  kFifo,     // the CPU backlog is FIFO by entry (App. C.1)
  kArrival,  // by server arrival time, as the authors' simulator orders it
};

struct ObservationConfig {
  uint32_t reservoir_size = 32;     // App. C.2.4 (RESERVOIR_BUFFER_SIZE)
  uint32_t fd_density = 2;          // max flow-duration samples per tracked flow per LB arrival; 0 = off
  double fd_min_us = 1e4;           // flow-duration samples at or below this are dropped (the code's 10 ms)
  double decay_half_life_us = 1e6;  // freshness weight 2^(-age / half life): the code's base 0.5 per second
};

// From `at_us` on, every server of group `group` runs its CPU workers at
// `speed` (App. E.2.3: extra CPU-bound work on one server group from 25 s).
// The policies' static weights (workers x speed) keep the initial speed.
struct CapacityChange {
  double at_us = 0;
  uint32_t group = 0;
  double speed = 1.0;
};

struct LbConfig {
  std::vector<ServerGroup> groups;
  std::vector<CapacityChange> capacity_changes;
  Application app;
  std::vector<BalancerConfig> lbs;
  double load = 0.5;
  LoadBasis load_basis = LoadBasis::kTotal;
  uint64_t seed = 1;
  uint32_t backlog = 64;    // a server holding more jobs rejects an arriving flow
  double timeout_us = 4e7;  // added to a rejected flow's FCT
  double hop_min_us = 100, hop_max_us = 1000;
  double decision_period_us = 5e5;  // reservoirs hold one period each
  WaitOrder wait_order = WaitOrder::kFifo;
  ObservationConfig observation;
  uint64_t warmup_flows = 0;   // first arrivals excluded from FCT statistics
  uint64_t measure_flows = 0;  // then this many arrivals are measured (0: every later one)
  bool record_flows = false;   // keep each measured flow's arrival time, CPU work and IO work (FlowRecords)

  uint32_t NumServers() const;
  double Capacity() const;     // sum of workers x speed
  double ArrivalRate() const;  // flows per microsecond
  // Throws std::invalid_argument naming the first bad field.
  void Validate() const;
};

struct Counters {
  uint64_t arrived = 0;
  uint64_t completed = 0;  // served and received by the client
  uint64_t rejected = 0;   // rejected by a full server (FCT includes the timeout)
  uint64_t warmup = 0;
  uint64_t events = 0;
};

struct ServerCounters {
  uint64_t dispatched = 0, completed = 0, rejected = 0;
};

// Names of the k features of observations(), in order.
inline const char* const kObservationFeatures[] = {
    "flows_in_progress", "dispatched", "fd_count",    "fd_mean_us", "fd_p90_us",  "fd_std_us",
    "fd_decayed_us",     "fct_count",  "fct_mean_us", "fct_p90_us", "fct_std_us", "fct_decayed_us"};
constexpr uint32_t kNumObservationFeatures = 12;

class LbSim {
 public:
  explicit LbSim(const LbConfig& config);

  // Processes events until n more flows have arrived (the event that would
  // bring the n+1-th is left pending).
  void RunFlows(uint64_t n);
  // Processes events until n more flows have ended (completed or rejected).
  void RunCompletions(uint64_t n);
  // Processes every event at or before t_us; the clock ends at t_us.
  void RunUntil(double t_us);

  // Replaces LB `lb`'s weights (policies wcmp, sed, weights).
  void SetWeights(uint32_t lb, const std::vector<double>& w);
  // Load balancer lb's current weights; std::invalid_argument when there is no lb.
  const std::vector<double>& Weights(uint32_t lb) const;

  // M x N x kNumObservationFeatures, row-major: each LB's view of each server
  // over the current decision period (the one that just ended when the clock
  // sits on a period boundary).
  void Observe(double* out) const;

  double Now() const { return now_; }
  double ArrivalRate() const { return rate_; }
  uint32_t NumServers() const { return static_cast<uint32_t>(servers_.size()); }
  uint32_t NumLbs() const { return static_cast<uint32_t>(lbs_.size()); }
  const LbConfig& Config() const { return config_; }
  const Counters& Count() const { return counters_; }
  const std::vector<ServerCounters>& ServerStats() const { return server_counters_; }
  const Server& ServerAt(uint32_t j) const { return servers_[j]; }
  double DrainTime(uint32_t j) const;
  const kernel::LogHistogram& Fct() const { return fct_; }               // every measured flow
  const kernel::LogHistogram& FctServed() const { return fct_served_; }  // rejected flows excluded
  // Flows not yet ended, counted by walking the servers and the network.
  uint64_t InFlight() const;
  // Measured arrivals (past the warm-up, within measure_flows) whose client has not received them yet: a run is
  // drained when this is 0, and then its statistics cover exactly the measured flows.
  uint64_t MeasuredPending() const {
    const uint64_t warm = config_.warmup_flows, window = config_.measure_flows;
    uint64_t arrived = counters_.arrived > warm ? counters_.arrived - warm : 0;
    if (window > 0 && arrived > window) arrived = window;
    return arrived - measured_done_;
  }
  // With record_flows, per measured flow in arrival order: arrival time (us), CPU work (us at speed 1), IO work (us).
  struct FlowRecords {
    std::vector<double> arrival_us, cpu_us, io_us;
  };
  const FlowRecords& Records() const { return records_; }

 private:
  struct Flow {
    double t0;        // arrival at the LB
    double t_server;  // arrival at the server
    uint32_t lb, server, stage;
    uint32_t lb_pos;  // index in the LB's list of tracked flows
    bool warmup;
  };
  struct Tracked {  // what flow-duration sampling reads, kept together for the cache
    double t0;
    uint32_t server, slot;
  };
  struct Lb {
    LbPolicy policy;
    std::vector<double> weights, cumulative;
    std::vector<uint32_t> count;       // own flows in progress per server
    std::vector<uint32_t> dispatched;  // per server, in the current period
    std::vector<int64_t> dispatched_period;
    std::vector<Tracked> tracked;  // own flows in progress, densely (swap-remove)
    double last_arrival = 0;
    kernel::Rng rng, obs_rng;
  };
  enum EventKind : uint32_t { kReachServer, kClientReceive, kLbNotify, kCapacityChange };
  struct Event {
    EventKind kind;
    uint32_t slot;
  };

  void OnArrival();
  void OnServerEvent(uint32_t j);
  void OnEvent(const Event& e);
  void ReachServer(uint32_t slot);
  void EnterStage(uint32_t slot);
  void Finish(uint32_t slot, bool rejected);
  void ClientReceive(uint32_t slot);
  void LbNotify(uint32_t slot);
  void ChangeCapacity(uint32_t change);
  void After(double delay, EventKind kind, uint32_t slot);
  void Refresh(uint32_t j);
  uint32_t Pick(Lb& lb, uint32_t slot);
  void SampleFlowDurations(Lb& lb);
  void BuildCumulative(Lb& lb);
  double Hop();
  int64_t PeriodOf(double t) const;
  double* Works(uint32_t slot) { return &works_[size_t{slot} * config_.app.stages]; }
  uint32_t NewSlot();
  template <typename Stop>
  void Run(Stop stop);

  LbConfig config_;
  std::vector<Server> servers_;
  std::vector<uint32_t> group_start_;           // index of each group's first server
  std::vector<double> future_cpu_, future_io_;  // work of stages not yet started, per server
  std::vector<uint32_t> committed_;             // flows dispatched to a server and not ended
  kernel::IndexedMinHeap server_events_;
  kernel::EventQueue<Event> queue_;
  std::vector<Lb> lbs_;
  std::vector<double> lb_cumulative_;  // arrival shares
  ReservoirBank fd_, fct_samples_;

  std::vector<Flow> flows_;
  std::vector<double> works_;  // stages doubles per slot
  std::vector<uint32_t> free_;
  uint64_t in_transit_ = 0;  // flows on their way to a server
  uint64_t returning_ = 0;   // responses (or resets) on their way to the client

  kernel::Rng arrival_rng_, split_rng_, service_rng_, network_rng_;
  double rate_, next_arrival_, now_ = 0;
  double hop_min_, hop_span_;

  Counters counters_;
  uint64_t measured_done_ = 0;  // measured flows received by their client
  FlowRecords records_;
  std::vector<ServerCounters> server_counters_;
  kernel::LogHistogram fct_, fct_served_;
};

}  // namespace dcgym::lb
