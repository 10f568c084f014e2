#include "dcgym/kernel/distribution.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "dcgym/kernel/check.hpp"

namespace dcgym::kernel {
namespace {

void RequirePositiveFinite(double v, const std::string& field) {
  if (!(v > 0) || !std::isfinite(v)) Fail(field, "must be a positive finite number, got " + Str(v));
}

// Validates (probability, value) pairs and returns the cumulative probabilities.
std::vector<double> MixtureCumulative(const std::vector<std::pair<double, double>>& parts, const std::string& field,
                                      const char* value_name) {
  if (parts.empty()) Fail(field, "needs at least one component");
  std::vector<double> cum;
  double total = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const auto& [p, v] = parts[k];
    if (!(p >= 0) || !std::isfinite(p))
      Fail(field + "[" + std::to_string(k) + "]", "probability must be in [0, 1], got " + Str(p));
    RequirePositiveFinite(v, field + "[" + std::to_string(k) + "]." + value_name);
    total += p;
    cum.push_back(total);
  }
  if (std::fabs(total - 1.0) > 1e-6) Fail(field, "probabilities must sum to 1, got " + Str(total));
  for (auto& c : cum) c /= total;
  cum.back() = 1.0;
  return cum;
}

}  // namespace

Distribution Distribution::Exp(double mean, const std::string& field) {
  RequirePositiveFinite(mean, field + ".mean_us");
  Distribution d;
  d.kind_ = Kind::kExp;
  d.mean_ = mean;
  d.ComputeMoments();
  return d;
}

Distribution Distribution::Det(double value, const std::string& field) {
  RequirePositiveFinite(value, field + ".value_us");
  Distribution d;
  d.kind_ = Kind::kDet;
  d.a_ = value;
  d.ComputeMoments();
  return d;
}

Distribution Distribution::Multimodal(const std::vector<std::pair<double, double>>& modes, const std::string& field) {
  Distribution d;
  d.kind_ = Kind::kMultimodal;
  d.cumulative_ = MixtureCumulative(modes, field + ".modes", "value_us");
  for (const auto& m : modes) d.values_.push_back(m.second);
  d.ComputeMoments();
  return d;
}

Distribution Distribution::Hyperexp(const std::vector<std::pair<double, double>>& phases, const std::string& field) {
  Distribution d;
  d.kind_ = Kind::kHyperexp;
  d.cumulative_ = MixtureCumulative(phases, field + ".phases", "mean_us");
  for (const auto& m : phases) d.values_.push_back(m.second);
  d.ComputeMoments();
  return d;
}

Distribution Distribution::Lognormal(double mean, double sigma, const std::string& field) {
  RequirePositiveFinite(mean, field + ".mean_us");
  RequirePositiveFinite(sigma, field + ".sigma");
  if (sigma > 10) Fail(field + ".sigma", "must be at most 10, got " + Str(sigma));
  Distribution d;
  d.kind_ = Kind::kLognormal;
  d.a_ = std::log(mean) - 0.5 * sigma * sigma;  // mu of the underlying normal
  d.b_ = sigma;
  d.ComputeMoments();
  return d;
}

Distribution Distribution::BoundedPareto(double alpha, double low, double high, const std::string& field) {
  RequirePositiveFinite(alpha, field + ".alpha");
  RequirePositiveFinite(low, field + ".low_us");
  RequirePositiveFinite(high, field + ".high_us");
  if (!(high > low)) Fail(field + ".high_us", "must exceed low_us (" + Str(low) + "), got " + Str(high));
  Distribution d;
  d.kind_ = Kind::kBoundedPareto;
  d.a_ = alpha;
  d.b_ = low;
  d.c_ = high;
  d.ComputeMoments();
  return d;
}

