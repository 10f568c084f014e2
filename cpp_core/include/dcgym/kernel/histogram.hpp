// Fixed-memory latency histogram with bounded relative error.
//
// Buckets are log-linear: each power of two in [2^kMinExp, 2^kMaxExp) is cut
// into 2^kSubBits equal sub-buckets, indexed straight from the bits of the
// IEEE-754 double (no logarithm). A percentile is reported as the midpoint of
// the bucket holding the requested rank, clamped to the exact [min, max], so
// its relative error against the exact sample percentile is at most
// 2^-(kSubBits + 1) = 0.195% for every value in range (2^-10 us .. 2^40 us,
// about 1 ns to 12 days). Memory is fixed: kNumBuckets counters, whatever the
// number of samples.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dcgym::kernel {

class LogHistogram {
 public:
  static constexpr int kSubBits = 8;
  static constexpr int kMinExp = -10;
  static constexpr int kMaxExp = 40;
  static constexpr int kSub = 1 << kSubBits;
  // bucket 0 holds values below 2^kMinExp (including 0); the last, values >= 2^kMaxExp
  static constexpr int kNumBuckets = (kMaxExp - kMinExp) * kSub + 2;
  static constexpr double kMaxRelativeError = 1.0 / (2 * kSub);

  LogHistogram() : counts_(kNumBuckets, 0) {}

  void Record(double v) {
    const int i = Index(v);
    ++counts_[i];
    if (i < lo_) lo_ = i;
    if (i > hi_) hi_ = i;
    ++count_;
    sum_ += v;
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }

  void Merge(const LogHistogram& o) {
    for (int i = o.lo_; i <= o.hi_; ++i) counts_[i] += o.counts_[i];
    lo_ = std::min(lo_, o.lo_);
    hi_ = std::max(hi_, o.hi_);
    count_ += o.count_;
    sum_ += o.sum_;
    min_ = std::min(min_, o.min_);
    max_ = std::max(max_, o.max_);
  }

  // Clears only the buckets ever touched: cheap for a per-step histogram.
  void Clear() {
    if (hi_ >= lo_) std::fill(counts_.begin() + lo_, counts_.begin() + hi_ + 1, 0);
    lo_ = kNumBuckets;
    hi_ = -1;
    count_ = 0;
    sum_ = 0;
    min_ = kInf;
    max_ = -kInf;
  }

  uint64_t Count() const { return count_; }
  double Sum() const { return sum_; }
  double Mean() const { return count_ ? sum_ / static_cast<double>(count_) : kNaN; }
  double Min() const { return count_ ? min_ : kNaN; }
  double Max() const { return count_ ? max_ : kNaN; }

  // Smallest recorded value v such that at least a fraction q of the samples
  // are <= v, up to the bucket resolution. NaN when empty.
  double Quantile(double q) const {
    if (count_ == 0) return kNaN;
    q = std::clamp(q, 0.0, 1.0);
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
    if (2 * rank <= count_) {  // the lower half: scan up to the first bucket whose cumulative count reaches rank
      uint64_t seen = 0;
      for (int i = lo_; i <= hi_; ++i) {
        seen += counts_[i];
        if (seen >= rank) return std::clamp(Midpoint(i), min_, max_);
      }
      return max_;
    }
    // The upper half (p99 of a heartbeat's tasks): the same bucket, found from the top. Below bucket i lie
    // count - above - counts[i] samples; step down while that is still >= rank.
    const uint64_t allowed = count_ - rank;
    uint64_t above = 0;
    int i = hi_;
    while (i > lo_ && above + counts_[i] <= allowed) above += counts_[i--];
    return std::clamp(Midpoint(i), min_, max_);
  }

  // Bucket boundaries: bucket i covers [Lower(i), Lower(i + 1)).
  static double Lower(int i) {
    if (i <= 0) return 0.0;
    if (i >= kNumBuckets - 1) return std::ldexp(1.0, kMaxExp);
    const int octave = (i - 1) / kSub, sub = (i - 1) % kSub;
    return std::ldexp(1.0 + static_cast<double>(sub) / kSub, kMinExp + octave);
  }
  const std::vector<uint64_t>& Counts() const { return counts_; }

  static int Index(double v) {
    if (!(v >= kMinValue)) return 0;  // also catches NaN
    if (v >= kMaxValue) return kNumBuckets - 1;
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    const int exponent = static_cast<int>(bits >> 52) - 1023;
    const int sub = static_cast<int>((bits >> (52 - kSubBits)) & (kSub - 1));
    return 1 + (exponent - kMinExp) * kSub + sub;
  }

 private:
  static double Midpoint(int i) {
    if (i <= 0) return 0.0;
    if (i >= kNumBuckets - 1) return kMaxValue;
    return 0.5 * (Lower(i) + Lower(i + 1));
  }
  static constexpr double kInf = __builtin_huge_val();
  static constexpr double kNaN = __builtin_nan("");
  static inline const double kMinValue = std::ldexp(1.0, kMinExp);
  static inline const double kMaxValue = std::ldexp(1.0, kMaxExp);

  std::vector<uint64_t> counts_;
  int lo_ = kNumBuckets, hi_ = -1;  // range of buckets that may be non-zero
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = kInf, max_ = -kInf;
};

}  // namespace dcgym::kernel
