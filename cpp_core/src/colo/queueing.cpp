#include "dcgym/colo/queueing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dcgym::colo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// P(E + Y > u) for E ~ Exp(theta), Y ~ Exp(rate r), u > 0, written so that
// r -> theta is stable: e^{-theta u} (1 - theta expm1(-(r - theta) u) / (r - theta)).
double ConvTail(double theta, double r, double u) {
  const double delta = r - theta;
  const double x = delta * u;
  const double ratio = std::fabs(x) < 1e-8 ? -u * (1.0 - 0.5 * x) : std::expm1(-x) / delta;
  return std::exp(-theta * u) * (1.0 - theta * ratio);
}

// Density of E + Y at u > 0: theta r e^{-theta u} (1 - e^{-(r - theta) u}) / (r - theta).
double ConvDensity(double theta, double r, double u) {
  const double delta = r - theta;
  const double x = delta * u;
  const double ratio = std::fabs(x) < 1e-8 ? u * (1.0 - 0.5 * x) : -std::expm1(-x) / delta;
  return theta * r * std::exp(-theta * u) * ratio;
}

// Tail F(u) = P(W + X > u) and its derivative, for u > 0.
struct Tail {
  double value, slope;
};

Tail TailOf(const WaitTail& w, const ServiceShape& s, double u) {
  double x_tail = 0, x_dens = 0, c_tail = 0, c_dens = 0;
  for (int i = 0; i < s.phases; ++i) {
    const double r = 1.0 / s.m[i];
    const double e = std::exp(-r * u);
    x_tail += s.p[i] * e;
    x_dens += s.p[i] * r * e;
    if (w.k > 0) {
      c_tail += s.p[i] * ConvTail(w.theta, r, u);
      c_dens += s.p[i] * ConvDensity(w.theta, r, u);
    }
  }
  return {(1 - w.k) * x_tail + w.k * c_tail, -((1 - w.k) * x_dens + w.k * c_dens)};
}

// Moment generating function of S and its derivative at eta (< the pole).
void Mgf(const ServiceShape& s, double eta, double* m, double* dm) {
  const double shift = std::exp(eta * s.shift);
  if (s.phases == 0) {
    *m = shift;
    *dm = s.shift * shift;
    return;
  }
  double sum = 0, dsum = 0;
  for (int i = 0; i < s.phases; ++i) {
    const double inv = 1.0 / (1.0 - eta * s.m[i]);
    sum += s.p[i] * inv;
    dsum += s.p[i] * s.m[i] * inv * inv;
  }
  *m = shift * sum;
  *dm = shift * (s.shift * sum + dsum);
}

// M/G/1: the positive root of g(eta) = ln M_S(eta) - ln(1 + eta / lambda)
// (g < 0 just above 0 when rho < 1, g -> +inf at the pole), by bisection
// safeguarded Newton.
WaitTail CramerLundberg(double lambda, const ServiceShape& s) {
  const double rho = lambda * s.Mean();
  double pole = kInf;
  for (int i = 0; i < s.phases; ++i) pole = std::min(pole, 1.0 / s.m[i]);
  auto g = [&](double eta, double* slope) {
    double m, dm;
    Mgf(s, eta, &m, &dm);
    *slope = dm / m - 1.0 / (lambda + eta);
    return std::log(m) - std::log1p(eta / lambda);
  };
  double lo = 0, hi;
  double slope;
  if (std::isfinite(pole)) {
    hi = pole;
  } else {  // deterministic service: no pole, double until g > 0
    hi = 2.0 / s.Mean();
    while (g(hi, &slope) < 0) hi *= 2;
  }
  // Start inside: the heavy-traffic rate is a good first guess.
  double eta = std::min(2 * (1 - rho) / (s.Mean() * (1 + s.Cv2())), 0.5 * (lo + hi));
  if (!(eta > lo && eta < hi)) eta = 0.5 * (lo + hi);
  for (int it = 0; it < 200; ++it) {
    const double v = g(eta, &slope);
    if (v < 0)
      lo = eta;
    else
      hi = eta;
    double next = eta - v / slope;
    if (std::fabs(next - eta) <= 1e-10 * eta) {  // Newton's last, tiny step
      eta = next;
      break;
    }
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    eta = next;
    if (hi - lo <= 1e-13 * hi) break;
  }
  double m, dm;
  Mgf(s, eta, &m, &dm);
  const double k = std::clamp((1 - rho) / (lambda * dm - 1), 0.0, 1.0);
  return {k, eta};
}

}  // namespace

