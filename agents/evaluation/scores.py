"""Normalised scores of evaluation runs and their aggregates with intervals.

A run's score puts its headline metric (:attr:`EvaluationFamily.headline`) between a named reference, which scores
0, and a top, which scores 1, on the same workload (same scenario, load and seed: common random numbers)::

    score = (m_ref - m) / (m_ref - m_top)        lower-is-better metrics (latency, flow completion time)
    score = (m - m_ref) / (m_top - m_ref)        higher-is-better metrics (the colo QoS share)

Each family declares its pair in :data:`SCORING`. A top is either a *bound* (no policy of the family's model can
beat it on the metric as measured: a score never exceeds 1) or an *upper reference* (a strong policy that others
may beat: scores above 1 are possible); only a bound is ever called ideal (docs/benchmarking.md says which each
family has and why).

Censored runs: a censored metric (docs/results.md) leaves out dropped or unfinished work, so it flatters the policy;
its score is capped at 0, the reference's (such a run may not claim to beat the reference). A run whose reference
or top is censored, missing, or where reference and top coincide, has no score (None) and stays out of aggregates.

Aggregates follow rliable (Agarwal et al., "Deep RL at the edge of the statistical precipice", NeurIPS 2021),
with a task being one (scenario, load) cell and its runs the seeds: the interquartile mean (the mean of the middle
50% of all runs' scores, :func:`scipy.stats.trim_mean` with 25% cut off each end), the optimality gap
(``1 - mean(min(score, 1))``), the performance profile (share of runs scoring above tau) and 95% intervals by the
stratified bootstrap (runs resampled with replacement within each task, percentile interval).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dcgym.agents.evaluation.bounds import flow_bound, lb_bound, rack_bound
from dcgym.agents.evaluation.document import get_path
from dcgym.agents.evaluation.family import family_of

__all__ = [
    "FULL_QOS_SHARE",
    "HOST_LINK_BOUND",
    "POOLED_CLUSTER_BOUND",
    "POOLED_WINDOW_BOUND",
    "PROFILE_TAUS",
    "SCORING",
    "Scoring",
    "aggregate",
    "cell_means",
    "cell_scores",
    "gap_rows",
    "interval",
    "iqm",
    "iqm_rows",
    "optimality_gap",
    "performance_profile",
    "profiles_of",
    "run_scores",
    "scenario_run_scores",
    "score",
    "scoring_of",
    "top_values",
    "with_interval",
]


HOST_LINK_BOUND = "host-link bound"
"""The flow family's top: :func:`dcgym.agents.evaluation.bounds.flow_bound_ms` on the run's own flows."""
POOLED_WINDOW_BOUND = "pooled-window bound"
"""The rack family's top on drained runs: :func:`dcgym.agents.evaluation.bounds.rack_p99_bound_us`."""
FULL_QOS_SHARE = "full QoS share"
"""The colo family's top: every sample of every service within QoS (a share of 1), which no policy can exceed."""
POOLED_CLUSTER_BOUND = "pooled-cluster bound"
"""The lb family's top on drained runs: :func:`dcgym.agents.evaluation.bounds.lb_mean_fct_bound_s`."""


@dataclass(frozen=True)
class Scoring:
    """A family's score: the policy scoring 0 and what scores 1."""

    reference: str
    """The policy (as the document labels it) that scores 0."""
    top: str
    """What scores 1: a policy label, or the name of a bound computed from the run's own workload."""
    top_is_bound: bool
    """Whether no policy can beat ``top`` on the metric as measured (then, and only then, it is called ideal)."""
    excluded: tuple[str, ...] = ()
    """Scenarios left out of aggregates (single-server sanity checks where every policy is the same)."""
    drained_bound: str | None = None
    """The bound that scores 1 in place of ``top`` in a drained document (``evaluate(drained=True)``): a metric
    that leaves out work still in flight can beat a bound, one over a fixed, drained set cannot."""

    @property
    def top_name(self) -> str:
        """The top's column header: ``ideal`` only for a bound."""
        return "ideal" if self.top_is_bound else "upper reference"


SCORING: dict[str, Scoring] = {
    # Static weights (workers x speed): load-oblivious like random but never overloading a slow node below load 1.
    # No rack policy is a bound while the p99 leaves out tasks in flight at the end of a run; the oracle (least
    # remaining work + size over capacity) runs at every entry point (central_fcfs only at a switch): an upper
    # reference.
    "rack": Scoring("wcmp", "oracle", False, excluded=("mm1", "mm16"), drained_bound=POOLED_WINDOW_BOUND),
    # The configured balancer (static weights); the oracle is beaten by sed on lb_reference: an upper reference.
    "lb": Scoring("wcmp", "oracle", False, drained_bound=POOLED_CLUSTER_BOUND),
    # No scheduling (fair sharing); the host-link bound (agents/evaluation/bounds.py) no scheduler can beat.
    "flow": Scoring("fair", HOST_LINK_BOUND, True),
    # Equal partitions; the QoS share's own ceiling, 1. The Oracle maximises slack under QoS on the noiseless
    # steady state, not the QoS share, and equal partitions beat it on some mixes: it is no top.
    "colo": Scoring("equal", FULL_QOS_SHARE, True),
}
"""Each family's score: reference (0) and top (1)."""


