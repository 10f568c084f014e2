// LogHistogram: bucket geometry, the quantile error bound against exact
// sample quantiles, and the bookkeeping (count, mean, min, max, merge, clear).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/histogram.hpp"
#include "dcgym/kernel/rng.hpp"

using dcgym::kernel::LogHistogram;
using dcgym::kernel::Rng;

namespace {

constexpr int kLast = LogHistogram::kNumBuckets - 1;

void TestBucketGeometry() {
  CHECK_EQ(LogHistogram::kMaxRelativeError, 1.0 / 512);
  CHECK_EQ(LogHistogram::kNumBuckets, 50 * 256 + 2);
  // Lower() increases strictly; each regular bucket's width relative to its
  // lower edge is at most 1/256 = 2 x the maximum error (midpoint reporting).
  int not_increasing = 0, too_wide = 0, wrong_index = 0;
  for (int i = 1; i < kLast; ++i) {
    const double lo = LogHistogram::Lower(i), hi = LogHistogram::Lower(i + 1);
    not_increasing += !(hi > lo);
    too_wide += (hi - lo) / lo > 2 * LogHistogram::kMaxRelativeError * (1 + 1e-15);
    // a bucket holds its lower edge and everything up to (not including) the next one
    wrong_index += LogHistogram::Index(lo) != i;
    wrong_index += LogHistogram::Index(std::nextafter(hi, 0.0)) != i;
  }
  CHECK_EQ(not_increasing, 0);
  CHECK_EQ(too_wide, 0);
  CHECK_EQ(wrong_index, 0);
  CHECK_EQ(LogHistogram::Lower(1), std::ldexp(1.0, -10));
  CHECK_EQ(LogHistogram::Lower(kLast), std::ldexp(1.0, 40));
}

void TestIndexIsMonotoneAndTotal() {
  // A geometric sweep over 2^-12 .. 2^42 by ratio 1 + 1e-4 (finer than a bucket).
  int decreasing = 0, out_of_range = 0;
  int prev = LogHistogram::Index(std::ldexp(1.0, -12));
  for (double v = std::ldexp(1.0, -12); v < std::ldexp(1.0, 42); v *= 1.0001) {
    const int i = LogHistogram::Index(v);
    decreasing += i < prev;
    out_of_range += i < 0 || i > kLast;
    prev = i;
  }
  CHECK_EQ(decreasing, 0);
  CHECK_EQ(out_of_range, 0);
  // Out-of-range values go to the two end buckets, never out of the array.
  CHECK_EQ(LogHistogram::Index(0.0), 0);
  CHECK_EQ(LogHistogram::Index(-5.0), 0);
  CHECK_EQ(LogHistogram::Index(std::nan("")), 0);
  CHECK_EQ(LogHistogram::Index(std::nextafter(std::ldexp(1.0, -10), 0.0)), 0);
  CHECK_EQ(LogHistogram::Index(std::ldexp(1.0, 40)), kLast);
  CHECK_EQ(LogHistogram::Index(1e300), kLast);
  CHECK_EQ(LogHistogram::Index(std::numeric_limits<double>::infinity()), kLast);
}

double ExactQuantile(const std::vector<double>& sorted, double q) {
  // The smallest value with at least a fraction q at or below it (numpy's inverted_cdf).
  const size_t n = sorted.size();
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::max<size_t>(rank, 1);
  return sorted[rank - 1];
}

void TestQuantilesWithinMaxRelativeError() {
  // Log-uniform values over 1e-3 .. 1e9 us, and values placed exactly on bucket
  // edges (the worst case for midpoint reporting: error exactly 1/512).
  Rng rng(8, 0);
  std::vector<double> values;
  for (int i = 0; i < 1'000'000; ++i) values.push_back(std::exp(std::log(1e-3) + rng.Uniform() * std::log(1e12)));
  for (int i = 0; i < 20000; ++i) values.push_back(LogHistogram::Lower(1 + static_cast<int>(rng.Below(kLast - 1))));
  LogHistogram h;
  for (double v : values) h.Record(v);
  std::sort(values.begin(), values.end());
  int violations = 0;
  double worst = 0;
  for (double q = 0.0005; q < 1.0; q += 0.0005) {
    const double exact = ExactQuantile(values, q);
    const double err = std::fabs(h.Quantile(q) - exact) / exact;
    worst = std::max(worst, err);
    violations += err > LogHistogram::kMaxRelativeError * (1 + 1e-12);
  }
  for (double q : {0.9, 0.99, 0.999, 0.9999, 0.99999}) {
    const double err = std::fabs(h.Quantile(q) - ExactQuantile(values, q)) / ExactQuantile(values, q);
    violations += err > LogHistogram::kMaxRelativeError * (1 + 1e-12);
  }
  CHECK_EQ(violations, 0);
  CHECK(worst > 0.5 * LogHistogram::kMaxRelativeError);  // the bound is tight, not vacuous
  // Reports are clamped to the recorded [min, max].
  CHECK(h.Quantile(0.0) >= values.front());
  CHECK(h.Quantile(1.0) <= values.back());
  CHECK_EQ(h.Min(), values.front());
  CHECK_EQ(h.Max(), values.back());
}

void TestBookkeeping() {
  LogHistogram empty;
  CHECK(std::isnan(empty.Quantile(0.5)));
  CHECK(std::isnan(empty.Mean()));
  CHECK(std::isnan(empty.Min()));
  CHECK(std::isnan(empty.Max()));
  CHECK_EQ(empty.Count(), uint64_t{0});

  LogHistogram a, b, all;
  Rng rng(4, 4);
  double sum = 0;
  for (int i = 0; i < 5000; ++i) {
    const double v = 1.0 + 99.0 * rng.Uniform();
    (i % 3 ? a : b).Record(v);
    all.Record(v);
    sum += v;
  }
  CHECK_EQ(all.Count(), uint64_t{5000});
  CHECK_NEAR(all.Mean(), sum / 5000, 1e-12 * sum / 5000);
  a.Merge(b);
  CHECK(a.Counts() == all.Counts());
  CHECK_EQ(a.Count(), all.Count());
  CHECK_EQ(a.Min(), all.Min());
  CHECK_EQ(a.Max(), all.Max());
  CHECK_EQ(a.Quantile(0.99), all.Quantile(0.99));
  a.Clear();
  CHECK_EQ(a.Count(), uint64_t{0});
  CHECK(std::isnan(a.Max()));
  CHECK_EQ(a.Counts().size(), static_cast<size_t>(LogHistogram::kNumBuckets));
  a.Record(7.0);
  CHECK_EQ(a.Quantile(0.5), 7.0);  // a single sample is reported exactly (clamped to min = max)
  // Memory is fixed: the bucket array does not grow with the sample count.
  for (int i = 0; i < 1'000'000; ++i) a.Record(rng.Exp1());
  CHECK_EQ(a.Counts().size(), static_cast<size_t>(LogHistogram::kNumBuckets));
}

}  // namespace

