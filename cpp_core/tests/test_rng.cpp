// Random streams: reproducibility, independence of streams, the published
// generators' reference outputs, and the distributions of Uniform, Exp1 and
// Below.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/rng.hpp"

using dcgym::kernel::ExpZiggurat;
using dcgym::kernel::kExpZiggurat;
using dcgym::kernel::MakeRng;
using dcgym::kernel::Rng;
using dcgym::kernel::SplitMix64;
using dcgym::kernel::Stream;

namespace {

// xoshiro256++ as published by Blackman and Vigna (prng.di.unimi.it), written
// out again so the engine's copy is checked against an independent one.
struct ReferenceXoshiro {
  uint64_t s[4];
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t Next() {
    const uint64_t result = Rotl(s[0] + s[3], 23) + s[0];
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = Rotl(s[3], 45);
    return result;
  }
};

void TestReferenceOutputs() {
  // SplitMix64 from state 0: the reference implementation's first outputs.
  uint64_t x = 0;
  CHECK_EQ(SplitMix64(x), 0xE220A8397B1DCDAFULL);
  CHECK_EQ(SplitMix64(x), 0x6E789E6AA1B965F4ULL);
  CHECK_EQ(SplitMix64(x), 0x06C45D188009454FULL);

  // xoshiro256++ from state {1, 2, 3, 4}: rotl(1 + 4, 23) + 1.
  ReferenceXoshiro ref{{1, 2, 3, 4}};
  CHECK_EQ(ref.Next(), 41943041ULL);

  // Rng(seed, stream) is xoshiro256++ whose state is four SplitMix64 outputs
  // from seed ^ (0xD1B54A32D192ED03 * (stream + 1)), as rng.hpp documents.
  for (uint64_t seed : {0ULL, 1ULL, 12345ULL, ~0ULL}) {
    for (uint64_t stream : {0ULL, 1ULL, (2ULL << 32) + 7}) {
      uint64_t sm = seed ^ (0xD1B54A32D192ED03ULL * (stream + 1));
      ReferenceXoshiro r{};
      for (auto& w : r.s) w = SplitMix64(sm);
      Rng rng(seed, stream);
      int mismatches = 0;
      for (int i = 0; i < 1000; ++i) mismatches += rng.Next() != r.Next();
      CHECK_EQ(mismatches, 0);
    }
  }
}

std::vector<uint64_t> Draws(Rng rng, int n) {
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = rng.Next();
  return v;
}

int SamePositions(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return same;
}

void TestStreamsAreReproducibleAndDistinct() {
  const int n = 10000;
  const auto a = Draws(MakeRng(42, Stream::kArrivals), n);
  CHECK(a == Draws(MakeRng(42, Stream::kArrivals), n));  // same seed, same stream: identical
  // Distinct 64-bit streams share a position with probability n / 2^64: never.
  CHECK_EQ(SamePositions(a, Draws(MakeRng(42, Stream::kService), n)), 0);
  CHECK_EQ(SamePositions(a, Draws(MakeRng(43, Stream::kArrivals), n)), 0);
  CHECK_EQ(SamePositions(a, Draws(MakeRng(42, Stream::kArrivals, 1), n)), 0);
  const auto d0 = Draws(MakeRng(7, Stream::kDispatch, 0), n), d1 = Draws(MakeRng(7, Stream::kDispatch, 1), n);
  CHECK_EQ(SamePositions(d0, d1), 0);
  // A copied generator continues the same sequence (the engine copies streams).
  Rng r = MakeRng(9, Stream::kNodes);
  for (int i = 0; i < 17; ++i) r.Next();
  Rng copy = r;
  CHECK(Draws(r, 100) == Draws(copy, 100));
}

void TestUniformRangesAndMoments() {
  Rng rng(5, 0);
  const int n = 4'000'000;
  double sum = 0, sum2 = 0, lo = 1, hi = 0;
  double sum_open = 0, lo_open = 1, hi_open = 0;
  for (int i = 0; i < n; ++i) {
    const double u = rng.Uniform();
    sum += u;
    sum2 += u * u;
    lo = std::fmin(lo, u);
    hi = std::fmax(hi, u);
    const double w = rng.UniformOpen0();
    sum_open += w;
    lo_open = std::fmin(lo_open, w);
    hi_open = std::fmax(hi_open, w);
  }
  CHECK(lo >= 0.0 && hi < 1.0);
  CHECK(lo_open > 0.0 && hi_open <= 1.0);
  // Var(U) = 1/12, Var(U^2) = 4/45: 5-sigma bounds
  CHECK_NEAR(sum / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  CHECK_NEAR(sum2 / n, 1.0 / 3, 5 * std::sqrt(4.0 / 45 / n));
  CHECK_NEAR(sum_open / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
}

void TestZigguratTables() {
  // Every layer has area kV: the base strip (rectangle [0, R] x [0, f(R)] plus
  // the tail, R f(R) + f(R)) and the 255 rectangles x[i] (f[i+1] - f[i]).
  const ExpZiggurat& z = kExpZiggurat;
  const double r = ExpZiggurat::kR, v = ExpZiggurat::kV;
  CHECK_NEAR(std::exp(-r) * (r + 1) / v, 1.0, 1e-12);
  CHECK_NEAR(z.x[0] * z.f[1] / v, 1.0, 1e-12);
  int bad_area = 0, not_decreasing = 0;
  for (int i = 1; i < 256; ++i) {
    bad_area += std::fabs(z.x[i] * (z.f[i + 1] - z.f[i]) / v - 1.0) > 1e-9;
    not_decreasing += !(z.x[i + 1] < z.x[i]);
  }
  CHECK_EQ(bad_area, 0);
  CHECK_EQ(not_decreasing, 0);
  CHECK_EQ(z.x[256], 0.0);
  CHECK_EQ(z.f[256], 1.0);
}

void TestExp1Distribution() {
  // Moments and 1,000 equiprobable bins (F^-1(k/1000) = -log(1 - k/1000)),
  // with 4e6 draws: 4,000 expected per bin.
  Rng rng(11, 3);
  const int n = 4'000'000, bins = 1000;
  std::vector<double> edges(bins - 1);
  for (int k = 1; k < bins; ++k) edges[k - 1] = -std::log1p(-static_cast<double>(k) / bins);
  std::vector<long> counts(bins, 0);
  double sum = 0, sum2 = 0, beyond_r = 0, lo = 1e300;
  for (int i = 0; i < n; ++i) {
    const double x = rng.Exp1();
    sum += x;
    sum2 += x * x;
    lo = std::fmin(lo, x);
    beyond_r += x > ExpZiggurat::kR;
    const size_t b = std::upper_bound(edges.begin(), edges.end(), x) - edges.begin();
    ++counts[b];
  }
  CHECK(lo >= 0.0);
  // E[X] = 1 (Var 1), E[X^2] = 2 (Var E[X^4] - 4 = 20)
  CHECK_NEAR(sum / n, 1.0, 5 * std::sqrt(1.0 / n));
  CHECK_NEAR(sum2 / n, 2.0, 5 * std::sqrt(20.0 / n));
  double chi2 = 0;
  const double expected = static_cast<double>(n) / bins;
  for (long c : counts) chi2 += (c - expected) * (c - expected) / expected;
  const double z = dcgym::check::ChiSquareZ(chi2, bins - 1);
  CHECK(z < 5);
  const double p_tail = std::exp(-ExpZiggurat::kR);
  CHECK_NEAR(beyond_r, n * p_tail, 5 * std::sqrt(n * p_tail * (1 - p_tail)));
}

void TestExp1Tail() {
  // Draws beyond the base layer (x > R, probability e^-R = 4.5e-4) come from
  // a separate branch. 4e7 draws give ~18,000 of them: their count is
  // binomial, and by memorylessness their excess over R is Exp(1) again
  // (mean 1, second moment 2); 5-sigma bounds, so a 5% error in the tail's
  // scale is ~7 sigma.
  Rng rng(12, 3);
  const long n = 40'000'000;
  const double r = ExpZiggurat::kR, p_tail = std::exp(-r);
  double count = 0, e1 = 0, e2 = 0;
  for (long i = 0; i < n; ++i) {
    const double x = rng.Exp1();
    if (x > r) {
      ++count;
      e1 += x - r;
      e2 += (x - r) * (x - r);
    }
  }
  CHECK_NEAR(count, n * p_tail, 5 * std::sqrt(n * p_tail * (1 - p_tail)));
  CHECK_NEAR(e1 / count, 1.0, 5 * std::sqrt(1.0 / count));
  CHECK_NEAR(e2 / count, 2.0, 5 * std::sqrt(20.0 / count));
}

void TestBelowIsUnbiased() {
  Rng rng(3, 9);
  for (uint32_t n : {1u, 2u, 3u, 7u, 10u, 100u, 1000u}) {
    const int draws = 200'000 + 200 * static_cast<int>(n);
    std::vector<long> counts(n, 0);
    bool in_range = true;
    for (int i = 0; i < draws; ++i) {
      const uint32_t k = rng.Below(n);
      in_range &= k < n;
      if (k < n) ++counts[k];
    }
    CHECK(in_range);
    if (n > 1) {
      double chi2 = 0;
      const double expected = static_cast<double>(draws) / n;
      for (long c : counts) chi2 += (c - expected) * (c - expected) / expected;
      CHECK(dcgym::check::ChiSquareZ(chi2, n - 1) < 5);
    }
  }
  // n = 3 * 2^30: multiply-shift without Lemire's rejection step maps 2, 1, 1
  // of the 2^32 inputs to outputs k = 0, 1, 2 (mod 3), so k % 3 == 0 would
  // have probability 1/2 instead of 1/3.
  const uint32_t big = 3u << 30;
  const int draws = 600'000;
  long zero_mod3 = 0;
  bool in_range = true;
  for (int i = 0; i < draws; ++i) {
    const uint32_t k = rng.Below(big);
    in_range &= k < big;
    zero_mod3 += k % 3 == 0;
  }
  CHECK(in_range);
  CHECK_NEAR(static_cast<double>(zero_mod3) / draws, 1.0 / 3, 5 * std::sqrt(2.0 / 9 / draws));
}

}  // namespace

int main() {
  TestReferenceOutputs();
  TestStreamsAreReproducibleAndDistinct();
  TestUniformRangesAndMoments();
  TestZigguratTables();
  TestExp1Distribution();
  TestExp1Tail();
  TestBelowIsUnbiased();
  return dcgym::check::Report("test_rng");
}
