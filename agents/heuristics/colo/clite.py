"""CLITE (Patel, Tiwari, HPCA'20): Bayesian optimisation of the partition of cores and ways (and bandwidth).

CLITE samples partitions one after another, each observed for ``sample_s``
(2 s, §4), and fits a Gaussian process to their scores to choose the next:

- **Resources and units**: logical cores and LLC ways (and MBA in 10% units
  where the platform has it); every service gets at least one unit of each.
- **Bootstrap**: an equal partition, then one per service giving it the most
  with one unit to each other (N + 1 samples, §4.3).
- **Score** (Eq. 3): while some service misses its target, 0.5 x the geometric
  mean over services of min(1, target / p99); once all meet it, 0.5 + 0.5 x
  the background jobs' performance, and with no background job (the case
  here) that is 1.
- **Surrogate**: scikit-learn's ``GaussianProcessRegressor`` with a Matérn
  kernel (nu = 1.5, length scale 1), ``alpha`` 1e-5, normalised targets and
  10 optimizer restarts, on the allocations as fractions of each resource, as
  CLITE's code sets it.
- **Acquisition**: expected improvement with xi = 0.01, maximised by SLSQP
  over the continuous relaxation (each resource's units sum to the total,
  every share between 1 and total - N + 1) from ``starts`` points, a quarter
  of them *dropout-copy* starts that keep the best-scoring service's share of
  the best sample; rounded to whole units keeping each total. A repeated
  sample is replaced by shrinking every service that met its target by one
  unit in favour of the worst one.
- **Stop**: the best score reaches 0.99, the largest expected improvement
  falls below 0.01^N (CLITE's code), or ``max_samples`` (100) were taken;
  then the best sample is applied and held. A change of the running services
  (or of a load by more than 10%) starts a new search.

In the colo model's ``online`` mode a sample inherits the queue its
predecessor left (OSML §6.2); in ``fresh`` mode every sample starts empty, as
CLITE's own evaluation relaunches the services for each sample.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy import optimize
from scipy.linalg import solve_triangular
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import Matern
from threadpoolctl import threadpool_limits

from dcgym.agents.heuristics.colo.base import Scheduler, equal_split
from dcgym.envs.colo.server import ColoServer
from dcgym.envs.error import InvalidConfigError

__all__ = ["Clite", "Posterior", "round_shares", "score"]

XI = 0.01
"""Expected improvement's exploration margin (CLITE's code: zeta = 0.01)."""

MBA_UNITS = 10
"""MBA is set in 10% steps (CLITE §5)."""


def score(latency_ms: np.ndarray, qos_ms: np.ndarray) -> float:
    """CLITE's Eq. 3 without background jobs: 0.5 x geomean(min(1, target / p99)) while one misses, else 1."""
    ratio = np.minimum(1.0, qos_ms / np.maximum(latency_ms, 1e-12))
    if np.all(latency_ms <= qos_ms):
        return 1.0
    return 0.5 * float(np.exp(np.mean(np.log(np.maximum(ratio, 1e-300)))))


def round_shares(x: np.ndarray, total: int) -> np.ndarray:
    """Continuous shares (each >= 1) as whole units summing to ``total``, by largest remainder."""
    base = np.maximum(np.floor(x).astype(np.int64), 1)
    while base.sum() > total:
        base[np.argmax(base)] -= 1
    remainder = x - np.floor(x)
    for j in np.argsort(-remainder, kind="stable"):
        if base.sum() >= total:
            break
        base[j] += 1
    while base.sum() < total:
        base[np.argmin(base)] += 1
    return base


