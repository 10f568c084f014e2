// Response-time quantiles of a multi-server FCFS queue with Poisson arrivals,
// in closed form: no per-request events.
//
// Service times S = shift + X, with X either absent (deterministic), one
// exponential phase (cv2 <= 1: a shifted exponential) or two balanced-means
// phases (cv2 > 1: H2). The request-level reference (the rack kernel in
// tests/cpp_core/colo) draws from exactly this distribution.
//
// The stationary wait W is 0 with probability 1 - k, else exponential with
// rate theta:
//   c >= 2: k = Erlang C, theta = 2 (c mu - lambda) / (1 + cv2) (Erlang C
//           for M/M/c, scaled as Allen-Cunneen / Kingman's heavy-traffic rate);
//   c == 1: the exact asymptotic tail of M/G/1, Cramer-Lundberg:
//           lambda (M_S(theta) - 1) = theta, k = (1 - rho) / (lambda M_S'(theta) - 1).
// The response quantile solves P(W + S > t) = 1 - q exactly for that W.
// Measured against the request-level simulation: within 7.5% for c in
// {1, 2, 6, 16, 36}, rho <= 0.9, cv2 in [0, 4] (docs/colo.md).
#pragma once

#include <cstdint>

namespace dcgym::colo {

struct ServiceShape {
  double shift = 0;      // deterministic part, s
  int phases = 0;        // exponential phases of X: 0, 1 or 2
  double p[2] = {0, 0};  // phase probabilities
  double m[2] = {0, 0};  // phase means, s

  // The two-moment fit used everywhere (mean > 0, cv2 >= 0).
  static ServiceShape FromMoments(double mean, double cv2);
  double Mean() const;
  double Cv2() const;
  ServiceShape Scaled(double factor) const;
};

struct WaitTail {
  double k = 0;      // P(W > 0)
  double theta = 0;  // decay rate of W given W > 0, 1/s
};

// Erlang C: probability of waiting in M/M/c with offered load a < c.
double ErlangC(uint32_t servers, double offered);

// The stationary wait of `servers` servers fed at `lambda` (< capacity).
WaitTail StationaryWait(uint32_t servers, double lambda, const ServiceShape& s);

// Smallest t with P(extra + W + S > t) <= 1 - q: W from `wait`, `extra` a
// deterministic wait (a fluid backlog ahead of the request). `guess` (> 0),
// a nearby answer, only speeds the search up.
double ResponseQuantile(const WaitTail& wait, const ServiceShape& s, double q, double extra = 0, double guess = 0);

// The stationary q-quantile of the response time; +infinity when
// lambda >= servers / mean (no stationary regime).
double StationaryQuantile(uint32_t servers, double lambda, const ServiceShape& s, double q, double guess = 0);

}  // namespace dcgym::colo
