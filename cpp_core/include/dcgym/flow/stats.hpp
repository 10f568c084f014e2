// What a flow simulation measures, in fixed memory.
//
// FCT and slowdown histograms overall and per size bucket (small <= 100 KB,
// medium <= 10 MB, large above; KB = 1024 B, MB = 1024 KB, as PIAS reports
// them), counters, time averages from the first measured arrival, the
// aggregates of the current decision interval, and rings of the last
// finished flows for observations. FCTs are recorded in microseconds (the
// histogram's resolution is relative: 0.2%), reported in seconds.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dcgym/kernel/histogram.hpp"

namespace dcgym::flow {

inline constexpr double kSmallMaxBytes = 100.0 * 1024;
inline constexpr double kMediumMaxBytes = 10.0 * 1024 * 1024;

enum Bucket : uint32_t { kAllFlows = 0, kSmall = 1, kMedium = 2, kLarge = 3, kNumBuckets = 4 };
inline constexpr const char* kBucketNames[kNumBuckets] = {"all", "small", "medium", "large"};  // results' keys

inline Bucket BucketOf(double size) {
  return size <= kSmallMaxBytes ? kSmall : size <= kMediumMaxBytes ? kMedium : kLarge;
}

// One histogram per size bucket; the overall one is their merge, made when
// asked for (a completion records two values, not four).
struct FctHistograms {
  kernel::LogHistogram fct_us[kNumBuckets - 1];    // fluid FCT (base RTT not included), per bucket
  kernel::LogHistogram slowdown[kNumBuckets - 1];  // (fluid FCT + base RTT) / (size / path capacity + base RTT)

  void Record(double size, double fct_s, double slowdown_value) {
    const uint32_t b = BucketOf(size) - 1;
    fct_us[b].Record(fct_s * 1e6);  // FctSeconds is the way back
    slowdown[b].Record(slowdown_value);
  }
  kernel::LogHistogram Fct(Bucket b) const { return Get(fct_us, b); }
  kernel::LogHistogram Slowdown(Bucket b) const { return Get(slowdown, b); }

 private:
  static kernel::LogHistogram Get(const kernel::LogHistogram* per_bucket, Bucket b) {
    if (b != kAllFlows) return per_bucket[b - 1];
    kernel::LogHistogram all;
    for (uint32_t k = 0; k + 1 < kNumBuckets; ++k) all.Merge(per_bucket[k]);
    return all;
  }
};

// A value of an fct_us histogram as the seconds results report, plus `offset_s` (the base RTT; NaN stays NaN).
inline double FctSeconds(double us, double offset_s) { return std::isnan(us) ? us : us * 1e-6 + offset_s; }

struct Counters {
  uint64_t arrived = 0;
  uint64_t completed = 0;
  uint64_t measured = 0;  // completed, past the warm-up and within the measured arrivals
  uint64_t events = 0;    // arrivals, marks (completions, demotions, long), load changes
  double bytes_arrived = 0, bytes_completed = 0;
  double measured_bytes = 0;  // of measured completions
};

// Integrals over time from the first measured arrival: unfinished bytes
// (the M/G/1 workload) and active flows.
struct TimeAverages {
  double start = -1;  // < 0: not started
  double unfinished_integral = 0;
  double active_integral = 0;
};

// Flows finished in the current interval (AuTO's rewards: the ratio of mean
// FCTs T_{t-1} / T_t, and of long flows' mean throughput).
struct IntervalStats {
  double start_s = 0;
  uint64_t arrived = 0;
  uint64_t finished = 0, short_finished = 0, long_finished = 0;
  double fct_sum_s = 0, short_fct_sum_s = 0, long_fct_sum_s = 0;  // FCTs include the base RTT
  double throughput_sum_bps = 0;       // sum of size / FCT over the finished flows, bytes per second
  double long_throughput_sum_bps = 0;  // the same over finished long flows
  double bytes_finished = 0;
};

// A finished flow, as observations report it.
struct FinishedFlow {
  double src, dst, path, level, size, fct, finish;
};

// The last `capacity` finished flows; Count() counts every push.
class FinishedRing {
 public:
  explicit FinishedRing(uint32_t capacity) : buf_(capacity) {}
  void Push(const FinishedFlow& f) {
    if (buf_.empty()) return;
    buf_[pushed_ % buf_.size()] = f;
    ++pushed_;
  }
  uint64_t Count() const { return pushed_; }
  uint32_t Capacity() const { return static_cast<uint32_t>(buf_.size()); }
  // i-th most recent (0 = last pushed); i < min(Count(), Capacity()).
  const FinishedFlow& Recent(uint64_t i) const { return buf_[(pushed_ - 1 - i) % buf_.size()]; }

 private:
  std::vector<FinishedFlow> buf_;
  uint64_t pushed_ = 0;
};

}  // namespace dcgym::flow