class Clite(Scheduler):
    """CLITE's controller (module docstring)."""

    name = "clite"
    PARAMS = {
        "interval_s": "seconds each sample is observed (2, §4)",
        "max_samples": "samples at most before the best is kept (100)",
        "starts": "SLSQP starting points per acquisition (8; a quarter dropout-copy)",
        "restarts": "restarts of the GP's kernel optimiser (10, CLITE's code)",
        "stop_score": "the search stops once the best score reaches this (0.99)",
    }
    interval_s = 2.0

    def __init__(
        self,
        interval_s: float | None = None,
        max_samples: int = 100,
        starts: int = 8,
        restarts: int = 10,
        stop_score: float = 0.99,
    ) -> None:
        super().__init__(interval_s)
        for name, v, low in (("max_samples", max_samples, 1), ("starts", starts, 1), ("restarts", restarts, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InvalidConfigError(name, v, f"an integer >= {low}")
        if not (isinstance(stop_score, (int, float)) and 0 < stop_score <= 1):
            raise InvalidConfigError("stop_score", stop_score, "a score in (0, 1]")
        self.max_samples, self.starts, self.restarts = max_samples, starts, restarts
        self.stop_score = float(stop_score)

    def reset(self, server: ColoServer, rng: np.random.Generator) -> None:
        super().reset(server, rng)
        self._rps = np.zeros(server.num_services)
        self.searches = 0
        self._new_search(server)
        self.members = np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------------ the loop

    def act(self, server: ColoServer) -> None:
        rps = np.where(server.running, server.rps, 0.0)
        changed = self.arrivals(server) or np.any(np.abs(rps - self._rps) > 0.1 * np.maximum(self._rps, 1e-9))
        if changed:
            self._rps = rps
            self._new_search(server)
            if len(self.members):
                self._apply(server, self._next(server))
            return
        if not len(self.members) or self.done:
            return
        self.X.append(self.current)
        lat = server.latency_ms[self.members]
        self.Y.append(score(lat, server.qos_ms[self.members]))
        self.met.append(lat <= server.qos_ms[self.members])
        best = int(np.argmax(self.Y))
        if self.Y[best] >= self.stop_score or len(self.Y) >= self.max_samples:
            self._finish(server)
            return
        nxt = self._next(server)
        if nxt is None:
            self._finish(server)
            return
        self._apply(server, nxt)

    def _new_search(self, server: ColoServer) -> None:
        self.members = np.flatnonzero(server.running)
        self.X: list[np.ndarray] = []
        self.Y: list[float] = []
        self.met: list[np.ndarray] = []
        self.done = False
        self.current: np.ndarray | None = None
        self.searches += 1
        m = len(self.members)
        self.totals = [server.total_cores, server.total_ways]
        if server.mba_available:
            self.totals.append(MBA_UNITS)
        self.bootstrap = []
        if m:
            running = np.ones(m, dtype=bool)
            self.bootstrap.append(np.concatenate([equal_split(t, running) for t in self.totals]))
            for j in range(m):
                parts = []
                for t in self.totals:
                    share = np.ones(m, dtype=np.int64)
                    share[j] = t - (m - 1)
                    parts.append(share)
                self.bootstrap.append(np.concatenate(parts))

    def _finish(self, server: ColoServer) -> None:
        self.done = True
        self._apply(server, self.X[int(np.argmax(self.Y))])

    def _apply(self, server: ColoServer, x: np.ndarray) -> None:
        m = len(self.members)
        self.current = x
        cores = np.zeros(server.num_services, dtype=np.int64)
        ways = np.zeros(server.num_services, dtype=np.int64)
        cores[self.members], ways[self.members] = x[:m], x[m : 2 * m]
        mba = None
        if len(x) > 2 * m:  # the platform has MBA: shares in 10% units of the peak bandwidth
            mba = np.ones(server.num_services)
            mba[self.members] = x[2 * m :] / MBA_UNITS
        server.allocate(cores, ways, mba=mba)

    # ------------------------------------------------------------------ Bayesian optimisation

    def _next(self, server: ColoServer) -> np.ndarray | None:
        """The next sample: the bootstrap's next, else the rounded maximiser of expected improvement."""
        if len(self.X) < len(self.bootstrap):
            return self.bootstrap[len(self.X)]
        m, totals = len(self.members), self.totals
        if any(t < m for t in totals):
            return None
        scale = np.repeat(np.asarray(totals, dtype=np.float64), m)
        X = np.asarray(self.X, dtype=np.float64) / scale
        y = np.asarray(self.Y)
        gp = GaussianProcessRegressor(
            kernel=Matern(length_scale=1.0, nu=1.5),
            alpha=1e-5,
            normalize_y=True,
            n_restarts_optimizer=self.restarts,
            random_state=int(self.rng.integers(2**31)),
        )
        with warnings.catch_warnings(), threadpool_limits(1):  # BLAS threads only slow matrices this small
            warnings.simplefilter("ignore", ConvergenceWarning)
            gp.fit(X, y)
        posterior = Posterior(gp)
        best_y = float(y.max())

        def neg_ei(z: np.ndarray) -> float:
            mu, sigma = posterior(z / scale)
            return -_expected_improvement(mu, sigma, best_y)

        constraints = [
            {"type": "eq", "fun": (lambda z, r=r: z[r * m : (r + 1) * m].sum() - totals[r])} for r in range(len(totals))
        ]
        bounds = [(1.0, t - m + 1.0) for t in totals for _ in range(m)]
        best_x, best_ei = None, -np.inf
        top = self.X[int(np.argmax(y))]
        keep = int(np.argmax(np.where(self.met[int(np.argmax(y))], 1, 0)))  # the best sample's best-served job
        for k in range(self.starts):
            z0 = np.concatenate([t * self.rng.dirichlet(np.ones(m)) for t in totals])
            z0 = np.clip(z0, 1.0, None)
            if k % 4 == 0:  # dropout-copy: hold that job at its best share
                for r in range(len(totals)):
                    z0[r * m + keep] = top[r * m + keep]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                res = optimize.minimize(
                    neg_ei, z0, method="SLSQP", bounds=bounds, constraints=constraints, options={"maxiter": 50}
                )
            if -res.fun > best_ei:
                best_ei, best_x = float(-res.fun), res.x
        if best_ei < XI**m:  # CLITE's code: stop once no sample is expected to improve by 0.01^N
            return None
        x = np.concatenate([round_shares(best_x[r * m : (r + 1) * m], t) for r, t in enumerate(totals)])
        if any(np.array_equal(x, s) for s in self.X):
            x = self._shrink_met(x)
        return x

    def _shrink_met(self, x: np.ndarray) -> np.ndarray:
        """A repeated sample: every job that met its target in the best sample gives one unit to the worst one."""
        m = len(self.members)
        best = int(np.argmax(self.Y))
        met = self.met[best]
        worst = int(np.argmin(np.where(met, np.inf, 0.0))) if not met.all() else int(self.rng.integers(m))
        x = x.copy()
        for r in range(len(self.totals)):
            part = x[r * m : (r + 1) * m]
            for j in range(m):
                if met[j] and j != worst and part[j] > 1:
                    part[j] -= 1
                    part[worst] += 1
        return x


class Posterior:
    """The posterior mean and standard deviation of a fitted ``GaussianProcessRegressor`` with a bare Matérn
    kernel (nu = 1.5) at one point: ``GaussianProcessRegressor.predict(x, return_std=True)``'s formulas without
    its per-call checks, which dominate when SLSQP asks a few thousand times per sample (a test checks both
    agree)."""

    def __init__(self, gp: GaussianProcessRegressor) -> None:
        kernel = gp.kernel_
        if not isinstance(kernel, Matern) or kernel.nu != 1.5:
            raise ValueError(f"Posterior needs a bare Matern(nu=1.5) kernel, got {kernel}")
        self.length = np.asarray(kernel.length_scale, dtype=np.float64)
        self.X = np.asarray(gp.X_train_, dtype=np.float64) / self.length
        self.alpha = np.ravel(gp.alpha_)
        self.L = gp.L_
        self.mean, self.std = float(np.ravel(gp._y_train_mean)[0]), float(np.ravel(gp._y_train_std)[0])

    def __call__(self, x: np.ndarray) -> tuple[float, float]:
        """(mean, standard deviation) of the posterior at ``x`` (one point, in the training inputs' scale)."""
        d = np.sqrt(((self.X - np.asarray(x, dtype=np.float64) / self.length) ** 2).sum(axis=1)) * math.sqrt(3.0)
        k = (1.0 + d) * np.exp(-d)
        mean = self.std * float(k @ self.alpha) + self.mean
        v = solve_triangular(self.L, k, lower=True, check_finite=False)
        var = max(1.0 - float(v @ v), 0.0) * self.std**2
        return mean, math.sqrt(var)


def _expected_improvement(mu: float, sigma: float, best: float) -> float:
    """EI of a maximisation at (mu, sigma) over ``best`` with margin XI."""
    gain = mu - best - XI
    if sigma <= 1e-12:
        return max(gain, 0.0)
    z = gain / sigma
    cdf = 0.5 * math.erfc(-z / math.sqrt(2.0))
    pdf = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return gain * cdf + sigma * pdf