ServiceShape ServiceShape::FromMoments(double mean, double cv2) {
  ServiceShape s;
  if (cv2 <= 0) {
    s.shift = mean;
  } else if (cv2 <= 1) {
    // Shifted exponential: cv2 = m^2 / mean^2.
    s.phases = 1;
    s.p[0] = 1;
    s.m[0] = mean * std::sqrt(cv2);
    s.shift = mean - s.m[0];
  } else {
    // H2 with balanced means (p1 m1 = p2 m2): the usual two-moment fit.
    const double r = std::sqrt((cv2 - 1) / (cv2 + 1));
    s.phases = 2;
    s.p[0] = 0.5 * (1 + r);
    s.p[1] = 1 - s.p[0];
    s.m[0] = mean / (2 * s.p[0]);
    s.m[1] = mean / (2 * s.p[1]);
  }
  return s;
}

double ServiceShape::Mean() const {
  double mean = shift;
  for (int i = 0; i < phases; ++i) mean += p[i] * m[i];
  return mean;
}

double ServiceShape::Cv2() const {
  const double mean = Mean();
  double second_x = 0, mean_x = 0;
  for (int i = 0; i < phases; ++i) {
    mean_x += p[i] * m[i];
    second_x += 2 * p[i] * m[i] * m[i];
  }
  const double var = second_x - mean_x * mean_x;
  return var / (mean * mean);
}

ServiceShape ServiceShape::Scaled(double factor) const {
  ServiceShape s = *this;
  s.shift *= factor;
  s.m[0] *= factor;
  s.m[1] *= factor;
  return s;
}

double ErlangC(uint32_t servers, double offered) {
  // Erlang B by the stable recursion B(k) = a B(k-1) / (k + a B(k-1)).
  double b = 1.0;
  for (uint32_t k = 1; k <= servers; ++k) b = offered * b / (k + offered * b);
  const double rho = offered / servers;
  return b / (1.0 - rho + rho * b);
}

WaitTail StationaryWait(uint32_t servers, double lambda, const ServiceShape& s) {
  if (lambda <= 0) return {0, 0};
  if (servers == 1) return CramerLundberg(lambda, s);
  const double mean = s.Mean();
  const double k = ErlangC(servers, lambda * mean);
  return {k, 2 * (servers / mean - lambda) / (1 + s.Cv2())};
}

double ResponseQuantile(const WaitTail& w, const ServiceShape& s, double q, double extra, double hint) {
  const double target = 1 - q;
  double u;
  if (s.phases == 0) {
    // S is deterministic: T = shift + W, an atom at W = 0.
    u = w.k <= target ? 0.0 : std::log(w.k / target) / w.theta;
  } else {
    // Solve ln F(u) = ln(1 - q) by Newton on the log tail (nearly linear in u
    // far out), safeguarded by a bracket [lo, hi] that widens until it holds
    // the root. Newton converges quadratically, so a step below 1e-8 u leaves
    // an error far below 1e-12 and ends the search.
    const double log_target = std::log(target);
    double m_max = std::max(s.m[0], s.m[1]);
    u = m_max * std::log(1 / target);
    if (w.k > target) u = std::max(u, std::log(w.k / target) / w.theta);
    const double near = hint - s.shift - extra;  // the hint's u
    if (near > 0) u = near;
    double lo = 0, hi = kInf;
    for (int it = 0; it < 200; ++it) {
      const Tail t = TailOf(w, s, u);
      if (t.value > target)
        lo = u;
      else
        hi = u;
      double next = t.value > 0 ? u - (std::log(t.value) - log_target) * t.value / t.slope : 0.5 * (lo + u);
      if (std::fabs(next - u) <= 1e-8 * u) {  // converged (a last step this small may touch the bracket)
        u = next;
        break;
      }
      if (!(next > lo && next < hi) || !std::isfinite(next)) next = std::isfinite(hi) ? 0.5 * (lo + hi) : 2 * u;
      u = next;
      if (std::isfinite(hi) && hi - lo <= 1e-13 * hi) break;
    }
  }
  return s.shift + extra + u;
}

double StationaryQuantile(uint32_t servers, double lambda, const ServiceShape& s, double q, double guess) {
  if (servers == 0) return kInf;
  if (lambda * s.Mean() >= servers) return kInf;
  return ResponseQuantile(StationaryWait(servers, lambda, s), s, q, 0, guess);
}

}  // namespace dcgym::colo
