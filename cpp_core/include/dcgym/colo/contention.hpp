// The resources services contend for beyond their partitions, solved as one
// fixed point per tick:
//   - hyperthreads: a thread runs at 1 - SmtLoss() x P(sibling busy), and
//     at 1 - SmtLoss() x (1 + smt_penalty) x P(busy) when the sibling is
//     another service's (PARTIES Table 4: most services tolerate no
//     hyperthread antagonist);
//   - share-group pools: members split a pool max-min fairly by demand, each
//     may use what the others leave;
//   - memory bandwidth: every miss waits the loaded latency
//     L(u) = L0 (1 + u / (2 (1 - u))) (an M/D/1 queue at the controller),
//     u = total traffic / peak, and traffic falls when latency rises; MBA
//     caps a service's traffic (roofline: Williams et al., CACM 2009).
// The bandwidth fixed point is solved to 1e-12 by the Illinois method; the
// hyperthread and pool couplings by iteration from the last solution.
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/colo/allocation.hpp"
#include "dcgym/colo/platform.hpp"
#include "dcgym/colo/service.hpp"

namespace dcgym::colo {

// What one service brings to a solve.
struct Demand {
  bool active = false;
  double lambda = 0;       // offered requests/s
  bool saturated = false;  // a backlog waits: every server stays busy
  double cache_mb = 0;     // LLC capacity it holds warm, MB
  double slowdown = 1;     // context switches x warm-up
};

// Where one service operates.
struct Operating {
  uint32_t servers = 0;  // threads that serve requests concurrently
  double mpki = 0;
  double t_cpu = 0;        // CPU time per request of one server, s
  double t_service = 0;    // t_cpu + io: mean service time of one server, s
  double capacity = 0;     // servers / t_service, requests/s
  double throughput = 0;   // requests/s served
  double utilization = 0;  // throughput / capacity
  double cpu_busy = 0;     // fraction of its servers on a core (a sibling sees this)
  double bytes_per_req = 0;
};

struct ContentionInput {
  const Platform* platform;
  const std::vector<ServiceParams>* params;
  const std::vector<ServiceModel>* models;
  const std::vector<Allocation>* alloc;
  const std::vector<ShareGroup>* groups;
  const Layout* layout;
  const std::vector<Demand>* demand;
};

class Contention {
 public:
  // Solves for every active service; `out` (one per service) holds the
  // previous solution on entry and is the starting point.
  void Solve(const ContentionInput& in, std::vector<Operating>* out);
  double mem_latency_s() const { return mem_latency_s_; }
  double mem_utilization() const { return mem_utilization_; }
  // Clears the warm start (steady states start from nothing).
  void Reset() {
    mem_latency_s_ = 0;
    group_use_.clear();
  }

 private:
  struct Speeds {  // sum over a service's servers of their speeds: a - b x (own cpu_busy)
    double a = 0, b = 0;
  };
  void ComputeSpeeds(const ContentionInput& in, const std::vector<Operating>& out);
  void ShareGroups(const ContentionInput& in, const std::vector<Operating>& out);
  // Evaluates service i at memory latency `latency_s` into `op`; returns its traffic, bytes/s.
  double Evaluate(const ContentionInput& in, uint32_t i, double latency_s, Operating* op) const;
  double Traffic(const ContentionInput& in, double latency_s, std::vector<Operating>* out) const;
  double SolveLatency(const ContentionInput& in, std::vector<Operating>* out);

  std::vector<Speeds> speeds_;
  std::vector<double> group_use_;    // pool busy fraction per group
  std::vector<double> group_avail_;  // per service: pool cores the others leave it
  std::vector<double> group_speed_;  // per service: speed of its threads in the pool
  double mem_latency_s_ = 0;
  double mem_utilization_ = 0;
};

// The loaded memory latency at utilization u (infinite at u >= 1).
double LoadedLatency(double unloaded_s, double u);

}  // namespace dcgym::colo
