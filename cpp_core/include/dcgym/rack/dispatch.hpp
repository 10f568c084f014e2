// Dispatch policies: which node a dispatcher (switch, load balancer or node
// load manager) sends a task to, given the loads it believes.
//
// random       uniform over active nodes (also ECMP: per-task hashing is uniform)
// round_robin  cyclic over active nodes, one pointer per dispatcher
// po_d         sample d nodes (with or without replacement), send to the least
//              loaded; ties go to the first sampled (RackSched's rule)
// jsq          least loaded node; ties broken uniformly at random
// jbt          uniformly among nodes with load below `threshold`; if none,
//              any node at random (Malcolm §7.1)
// sed          least (load + 1) / rate, rate = workers x speed or workers
// wcmp         sampled in proportion to static weights
// lsq          jsq on the dispatcher's own counts of tasks it sent and has
//              not heard back about (multi-LB paper)
// oracle       least (remaining work + size) / capacity: the node that would
//              finish all its work, this task included, soonest
// jbsq, central_fcfs and table need a queue at the dispatcher or tables set
// from outside; the rack simulator handles them (rack_sim.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "dcgym/kernel/rng.hpp"
#include "dcgym/rack/config.hpp"

namespace dcgym::rack {

class Dispatcher {
 public:
  static constexpr uint32_t kMaxD = 64;

  Dispatcher(const DispatchConfig& config, std::vector<double> rates, uint32_t num_viewers, kernel::Rng rng)
      : config_(config), rates_(std::move(rates)), rr_next_(num_viewers, 0), rng_(rng) {}

  const DispatchConfig& Config() const { return config_; }
  // Whether Pick() reads the believed loads.
  bool ReadsLoads() const {
    switch (config_.kind) {
      case DispatchKind::kPowerOfD:
      case DispatchKind::kJsq:
      case DispatchKind::kJbt:
      case DispatchKind::kSed: return true;
      default: return false;
    }
  }

  // Call whenever the candidate lists change (also once at the start): one
  // list of active nodes per task type.
  void OnCandidatesChanged(const std::vector<std::vector<uint32_t>>& lists) {
    if (config_.kind != DispatchKind::kWcmp) return;
    weight_cum_.assign(lists.size(), {});
    for (size_t k = 0; k < lists.size(); ++k) {
      double c = 0;
      for (uint32_t j : lists[k]) weight_cum_[k].push_back(c += config_.weights[j]);
      if (!(c > 0)) weight_cum_[k].clear();  // every weighted node removed: fall back to uniform
    }
  }
  // A node's service rate changed (dynamics): sed and oracle see the new capacity.
  void SetRate(uint32_t node, double workers, double speed) {
    rates_[node] = config_.sed_by_speed ? workers * speed : workers;
  }

  // Chooses among `active` (non-empty: the active nodes that may run a task of
  // type `type`) for dispatcher v; load(j) is what v believes of node j (for
  // lsq its own counts, for oracle the remaining work).
  template <typename Load>
  uint32_t Pick(uint32_t v, uint32_t type, const std::vector<uint32_t>& active, const Load& load, double size) {
    const uint32_t m = static_cast<uint32_t>(active.size());
    switch (config_.kind) {
      case DispatchKind::kRoundRobin: {
        uint32_t& next = rr_next_[v];
        if (next >= m) next = 0;
        return active[next++];
      }
      case DispatchKind::kPowerOfD:
        return config_.replace ? PowerOfDWithReplacement(active, load) : PowerOfDWithoutReplacement(active, load);
      case DispatchKind::kJsq:
      case DispatchKind::kLsq: return Least(active, [&](uint32_t j) { return load(j); });
      case DispatchKind::kSed: return Least(active, [&](uint32_t j) { return (load(j) + 1) / rates_[j]; });
      case DispatchKind::kOracle: return Least(active, [&](uint32_t j) { return (load(j) + size) / rates_[j]; });
      case DispatchKind::kJbt: {
        uint32_t chosen = 0, below = 0;
        for (uint32_t j : active)
          if (load(j) < config_.threshold && rng_.Below(++below) == 0) chosen = j;
        return below ? chosen : active[rng_.Below(m)];
      }
      case DispatchKind::kWcmp: {
        const std::vector<double>& cum = weight_cum_[type];
        if (cum.empty()) return active[rng_.Below(m)];
        const double u = rng_.Uniform() * cum.back();
        uint32_t lo = 0, hi = m - 1;
        while (lo < hi) {
          const uint32_t mid = (lo + hi) / 2;
          if (cum[mid] <= u)
            lo = mid + 1;
          else
            hi = mid;
        }
        return active[lo];
      }
      default: return m == 1 ? active[0] : active[rng_.Below(m)];
    }
  }

 private:
  template <typename Load>
  uint32_t PowerOfDWithReplacement(const std::vector<uint32_t>& active, const Load& load) {
    const uint32_t m = static_cast<uint32_t>(active.size());
    uint32_t best = active[rng_.Below(m)];
    double best_load = load(best);
    for (uint32_t k = 1; k < config_.d; ++k) {
      const uint32_t c = active[rng_.Below(m)];
      const double l = load(c);
      if (l < best_load) {
        best = c;
        best_load = l;
      }
    }
    return best;
  }

  template <typename Load>
  uint32_t PowerOfDWithoutReplacement(const std::vector<uint32_t>& active, const Load& load) {
    const uint32_t m = static_cast<uint32_t>(active.size());
    const uint32_t d = config_.d < m ? config_.d : m;
    uint32_t drawn[kMaxD];
    uint32_t best = 0;
    double best_load = 0;
    for (uint32_t k = 0; k < d; ++k) {
      uint32_t c;
      bool seen;
      do {  // d is small: draw, rejecting positions already drawn
        c = rng_.Below(m);
        seen = false;
        for (uint32_t i = 0; i < k; ++i) seen |= drawn[i] == c;
      } while (seen);
      drawn[k] = c;
      const double l = load(active[c]);
      if (k == 0 || l < best_load) {
        best = active[c];
        best_load = l;
      }
    }
    return best;
  }

  // The node minimizing key(j); ties broken uniformly at random (reservoir).
  template <typename Key>
  uint32_t Least(const std::vector<uint32_t>& active, const Key& key) {
    uint32_t best = active[0], ties = 1;
    double best_key = key(best);
    for (size_t i = 1; i < active.size(); ++i) {
      const uint32_t j = active[i];
      const double k = key(j);
      if (k < best_key) {
        best = j;
        best_key = k;
        ties = 1;
      } else if (k == best_key && rng_.Below(++ties) == 0) {
        best = j;
      }
    }
    return best;
  }

  DispatchConfig config_;
  std::vector<double> rates_;                    // per node: sed's and oracle's service rate
  std::vector<uint32_t> rr_next_;                // per dispatcher: round-robin position
  std::vector<std::vector<double>> weight_cum_;  // wcmp, per type: cumulative weights over candidates
  kernel::Rng rng_;
};

}  // namespace dcgym::rack
