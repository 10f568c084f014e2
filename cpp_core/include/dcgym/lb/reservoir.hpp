// Per-period reservoir samples, the load balancer's passive measurements.
//
// Multi-LB paper (Yao et al., CIKM 2022), App. C.2.4, Algorithm 3 "reservoir sampling with
// no rejection": every new sample overwrites a uniformly random slot of a
// k-slot buffer, so the buffer holds a recency-biased sample of the stream in
// O(1) per insertion and O(k) memory. Here a buffer first fills its k slots
// and only then overwrites at random (the authors' simulator overwrites random
// slots from the start and summarizes the zeros of unfilled slots too). A
// bank holds one buffer per (load balancer, server) pair, stored flat, and
// empties each buffer lazily when a sample of a newer decision period arrives.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "dcgym/kernel/rng.hpp"

namespace dcgym::lb {

// Statistics of one buffer; all zero when it holds no sample.
struct ReservoirSummary {
  uint32_t count = 0;
  double mean = 0, p90 = 0, std = 0;
  double decayed = 0;  // mean weighted by 2^(-age / half_life), ages taken at the summary time
};

class ReservoirBank {
 public:
  ReservoirBank(uint32_t buffers, uint32_t slots)
      : k_(slots),
        fill_(buffers, 0),
        period_(buffers, -1),
        time_(size_t{buffers} * slots),
        value_(size_t{buffers} * slots) {}

  uint32_t Slots() const { return k_; }

  void Add(uint32_t b, int64_t period, double t, double v, kernel::Rng& rng) {
    if (period < period_[b]) return;  // a late sample of a period already closed
    if (period_[b] != period) {
      period_[b] = period;
      fill_[b] = 0;
    }
    const size_t slot = size_t{b} * k_ + (fill_[b] < k_ ? fill_[b]++ : rng.Below(k_));
    time_[slot] = t;
    value_[slot] = v;
  }

  // Summary of buffer b in `period` (empty if its samples are from another
  // period), with freshness weights taken at time `now`.
  ReservoirSummary Summarize(uint32_t b, int64_t period, double now, double half_life) const {
    ReservoirSummary s;
    if (period_[b] != period || fill_[b] == 0) return s;
    const uint32_t n = fill_[b];
    const double* t = &time_[size_t{b} * k_];
    const double* v = &value_[size_t{b} * k_];
    double sum = 0, wsum = 0, wv = 0;
    for (uint32_t i = 0; i < n; ++i) {
      sum += v[i];
      const double w = std::exp2(-(now - t[i]) / half_life);
      wsum += w;
      wv += w * v[i];
    }
    s.count = n;
    s.mean = sum / n;
    double sq = 0;
    for (uint32_t i = 0; i < n; ++i) sq += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = std::sqrt(sq / n);  // population std, as numpy's default
    s.decayed = wsum > 0 ? wv / wsum : s.mean;
    std::vector<double> sorted(v, v + n);
    std::sort(sorted.begin(), sorted.end());
    const double pos = 0.9 * (n - 1);  // numpy's default linear interpolation
    const uint32_t lo = static_cast<uint32_t>(pos);
    const uint32_t hi = std::min(lo + 1, n - 1);
    s.p90 = sorted[lo] + (pos - lo) * (sorted[hi] - sorted[lo]);
    return s;
  }

 private:
  uint32_t k_;
  std::vector<uint32_t> fill_;
  std::vector<int64_t> period_;
  std::vector<double> time_, value_;
};

}  // namespace dcgym::lb
