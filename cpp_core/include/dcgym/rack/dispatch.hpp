// Inter-node dispatch policies of a central dispatcher (e.g. the ToR switch
// of RackSched) that read loads from a LoadInfo view.
//
// random       uniform over nodes
// round_robin  cyclic over nodes
// po_d         sample d nodes (with or without replacement), send to the
//              least loaded; ties go to the first sampled (RackSched's rule)
// jsq          least loaded node; ties broken uniformly at random
// central_fcfs is not a per-task choice: the rack simulator handles it with a
//              global queue (see rack_sim.hpp).
#pragma once

#include <cstdint>

#include "dcgym/kernel/rng.hpp"
#include "dcgym/rack/config.hpp"

namespace dcgym::rack {

class Dispatcher {
 public:
  Dispatcher(const DispatchConfig& config, uint32_t num_nodes, kernel::Rng rng)
      : config_(config), n_(num_nodes), rng_(rng) {}

  // Whether Pick() reads loads (so the rack must keep the view current).
  bool NeedsLoads() const {
    return config_.kind == DispatchKind::kPowerOfD || config_.kind == DispatchKind::kJsq;
  }

  uint32_t Pick(const double* loads) {
    switch (config_.kind) {
      case DispatchKind::kRoundRobin: {
        const uint32_t i = next_;
        next_ = next_ + 1 == n_ ? 0 : next_ + 1;
        return i;
      }
      case DispatchKind::kPowerOfD:
        return config_.replace ? PowerOfDWithReplacement(loads) : PowerOfDWithoutReplacement(loads);
      case DispatchKind::kJsq:
        return Shortest(loads);
      default:
        return n_ == 1 ? 0 : rng_.Below(n_);
    }
  }

 private:
  uint32_t PowerOfDWithReplacement(const double* loads) {
    uint32_t best = rng_.Below(n_);
    for (uint32_t k = 1; k < config_.d; ++k) {
      const uint32_t c = rng_.Below(n_);
      if (loads[c] < loads[best]) best = c;
    }
    return best;
  }

  uint32_t PowerOfDWithoutReplacement(const double* loads) {
    // d is small: draw, rejecting nodes already drawn.
    uint32_t drawn[kMaxD];
    uint32_t best = 0;
    const uint32_t d = config_.d < kMaxD ? config_.d : kMaxD;
    for (uint32_t k = 0; k < d; ++k) {
      uint32_t c;
      bool seen;
      do {
        c = rng_.Below(n_);
        seen = false;
        for (uint32_t j = 0; j < k; ++j) seen |= drawn[j] == c;
      } while (seen);
      drawn[k] = c;
      if (k == 0 || loads[c] < loads[best]) best = c;
    }
    return best;
  }

  uint32_t Shortest(const double* loads) {
    uint32_t best = 0, ties = 1;
    for (uint32_t i = 1; i < n_; ++i) {
      if (loads[i] < loads[best]) {
        best = i;
        ties = 1;
      } else if (loads[i] == loads[best] && rng_.Below(++ties) == 0) {
        best = i;  // reservoir sampling: each tied node kept with probability 1/ties
      }
    }
    return best;
  }

 public:
  static constexpr uint32_t kMaxD = 64;

 private:
  DispatchConfig config_;
  uint32_t n_;
  kernel::Rng rng_;
  uint32_t next_ = 0;
};

}  // namespace dcgym::rack