def scoring_of(doc: Mapping[str, Any]) -> Scoring:
    """The scoring of ``doc``: its family's, with the family's bound as the top when the document is drained."""
    scoring = SCORING[family_of(doc["family"]).kind]
    if doc.get("drained") and scoring.drained_bound:
        return replace(scoring, top=scoring.drained_bound, top_is_bound=True)
    return scoring


def score(metric: float, reference: float, top: float, higher_is_better: bool = False) -> float | None:
    """The normalised score of ``metric`` between ``reference`` (0) and ``top`` (1); None when they coincide."""
    span = top - reference if higher_is_better else reference - top
    if not span > 0:
        return None
    return (metric - reference) / span if higher_is_better else (reference - metric) / span


def run_scores(doc: Mapping[str, Any], top: Callable[[float, int], float | None] | None = None) -> list[dict[str, Any]]:
    """One ``{policy, load, seed, score}`` per result row of ``doc`` (an evaluation document of any family).

    The reference's and top's metrics come from the document's own rows of those policies at the same load and seed;
    ``top(load, seed)`` gives the top instead (a bound computed from the run's workload). A row without a reference
    or top there scores None; censored rows are capped at 0 (module docstring).
    """
    family = family_of(doc["family"])
    scoring = scoring_of(doc)
    path = family.headline[0]
    rows = {(r["policy"], r["load"], r["seed"]): r for r in doc["results"]}

    def metric(policy: str, load: float, seed: int) -> float | None:
        row = rows.get((policy, load, seed))
        if row is None or row.get("censored"):
            return None
        return get_path(row, path)

    out = []
    for row in doc["results"]:
        load, seed = row["load"], row["seed"]
        ref = metric(scoring.reference, load, seed)
        best = top(load, seed) if top is not None else metric(scoring.top, load, seed)
        value = get_path(row, path)
        # Against a bound, any work left out of the metric (even below the censoring threshold) may flatter it.
        incomplete = row.get("censored") or (scoring.top_is_bound and (row.get("censored_fraction") or 0) > 0)
        s = None
        if ref is not None and best is not None and value is not None:
            s = score(value, ref, best, family.headline_higher_is_better)
            if s is not None and incomplete:
                s = min(s, 0.0)
        out.append({"policy": row["policy"], "load": load, "seed": seed, "score": s})
    return out


def top_values(doc: Mapping[str, Any], scenario: Any) -> Callable[[float, int], float | None] | None:
    """The top of ``doc``'s runs as ``top(load, seed)`` when it is a bound computed from the workload (flow: the
    host-link bound of each load and seed, one engine run each); None when the top is a policy of the document."""
    family = family_of(doc["family"])
    scoring = scoring_of(doc)
    bound = _BOUNDS.get(scoring.top)
    if bound is None:
        return None
    work = doc[family.work]
    warmup = family.warmup(scenario, work)
    values = {}
    for load in dict.fromkeys(r["load"] for r in doc["results"]):
        for seed in doc["seeds"]:
            values[load, seed] = bound(scenario, scoring.reference, load, seed, work, warmup)
    return lambda load, seed: values.get((load, seed))


_BOUNDS = {
    HOST_LINK_BOUND: flow_bound,
    POOLED_WINDOW_BOUND: rack_bound,
    POOLED_CLUSTER_BOUND: lb_bound,
    FULL_QOS_SHARE: lambda *_: 1.0,
}
"""Each bound's value at one (load, seed) of a scenario: ``bound(scenario, reference, load, seed, work, warmup)``
(in the headline metric's unit; None where none is computed)."""


def scenario_run_scores(doc: Mapping[str, Any], scenario: Any) -> list[dict[str, Any]]:
    """Every run's ``{policy, load, seed, score, scenario}`` of ``doc`` (:func:`run_scores`, tops computed from
    ``scenario`` where they are bounds); empty when the document lacks the family's reference policy (or its top
    policy), so nothing can be scored."""
    scoring = scoring_of(doc)
    policies = {r["policy"] for r in doc["results"]}
    if scoring.reference not in policies or not (scoring.top_is_bound or scoring.top in policies):
        return []
    return [{**r, "scenario": doc["scenario"]} for r in run_scores(doc, top_values(doc, scenario))]


def cell_means(runs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, float], float | None]:
    """The mean score over seeds of each (policy, load) of ``runs`` (None where a seed has none)."""
    cells: dict[tuple[str, float], list[float | None]] = {}
    for r in runs:
        cells.setdefault((r["policy"], r["load"]), []).append(r["score"])
    return {k: None if None in v else math.fsum(v) / len(v) for k, v in cells.items()}  # type: ignore[arg-type]


