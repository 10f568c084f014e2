// Service-time (or size) distributions.
//
// Every distribution samples a value and a class: the index of the mixture
// component that produced it (the mode of `multimodal`, the phase of
// `hyperexp`; 0 otherwise). Classes let the engine report statistics per
// task kind, e.g. E[T | S = x] under processor sharing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dcgym/kernel/rng.hpp"

namespace dcgym::kernel {

struct Sample {
  double value;
  uint32_t cls;
};

class Distribution {
 public:
  enum class Kind { kExp, kDet, kMultimodal, kHyperexp, kLognormal, kBoundedPareto, kEmpirical };

  // Factories; each validates its parameters and throws std::invalid_argument
  // naming `field` (the config path of the distribution) on bad input.
  static Distribution Exp(double mean, const std::string& field = "service");
  static Distribution Det(double value, const std::string& field = "service");
  // (probability, value) pairs; probabilities must sum to 1 within 1e-6.
  static Distribution Multimodal(const std::vector<std::pair<double, double>>& modes,
                                 const std::string& field = "service");
  // (probability, phase mean) pairs.
  static Distribution Hyperexp(const std::vector<std::pair<double, double>>& phases,
                               const std::string& field = "service");
  // Log-normal with the given mean and shape sigma (of the underlying normal).
  static Distribution Lognormal(double mean, double sigma, const std::string& field = "service");
  // Pareto with shape alpha truncated to [low, high].
  static Distribution BoundedPareto(double alpha, double low, double high, const std::string& field = "service");
  // Piecewise-linear CDF through (value, cumulative probability) points:
  // values non-decreasing, probabilities non-decreasing from 0 to 1.
  static Distribution Empirical(const std::vector<std::pair<double, double>>& cdf,
                                const std::string& field = "service");

  Sample Draw(Rng& rng) const {
    switch (kind_) {
      case Kind::kExp: return {mean_ * rng.Exp1(), 0};
      case Kind::kDet: return {a_, 0};
      case Kind::kMultimodal: {
        const uint32_t k = PickComponent(rng);
        return {values_[k], k};
      }
      case Kind::kHyperexp: {
        const uint32_t k = PickComponent(rng);
        return {values_[k] * rng.Exp1(), k};
      }
      case Kind::kEmpirical: return {DrawEmpirical(rng.Uniform()), 0};
      default: return {DrawSlow(rng), 0};
    }
  }

  Kind kind() const { return kind_; }
  double Mean() const { return mean_; }
  double SecondMoment() const { return second_moment_; }
  // Number of classes Draw() can return.
  uint32_t NumClasses() const { return values_.empty() ? 1 : static_cast<uint32_t>(values_.size()); }
  // Mean of the values of class k (the mode value, or the phase mean).
  double ClassMean(uint32_t k) const { return values_.empty() ? mean_ : values_[k]; }
  double ClassProbability(uint32_t k) const;
  // Same distribution with every value multiplied by `factor` (> 0).
  Distribution Scaled(double factor) const;

 private:
  Distribution() = default;
  uint32_t PickComponent(Rng& rng) const {
    const double u = rng.Uniform();
    const uint32_t last = static_cast<uint32_t>(cumulative_.size()) - 1;
    for (uint32_t k = 0; k < last; ++k)
      if (u < cumulative_[k]) return k;
    return last;
  }
  // The piecewise-linear CDF's inverse at u: the segment [lo, lo + 1] with F[lo] <= u < F[lo + 1] (the last
  // point with F <= u; F ends at 1 > u), as a binary search finds it, but starting from the segment of the
  // lower edge of u's guide cell (the same one unless a point falls inside the cell), then interpolated.
  double DrawEmpirical(double u) const {
    size_t lo = guide_[static_cast<size_t>(u * kGuide)];
    while (cumulative_[lo + 1] <= u) ++lo;
    const double f0 = cumulative_[lo], f1 = cumulative_[lo + 1];
    const double t = f1 > f0 ? (u - f0) / (f1 - f0) : 0.0;
    return points_[lo] + t * (points_[lo + 1] - points_[lo]);
  }
  double DrawSlow(Rng& rng) const;
  void ComputeMoments();

  Kind kind_ = Kind::kExp;
  double mean_ = 0, second_moment_ = 0;
  double a_ = 0, b_ = 0, c_ = 0;         // kind-specific parameters
  std::vector<double> values_;           // component values or means (mixtures)
  std::vector<double> cumulative_;       // cumulative component probabilities (mixtures, empirical)
  std::vector<double> points_;           // empirical CDF x values
  static constexpr size_t kGuide = 256;  // a power of two: u * kGuide < kGuide exactly for u < 1
  std::vector<uint32_t> guide_;          // empirical: guide_[k], the segment holding k / kGuide
};

}  // namespace dcgym::kernel