Distribution Distribution::Empirical(const std::vector<std::pair<double, double>>& cdf, const std::string& field) {
  const std::string f = field + ".cdf";
  if (cdf.size() < 2) Fail(f, "needs at least two (value, probability) points");
  Distribution d;
  d.kind_ = Kind::kEmpirical;
  for (size_t k = 0; k < cdf.size(); ++k) {
    const auto& [x, p] = cdf[k];
    const std::string fk = f + "[" + std::to_string(k) + "]";
    if (!(x >= 0) || !std::isfinite(x)) Fail(fk, "value must be finite and >= 0, got " + Str(x));
    if (!(p >= 0 && p <= 1)) Fail(fk, "probability must be in [0, 1], got " + Str(p));
    if (k > 0 && (x < cdf[k - 1].first || p < cdf[k - 1].second))
      Fail(fk, "points must be non-decreasing in value and probability");
    d.points_.push_back(x);
    d.cumulative_.push_back(p);
  }
  if (d.cumulative_.front() != 0.0) Fail(f + "[0]", "probability must be 0 at the first point");
  if (d.cumulative_.back() != 1.0) Fail(f, "probability must reach 1 at the last point");
  const size_t last = d.cumulative_.size() - 2;  // the last segment
  size_t lo = 0;
  for (size_t k = 0; k < kGuide; ++k) {
    const double edge = static_cast<double>(k) / kGuide;
    while (lo < last && d.cumulative_[lo + 1] <= edge) ++lo;
    d.guide_.push_back(static_cast<uint32_t>(lo));
  }
  d.ComputeMoments();
  if (!(d.mean_ > 0)) Fail(f, "the distribution must have a positive mean");
  return d;
}

double Distribution::DrawSlow(Rng& rng) const {
  switch (kind_) {
    case Kind::kLognormal: {
      // Box-Muller; one normal per draw keeps the stream stateless.
      const double u1 = rng.UniformOpen0(), u2 = rng.Uniform();
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      return std::exp(a_ + b_ * z);
    }
    case Kind::kBoundedPareto: {
      const double u = rng.Uniform();
      const double ratio = std::pow(b_ / c_, a_);
      return b_ / std::pow(1.0 - u * (1.0 - ratio), 1.0 / a_);
    }
    default: return 0.0;  // unreachable: the other kinds are handled inline
  }
}

void Distribution::ComputeMoments() {
  switch (kind_) {
    case Kind::kExp: second_moment_ = 2 * mean_ * mean_; break;
    case Kind::kDet:
      mean_ = a_;
      second_moment_ = a_ * a_;
      break;
    case Kind::kMultimodal:
    case Kind::kHyperexp: {
      const double m2_factor = kind_ == Kind::kHyperexp ? 2.0 : 1.0;
      mean_ = second_moment_ = 0;
      for (size_t k = 0; k < values_.size(); ++k) {
        const double p = ClassProbability(static_cast<uint32_t>(k));
        mean_ += p * values_[k];
        second_moment_ += p * m2_factor * values_[k] * values_[k];
      }
      break;
    }
    case Kind::kLognormal:
      mean_ = std::exp(a_ + 0.5 * b_ * b_);
      second_moment_ = std::exp(2 * a_ + 2 * b_ * b_);
      break;
    case Kind::kBoundedPareto: {
      // E[X^k] = alpha L^alpha / (1 - (L/H)^alpha) * integral_L^H x^(k - alpha - 1) dx.
      const double alpha = a_, lo = b_, hi = c_;
      const double norm = alpha * std::pow(lo, alpha) / (1.0 - std::pow(lo / hi, alpha));
      auto moment = [&](double k) {
        const double e = k - alpha;
        if (std::fabs(e) < 1e-12) return norm * std::log(hi / lo);
        return norm * (std::pow(hi, e) - std::pow(lo, e)) / e;
      };
      mean_ = moment(1);
      second_moment_ = moment(2);
      break;
    }
    case Kind::kEmpirical:
      mean_ = second_moment_ = 0;
      for (size_t k = 1; k < points_.size(); ++k) {
        const double p = cumulative_[k] - cumulative_[k - 1];
        const double x0 = points_[k - 1], x1 = points_[k];
        mean_ += p * 0.5 * (x0 + x1);
        second_moment_ += p * (x0 * x0 + x0 * x1 + x1 * x1) / 3.0;
      }
      break;
  }
}

double Distribution::ClassProbability(uint32_t k) const {
  if (values_.empty()) return 1.0;
  return cumulative_[k] - (k == 0 ? 0.0 : cumulative_[k - 1]);
}

Distribution Distribution::Scaled(double factor) const {
  Distribution d = *this;
  switch (kind_) {
    case Kind::kExp: d.mean_ *= factor; break;
    case Kind::kDet: d.a_ *= factor; break;
    case Kind::kMultimodal:
    case Kind::kHyperexp:
      for (auto& v : d.values_) v *= factor;
      break;
    case Kind::kLognormal: d.a_ += std::log(factor); break;
    case Kind::kBoundedPareto:
      d.b_ *= factor;
      d.c_ *= factor;
      break;
    case Kind::kEmpirical:
      for (auto& x : d.points_) x *= factor;
      break;
  }
  d.ComputeMoments();
  return d;
}

}  // namespace dcgym::kernel