// Quantile scans the lower half from the bottom and the upper half from the
// top; both must find the bucket of the definition (the first whose cumulative
// count reaches ceil(q * count)), here recomputed from Counts() by an upward scan.
void TestQuantileScansFromEitherEndAgree() {
  Rng rng(9, 0);
  for (int trial = 0; trial < 200; ++trial) {
    LogHistogram h;
    const int samples = 1 + static_cast<int>(rng.Below(300));
    for (int i = 0; i < samples; ++i) h.Record(1.0 + 1000.0 * rng.Uniform() * rng.Uniform());
    const auto& counts = h.Counts();
    for (int k = 0; k <= 1000; ++k) {
      const double q = k / 1000.0;
      const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(h.Count()))));
      uint64_t seen = 0;
      int bucket = 0;
      while ((seen += counts[bucket]) < rank) ++bucket;
      const double mid = 0.5 * (LogHistogram::Lower(bucket) + LogHistogram::Lower(bucket + 1));
      const double expected = std::min(std::max(mid, h.Min()), h.Max());
      CHECK_EQ(h.Quantile(q), expected);
    }
    h.Clear();
    h.Record(5.0);
    CHECK_EQ(h.Quantile(0.99), 5.0);  // after a clear, only the new sample
  }
}

int main() {
  TestBucketGeometry();
  TestIndexIsMonotoneAndTotal();
  TestQuantilesWithinMaxRelativeError();
  TestQuantileScansFromEitherEndAgree();
  TestBookkeeping();
  return dcgym::check::Report("test_histogram");
}
