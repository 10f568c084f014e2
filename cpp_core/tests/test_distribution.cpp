// Service distributions: closed-form moments, sample moments, class
// frequencies, scaling, and refusal of invalid parameters.
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "check.hpp"
#include "dcgym/kernel/distribution.hpp"
#include "dcgym/kernel/rng.hpp"

using dcgym::kernel::Distribution;
using dcgym::kernel::Rng;
using Pairs = std::vector<std::pair<double, double>>;

namespace {

double Factorial(int k) { return k <= 1 ? 1.0 : k * Factorial(k - 1); }

// E[U^k] for U uniform on [a, b] (a point mass when a == b).
double UniformMoment(double a, double b, int k) {
  if (a == b) return std::pow(a, k);
  return (std::pow(b, k + 1) - std::pow(a, k + 1)) / ((k + 1) * (b - a));
}

struct Case {
  std::string name;
  Distribution dist;
  std::function<double(int)> moment;  // E[S^k], written out independently of distribution.cpp
  std::vector<double> class_probs;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({"exp", Distribution::Exp(100.0), [](int k) { return Factorial(k) * std::pow(100.0, k); }, {1.0}});
  cases.push_back({"det", Distribution::Det(100.0), [](int k) { return std::pow(100.0, k); }, {1.0}});
  const Pairs modes{{0.8, 50.0}, {0.2, 250.0}};
  cases.push_back({"bimodal",
                   Distribution::Multimodal(modes),
                   [modes](int k) {
                     double m = 0;
                     for (auto [p, v] : modes) m += p * std::pow(v, k);
                     return m;
                   },
                   {0.8, 0.2}});
  const Pairs phases{{0.5, 50.0}, {0.3, 500.0}, {0.2, 5.0}};
  cases.push_back({"hyperexp",
                   Distribution::Hyperexp(phases),
                   [phases](int k) {
                     double m = 0;
                     for (auto [p, mean] : phases) m += p * Factorial(k) * std::pow(mean, k);
                     return m;
                   },
                   {0.5, 0.3, 0.2}});
  // Lognormal with mean 100, sigma 0.8: mu = ln 100 - sigma^2 / 2.
  cases.push_back({"lognormal",
                   Distribution::Lognormal(100.0, 0.8),
                   [](int k) {
                     const double s = 0.8, mu = std::log(100.0) - 0.5 * s * s;
                     return std::exp(k * mu + 0.5 * k * k * s * s);
                   },
                   {1.0}});
  // Bounded Pareto: density a L^a x^(-a-1) / (1 - (L/H)^a) on [L, H].
  cases.push_back({"bounded_pareto",
                   Distribution::BoundedPareto(1.5, 10.0, 10000.0),
                   [](int k) {
                     const double a = 1.5, lo = 10.0, hi = 10000.0;
                     return a * std::pow(lo, a) / (1 - std::pow(lo / hi, a)) *
                            (std::pow(hi, k - a) - std::pow(lo, k - a)) / (k - a);
                   },
                   {1.0}});
  const Pairs cdf{{10.0, 0.0}, {50.0, 0.5}, {100.0, 0.9}, {1000.0, 1.0}};
  // An atom: half the mass at 1, half uniform on [1, 3].
  const Pairs atom{{1.0, 0.0}, {1.0, 0.5}, {3.0, 1.0}};
  for (const auto& [name, points] : {std::pair{"empirical", cdf}, std::pair{"empirical_atom", atom}}) {
    cases.push_back({name,
                     Distribution::Empirical(points),
                     [points = points](int k) {
                       double m = 0;
                       for (size_t i = 1; i < points.size(); ++i)
                         m += (points[i].second - points[i - 1].second) *
                              UniformMoment(points[i - 1].first, points[i].first, k);
                       return m;
                     },
                     {1.0}});
  }
  return cases;
}

void TestClosedFormMoments(const Case& c) {
  CHECK_NEAR(c.dist.Mean() / c.moment(1), 1.0, 1e-12);
  CHECK_NEAR(c.dist.SecondMoment() / c.moment(2), 1.0, 1e-12);
  CHECK_EQ(c.dist.NumClasses(), static_cast<uint32_t>(c.class_probs.size()));
  for (uint32_t k = 0; k < c.class_probs.size(); ++k) CHECK_NEAR(c.dist.ClassProbability(k), c.class_probs[k], 1e-15);
}

void TestSampleMomentsAndClasses(const Case& c) {
  // 5-sigma bounds from the exact variance of S^k: E[S^2k] - E[S^k]^2.
  Rng rng(17, 2);
  const int n = 2'000'000;
  double s1 = 0, s2 = 0;
  std::vector<long> classes(c.class_probs.size(), 0);
  bool valid = true;
  for (int i = 0; i < n; ++i) {
    const auto s = c.dist.Draw(rng);
    valid &= s.value >= 0 && std::isfinite(s.value) && s.cls < classes.size();
    if (s.cls < classes.size()) ++classes[s.cls];
    s1 += s.value;
    s2 += s.value * s.value;
  }
  CHECK(valid);
  for (int k : {1, 2}) {
    const double mk = c.moment(k), se = std::sqrt((c.moment(2 * k) - mk * mk) / n);
    CHECK_NEAR((k == 1 ? s1 : s2) / n, mk, 5 * se + 1e-12 * mk);
  }
  for (size_t k = 0; k < classes.size(); ++k) {
    const double p = c.class_probs[k];
    CHECK_NEAR(static_cast<double>(classes[k]), n * p, 5 * std::sqrt(n * p * (1 - p)) + 1e-9);
  }
}

void TestScaledMultipliesEveryDraw(const Case& c) {
  // Scaled(f) draws f times what the original draws from the same stream.
  const double f = 2.5;
  const Distribution scaled = c.dist.Scaled(f);
  CHECK_NEAR(scaled.Mean() / c.dist.Mean(), f, 1e-12 * f);
  CHECK_NEAR(scaled.SecondMoment() / c.dist.SecondMoment(), f * f, 1e-12 * f * f);
  Rng a(23, 2), b(23, 2);
  int mismatched = 0;
  for (int i = 0; i < 10000; ++i) {
    const auto x = c.dist.Draw(a), y = scaled.Draw(b);
    mismatched += x.cls != y.cls || std::fabs(y.value - f * x.value) > 1e-12 * f * x.value + 1e-300;
  }
  CHECK_EQ(mismatched, 0);
}

void TestMixtureDetails() {
  Rng rng(31, 2);
  // A multimodal draw carries exactly its mode's value; zero-probability modes never appear.
  const Distribution d = Distribution::Multimodal({{0.0, 1.0}, {0.7, 2.0}, {0.3, 3.0}});
  long zero_class = 0, wrong_value = 0;
  for (int i = 0; i < 100000; ++i) {
    const auto s = d.Draw(rng);
    zero_class += s.cls == 0;
    wrong_value += s.value != d.ClassMean(s.cls);
  }
  CHECK_EQ(zero_class, 0L);
  CHECK_EQ(wrong_value, 0L);
  CHECK_EQ(d.ClassMean(2), 3.0);
  // Probabilities summing to 1 within 1e-6 are accepted and normalised.
  const Distribution nearly = Distribution::Multimodal({{0.5, 1.0}, {0.5000005, 2.0}});
  CHECK_NEAR(nearly.ClassProbability(0) + nearly.ClassProbability(1), 1.0, 1e-15);
  // Hyperexp class means are the phase means.
  const Distribution h = Distribution::Hyperexp({{0.25, 4.0}, {0.75, 8.0}});
  CHECK_EQ(h.ClassMean(0), 4.0);
  CHECK_EQ(h.ClassMean(1), 8.0);
  CHECK_EQ(Distribution::Exp(3.0).ClassMean(0), 3.0);
}

// An empirical draw is the CDF's inverse at the stream's next uniform, bit for bit: the segment found by a plain
// binary search (the last point with F <= u), then interpolated. CDFs with flat parts, atoms, probabilities on the
// guide's cell edges (multiples of 1/256) and more points than cells.
void TestEmpiricalIsTheExactInverse() {
  std::vector<Pairs> cdfs = {
      {{0, 0},
       {1e4, 0.15},
       {2e4, 0.2},
       {3e4, 0.3},
       {5e4, 0.4},
       {8e4, 0.53},
       {2e5, 0.6},
       {1e6, 0.7},
       {2e6, 0.8},
       {5e6, 0.9},
       {1e7, 0.97},
       {3e7, 1}},
      {{1, 0}, {1, 0.25}, {2, 0.25}, {2, 0.5}, {5, 0.5}, {6, 0.75}, {6, 1}},
      {{0, 0}, {3, 1.0 / 256}, {4, 1.0 / 256}, {9, 255.0 / 256}, {10, 1}},
      {{0, 0}, {1, 0}, {2, 0}, {7, 1}},
  };
  Pairs dense{{0, 0}};
  for (int i = 1; i <= 1000; ++i) dense.push_back({i, (i % 7 == 0 ? i - 1 : i) / 1000.0});
  dense.back().second = 1;
  cdfs.push_back(dense);
  long wrong = 0;
  for (const Pairs& cdf : cdfs) {
    const Distribution d = Distribution::Empirical(cdf);
    Rng rng(41, 2), mirror(41, 2);
    for (int i = 0; i < 200000; ++i) {
      const double u = mirror.Uniform();
      size_t lo = 0, hi = cdf.size() - 1;
      while (hi - lo > 1) {
        const size_t mid = (lo + hi) / 2;
        (cdf[mid].second <= u ? lo : hi) = mid;
      }
      const double f0 = cdf[lo].second, f1 = cdf[hi].second;
      const double t = f1 > f0 ? (u - f0) / (f1 - f0) : 0.0;
      wrong += d.Draw(rng).value != cdf[lo].first + t * (cdf[hi].first - cdf[lo].first);
    }
  }
  CHECK_EQ(wrong, 0L);
}

bool MessageContains(const std::function<void()>& f, const std::string& field) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return std::string(e.what()).find(field) != std::string::npos;
  }
  return false;
}

