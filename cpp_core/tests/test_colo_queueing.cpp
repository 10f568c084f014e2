// The colo model's queueing formulas against exact results: Erlang C,
// M/M/1 and M/M/c response-time quantiles (exact for exponential service),
// the M/G/1 Cramer-Lundberg root, and the two-moment service shapes.
#include <cmath>
#include <limits>

#include "check.hpp"
#include "dcgym/colo/queueing.hpp"

using namespace dcgym::colo;

namespace {

// P(W + S > t) by numerical integration over W's density (Simpson, fine
// grid): an independent check of ResponseQuantile's tail for one phase.
double TailByIntegration(const WaitTail& w, double mean, double t) {
  auto s_tail = [&](double x) { return x <= 0 ? 1.0 : std::exp(-x / mean); };
  double integral = 0;
  const int n = 200000;
  const double h = t / n;
  for (int k = 0; k <= n; ++k) {
    const double x = k * h;
    const double f = w.theta * std::exp(-w.theta * x) * s_tail(t - x);
    integral += f * (k == 0 || k == n ? 1 : (k % 2 ? 4 : 2));
  }
  integral *= h / 3;
  const double beyond = std::exp(-w.theta * t);  // W > t alone
  return (1 - w.k) * s_tail(t) + w.k * (integral + beyond);
}

void ErlangCValues() {
  CHECK_NEAR(ErlangC(1, 0.7), 0.7, 1e-15);        // M/M/1: P(wait) = rho
  CHECK_NEAR(ErlangC(2, 1.0), 1.0 / 3.0, 1e-15);  // a^2 / (2 + 2a - ... ) closed form
  CHECK_NEAR(ErlangC(3, 2.4), 0.6472, 5e-5);      // tabulated (c = 3, rho = 0.8)
  CHECK(ErlangC(36, 18.0) < 1e-3);
}

void MM1QuantileIsExact() {
  // M/M/1: T ~ Exp(mu - lambda), so t_q = ln(1 / (1 - q)) / (mu - lambda).
  const double mean = 0.002, lambda = 400;
  const ServiceShape s = ServiceShape::FromMoments(mean, 1.0);
  for (double q : {0.5, 0.95, 0.99, 0.999}) {
    const double expected = std::log(1 / (1 - q)) / (1 / mean - lambda);
    CHECK_NEAR(StationaryQuantile(1, lambda, s, q), expected, 1e-9 * expected);
  }
}

void MMcTailMatchesIntegration() {
  for (uint32_t c : {2u, 6u, 16u}) {
    for (double rho : {0.3, 0.8, 0.95}) {
      const double mean = 1.0, lambda = rho * c / mean;
      const ServiceShape s = ServiceShape::FromMoments(mean, 1.0);
      const WaitTail w = StationaryWait(c, lambda, s);
      CHECK_NEAR(w.theta, c / mean - lambda, 1e-12);  // exact M/M/c conditional wait rate
      const double t = ResponseQuantile(w, s, 0.99);
      CHECK_NEAR(TailByIntegration(w, mean, t), 0.01, 1e-6);
    }
  }
}

void CramerLundbergRoot() {
  // M/D/1: lambda (e^{eta s} - 1) = eta and k = (1 - rho) / (lambda s e^{eta s} - 1).
  const double s = 1.0, lambda = 0.6;
  const ServiceShape d = ServiceShape::FromMoments(s, 0.0);
  const WaitTail w = StationaryWait(1, lambda, d);
  CHECK_NEAR(lambda * (std::exp(w.theta * s) - 1), w.theta, 1e-9);
  CHECK_NEAR(w.k, (1 - lambda * s) / (lambda * s * std::exp(w.theta * s) - 1), 1e-9);
  // M/M/1 through the same route gives the exact rate and P(wait).
  const WaitTail e = StationaryWait(1, lambda, ServiceShape::FromMoments(s, 1.0));
  CHECK_NEAR(e.theta, 1 / s - lambda, 1e-9);
  CHECK_NEAR(e.k, lambda * s, 1e-9);
}

void ShapesHaveTheirMoments() {
  for (double cv2 : {0.0, 0.05, 0.25, 1.0, 2.0, 4.0, 16.0}) {
    const ServiceShape s = ServiceShape::FromMoments(3.0, cv2);
    CHECK_NEAR(s.Mean(), 3.0, 1e-12);
    CHECK_NEAR(s.Cv2(), cv2, 1e-12);
    CHECK_NEAR(s.Scaled(2.0).Mean(), 6.0, 1e-12);
    CHECK_NEAR(s.Scaled(2.0).Cv2(), cv2, 1e-12);
  }
}

void QuantileGrowsWithLoadAndDiverges() {
  const ServiceShape s = ServiceShape::FromMoments(1.0, 0.5);
  double last = 0;
  for (double rho = 0.1; rho < 0.99; rho += 0.1) {
    const double t = StationaryQuantile(4, 4 * rho, s, 0.99);
    CHECK(t > last);
    last = t;
  }
  CHECK(std::isinf(StationaryQuantile(4, 4.0, s, 0.99)));
  CHECK(std::isinf(StationaryQuantile(0, 1.0, s, 0.99)));
  // No load: the quantile of the service time alone (shifted exponential).
  const double alone = StationaryQuantile(4, 0.0, s, 0.99);
  CHECK_NEAR(alone, s.shift + s.m[0] * std::log(100.0), 1e-9);
  // Deterministic service, light load: P(wait) < 1% so the quantile is the service time.
  CHECK_NEAR(StationaryQuantile(8, 1.0, ServiceShape::FromMoments(1.0, 0.0), 0.99), 1.0, 1e-12);
}

void BacklogAddsItsWait() {
  const ServiceShape s = ServiceShape::FromMoments(1.0, 1.0);
  const WaitTail w = StationaryWait(2, 1.0, s);
  CHECK_NEAR(ResponseQuantile(w, s, 0.99, 5.0), ResponseQuantile(w, s, 0.99) + 5.0, 1e-9);
}

}  // namespace

int main() {
  ErlangCValues();
  MM1QuantileIsExact();
  MMcTailMatchesIntegration();
  CramerLundbergRoot();
  ShapesHaveTheirMoments();
  QuantileGrowsWithLoadAndDiverges();
  BacklogAddsItsWait();
  return dcgym::check::Report("colo_queueing");
}