def cell_scores(doc: Mapping[str, Any], scenario: Any) -> dict[tuple[str, float], float | None]:
    """The mean score over seeds of each (policy, load) of ``doc``; empty when nothing can be scored."""
    return cell_means(scenario_run_scores(doc, scenario))


# ---------------------------------------------------------------------------------------------- aggregates


def _flat(scores: Sequence[Sequence[float]]) -> np.ndarray:
    return np.concatenate([np.asarray(s, dtype=float) for s in scores])


def iqm_rows(runs: np.ndarray) -> np.ndarray:
    """The interquartile mean of each row of ``runs``: the mean after cutting ``floor(n / 4)`` of its n values off
    each end, as :func:`scipy.stats.trim_mean` with 0.25."""
    n = runs.shape[1]
    cut = n // 4
    return np.mean(np.sort(runs, axis=1)[:, cut : n - cut], axis=1)


def gap_rows(runs: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """The optimality gap of each row of ``runs``: ``gamma - mean(min(score, gamma))``."""
    return gamma - np.mean(np.minimum(runs, gamma), axis=1)


def iqm(scores: Sequence[Sequence[float]]) -> float:
    """Interquartile mean of every run of every task (``scores``: one sequence of run scores per task)."""
    return float(iqm_rows(_flat(scores)[None, :])[0])


def optimality_gap(scores: Sequence[Sequence[float]], gamma: float = 1.0) -> float:
    """How far the runs fall short of ``gamma``: ``gamma - mean(min(score, gamma))`` over every run of every task."""
    return float(gap_rows(_flat(scores)[None, :], gamma)[0])


PROFILE_TAUS = [round(-1 + k / 20, 2) for k in range(45)]
"""Where performance profiles are drawn: scores -1 to 1.2."""


def performance_profile(scores: Sequence[Sequence[float]], taus: Sequence[float]) -> list[float]:
    """Share of all runs scoring above each tau (rliable's run-score distribution)."""
    flat = _flat(scores)
    return [float(np.mean(flat > tau)) for tau in taus]


def profiles_of(runs: Sequence[Mapping[str, Any]], taus: Sequence[float] = PROFILE_TAUS) -> dict[str, list[float]]:
    """Each policy's performance profile over its scored runs (rows ``{policy, score}``; unscored ones left out)."""
    by_policy: dict[str, list[float]] = {}
    for r in runs:
        if r["score"] is not None:
            by_policy.setdefault(r["policy"], []).append(r["score"])
    return {p: performance_profile([v], taus) for p, v in by_policy.items()}


def with_interval(value: float, ci: tuple[float, float]) -> str:
    """An aggregate and its interval as the tables show them: ``0.812 [0.799, 0.819]``."""
    return f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"


def interval(
    scores: Sequence[Sequence[float]],
    rows: Callable[[np.ndarray], np.ndarray],
    reps: int = 2000,
    seed: int = 0,
    size: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of a statistic by the stratified bootstrap: each task's runs resampled with replacement
    (as many as it has), tasks kept; ``reps`` resamples from a generator seeded with ``seed`` (the same interval
    every time). ``rows`` computes the statistic of each row of a (resamples x runs) array (:func:`iqm_rows`,
    :func:`gap_rows`)."""
    rng = np.random.default_rng(seed)
    tasks = [np.asarray(s, dtype=float) for s in scores]
    resampled = np.concatenate([t[rng.integers(0, len(t), (reps, len(t)))] for t in tasks], axis=1)
    low, high = np.percentile(rows(resampled), [50 * (1 - size), 50 * (1 + size)])
    return float(low), float(high)


def aggregate(
    scored: Sequence[Mapping[str, Any]], excluded: Sequence[str] = (), reps: int = 2000
) -> dict[str, dict[str, Any]]:
    """Per policy: IQM and optimality gap of its scores with 95% stratified-bootstrap intervals, and its number of
    tasks and runs. ``scored``: rows ``{policy, scenario, load, seed, score}`` (rows scoring None and scenarios in
    ``excluded`` left out); a task is one (scenario, load)."""
    by_policy: dict[str, dict[tuple[str, float], list[float]]] = {}
    for r in scored:
        if r["score"] is None or r.get("scenario") in excluded or not math.isfinite(r["score"]):
            continue
        by_policy.setdefault(r["policy"], {}).setdefault((r.get("scenario", ""), r["load"]), []).append(r["score"])
    out = {}
    for policy, tasks in by_policy.items():
        runs = list(tasks.values())
        out[policy] = {
            "iqm": iqm(runs),
            "iqm_ci95": interval(runs, iqm_rows, reps),
            "optimality_gap": optimality_gap(runs),
            "optimality_gap_ci95": interval(runs, gap_rows, reps),
            "tasks": len(runs),
            "runs": sum(len(r) for r in runs),
        }
    return out