void TestInvalidParametersThrow() {
  const double nan = std::nan(""), inf = INFINITY;
  using IA = std::invalid_argument;
  for (double bad : {0.0, -1.0, nan, inf}) {
    CHECK_THROWS(Distribution::Exp(bad), IA);
    CHECK_THROWS(Distribution::Det(bad), IA);
    CHECK_THROWS(Distribution::Lognormal(bad, 1.0), IA);
    CHECK_THROWS(Distribution::Lognormal(1.0, bad), IA);
    CHECK_THROWS(Distribution::BoundedPareto(bad, 1.0, 2.0), IA);
    CHECK_THROWS(Distribution::BoundedPareto(1.0, bad, 2.0), IA);
    CHECK_THROWS(Distribution::BoundedPareto(1.0, 1.0, bad), IA);
    CHECK_THROWS(Distribution::Multimodal({{1.0, bad}}), IA);
    CHECK_THROWS(Distribution::Hyperexp({{1.0, bad}}), IA);
  }
  CHECK_THROWS(Distribution::Lognormal(1.0, 10.5), IA);          // sigma above 10
  CHECK_THROWS(Distribution::BoundedPareto(1.0, 2.0, 2.0), IA);  // high must exceed low
  CHECK_THROWS(Distribution::BoundedPareto(1.0, 3.0, 2.0), IA);
  CHECK_THROWS(Distribution::Multimodal({}), IA);
  CHECK_THROWS(Distribution::Multimodal({{0.5, 1.0}, {0.4, 2.0}}), IA);  // sums to 0.9
  CHECK_THROWS(Distribution::Multimodal({{1.2, 1.0}, {-0.2, 2.0}}), IA);
  CHECK_THROWS(Distribution::Multimodal({{nan, 1.0}, {1.0, 2.0}}), IA);
  CHECK_THROWS(Distribution::Hyperexp({}), IA);
  CHECK_THROWS(Distribution::Empirical({{1.0, 0.0}}), IA);                                      // one point
  CHECK_THROWS(Distribution::Empirical({{1.0, 0.1}, {2.0, 1.0}}), IA);                          // starts above 0
  CHECK_THROWS(Distribution::Empirical({{1.0, 0.0}, {2.0, 0.9}}), IA);                          // ends below 1
  CHECK_THROWS(Distribution::Empirical({{2.0, 0.0}, {1.0, 1.0}}), IA);                          // values decrease
  CHECK_THROWS(Distribution::Empirical({{1.0, 0.0}, {2.0, 0.6}, {3.0, 0.5}, {4.0, 1.0}}), IA);  // probs decrease
  CHECK_THROWS(Distribution::Empirical({{-1.0, 0.0}, {2.0, 1.0}}), IA);                         // negative value
  CHECK_THROWS(Distribution::Empirical({{0.0, 0.0}, {0.0, 1.0}}), IA);                          // zero mean
  CHECK_THROWS(Distribution::Empirical({{1.0, 0.0}, {inf, 1.0}}), IA);
  // The message names the field (the config path handed in).
  CHECK(MessageContains([] { Distribution::Exp(-1.0, "service"); }, "service.mean_us"));
  CHECK(MessageContains([] { Distribution::Det(0.0, "svc"); }, "svc.value_us"));
  CHECK(MessageContains([] { Distribution::BoundedPareto(1.0, 3.0, 2.0, "s"); }, "s.high_us"));
  CHECK(MessageContains([] { Distribution::Multimodal({{0.5, 1.0}, {0.5, -2.0}}, "w"); }, "w.modes[1]"));
  CHECK(MessageContains([] { Distribution::Empirical({{1.0, 0.1}, {2.0, 1.0}}, "e"); }, "e.cdf[0]"));
}

}  // namespace

int main() {
  for (const Case& c : Cases()) {
    const long before = dcgym::check::Count().failures;
    TestClosedFormMoments(c);
    TestSampleMomentsAndClasses(c);
    TestScaledMultipliesEveryDraw(c);
    if (dcgym::check::Count().failures != before) std::fprintf(stderr, "  (in case %s)\n", c.name.c_str());
  }
  TestMixtureDetails();
  TestEmpiricalIsTheExactInverse();
  TestInvalidParametersThrow();
  return dcgym::check::Report("test_distribution");
}
