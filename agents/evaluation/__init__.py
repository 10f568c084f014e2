"""Evaluation of policies on scenarios of every family: the library behind ``evaluate.py``.

| module | what |
|---|---|
| ``core`` | :func:`evaluate`: policies x loads x seeds on one scenario, checked before any run; :func:`evaluate_checkpoint` |
| ``family`` | what a family declares (jobs, row model, metrics, table, plots) and the registry of families |
| ``rack``, ``lb``, ``colo``, ``flow`` | the families' evaluations |
| ``checkpoints`` | the runs of a trained policy through its environment, handed to its family's runner |
| ``runner`` | running the jobs serially or on Ray, with progress |
| ``document`` | the results document, its CSV tables and files |
| ``stats``, ``plots`` | confidence intervals and merged histograms; the plots |
"""

from dcgym.agents.evaluation.core import evaluate, evaluate_checkpoint, parse_seeds, seed_list
from dcgym.agents.evaluation.document import (
    build_document,
    results_table,
    summary_table,
    to_json,
    write_plots,
    write_results,
)
from dcgym.agents.evaluation.family import EVALUATIONS, EvaluationFamily, family_of
from dcgym.agents.evaluation.plots import plot_latency_cdf, plot_load_over_time, plot_p99_vs_load
from dcgym.agents.evaluation.runner import run_job

__all__ = [
    "EVALUATIONS",
    "EvaluationFamily",
    "build_document",
    "evaluate",
    "evaluate_checkpoint",
    "family_of",
    "parse_seeds",
    "plot_latency_cdf",
    "plot_load_over_time",
    "plot_p99_vs_load",
    "results_table",
    "run_job",
    "seed_list",
    "summary_table",
    "to_json",
    "write_plots",
    "write_results",
]
