"""Sweeps: a grid of experiment overrides times seeds, each a training run, in parallel as Ray Tune trials.

    from dcgym.agents.training.sweep import SweepSpec, run_sweep
    spec = SweepSpec.make("configs/experiments/ppo_rack.yaml", {"hyperparameters.lr": [1e-4, 3e-4]}, [1, 2, 3])
    table = run_sweep(spec, "sweeps/lr")

A trial is one grid point (a mapping of dotted keys to values, as ``--set``) and one seed: the experiment with
them applied, trained by :class:`~dcgym.agents.training.trainer.Trainer` inside the trial, on the node Ray placed
it on, into the run folder ``{sweep}/runs/point{i}_seed{s}/`` (the same folder train.py writes). Its value is the
headline metric of its final evaluation for the trained policy (the family's :attr:`EvaluationFamily.headline`,
averaged over the evaluation's loads), or without an evaluation the return of the last training iteration.

The sweep folder holds ``sweep.json`` (the resolved experiment, the grid, the seeds, the commands), ``tune/``
(Ray Tune's experiment state: what :func:`run_sweep` restores with ``resume=True``), ``runs/`` and the table,
``results.md`` and ``results.json``: per grid point the mean over seeds with its 95% interval
(:func:`dcgym.agents.evaluation.stats.mean_ci`), the seeds finished, and each seed's value and node.

Resuming (after Ctrl-C or a killed driver) restores Tune's state: finished trials keep their results, the others
run again; a trial whose run folder already finished only reads it, and one with a checkpoint continues from it.
"""

from __future__ import annotations

import csv
import itertools
import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dcgym.agents.evaluation.document import get_path
from dcgym.agents.evaluation.family import family_of
from dcgym.agents.evaluation.stats import mean_ci
from dcgym.agents.policies.checkpoints import list_checkpoints, read_json
from dcgym.agents.training.experiment import Experiment, load_experiment
from dcgym.agents.training.trainer import LOCAL_CPUS, METRICS_FILE, RUN_FILE, Trainer, check_experiment
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import env_family
from dcgym.envs.yaml_text import parse

log = logging.getLogger(__name__)

__all__ = ["SWEEP_FILE", "SweepSpec", "SweepTable", "parse_grid", "run_metric", "run_sweep", "trial_metric"]

SWEEP_FILE = "sweep.json"
TUNE_DIR = "tune"
RUNS_DIR = "runs"
NODE_FILE = "node_id"
"""In a trial's run folder: the Ray node it trained on (the table's node, also when a resume only reads it)."""
TABLE_FILES = ("results.md", "results.json")


def parse_grid(items: Sequence[str] | None) -> dict[str, list[Any]]:
    """``["hyperparameters.lr=1e-4,3e-4"]`` -> ``{"hyperparameters.lr": [0.0001, 0.0003]}``; values are YAML
    (``hyperparameters.hidden=[16],[32,32]`` gives two lists)."""
    grid: dict[str, list[Any]] = {}
    for item in items or ():
        key, sep, text = str(item).partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")) or key in grid or key == "seed":
            raise InvalidConfigError(
                "--grid",
                item,
                "key=v1,v2,... with a dotted key given once (not seed: --seeds), e.g. hyperparameters.lr=1e-4,3e-4",
            )
        try:
            values = parse(f"[{text}]")
        except yaml.YAMLError:
            values = None
        if not values:
            raise InvalidConfigError(key, text, "comma-separated YAML values, e.g. 1e-4,3e-4 or [16],[32,32]")
        grid[key] = values
    return grid


@dataclass(frozen=True)
class SweepSpec:
    """What a sweep runs: the experiment (with the command's ``--set`` applied), the grid and the seeds."""

    experiment: dict[str, Any]
    grid: dict[str, list[Any]]
    seeds: list[int]

    @classmethod
    def make(
        cls,
        config: str | Path | Mapping[str, Any],
        grid: Mapping[str, Sequence[Any]],
        seeds: Sequence[int],
        overrides: Mapping[str, Any] | None = None,
    ) -> SweepSpec:
        """The spec of ``config`` with ``overrides``, checked: every trial's experiment is validated as train.py
        validates it (:meth:`experiments`), before Ray starts."""
        if not seeds or len(set(seeds)) != len(seeds):
            raise InvalidConfigError("--seeds", ",".join(map(str, seeds)), "distinct seeds, e.g. 1,2,3")
        base = load_experiment(config, overrides)
        raw = base.model_dump(mode="json")
        if Path(base.scenario).is_file():  # trials may run in another folder (Tune's, another node's)
            raw["scenario"] = str(Path(base.scenario).resolve())
        if raw["evaluation"]["workers"] is None:  # the trials are the parallelism: Ray tasks beside them could wait
            raw["evaluation"]["workers"] = 0  # for the CPUs the trials hold
        spec = cls(raw, {k: list(v) for k, v in grid.items()}, [int(s) for s in seeds])
        for experiment in spec.experiments().values():
            check_experiment(experiment)
        return spec

    def points(self) -> list[dict[str, Any]]:
        """The grid's points in order (the first key varies slowest); one empty point without a grid."""
        return [dict(zip(self.grid, values)) for values in itertools.product(*self.grid.values())]

    def trial_experiment(self, point: int, seed: int) -> Experiment:
        return load_experiment(self.experiment, {**self.points()[point], "seed": seed})

    def experiments(self) -> dict[tuple[int, int], Experiment]:
        """Every trial's experiment by (point index, seed); InvalidConfigError naming the field of a bad one."""
        return {(p, s): self.trial_experiment(p, s) for p in range(len(self.points())) for s in self.seeds}

    def to_json(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "grid": self.grid, "seeds": self.seeds}

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepSpec:
        """The spec a sweep folder was started with; InvalidConfigError naming ``--resume`` if there is none."""
        path = sweep_dir / SWEEP_FILE
        if not path.is_file() or not (sweep_dir / TUNE_DIR).is_dir():
            raise InvalidConfigError("--resume", str(sweep_dir), f"a sweep folder (with {SWEEP_FILE} and {TUNE_DIR}/)")
        data = read_json(path)
        return cls(data["experiment"], data["grid"], data["seeds"])


# ------------------------------------------------------------------------------ one trial


def trial_metric(experiment: Experiment) -> dict[str, Any]:
    """What a trial of ``experiment`` reports: ``{name, label, higher_is_better}``."""
    if not experiment.evaluation.enabled:
        return {"name": "charts/return", "label": "return of the last training iteration", "higher_is_better": True}
    family = family_of(env_family(experiment.env))
    path, label, _ = family.headline
    return {
        "name": path,
        "label": f"{label} of the trained policy, mean over the evaluation's loads",
        "higher_is_better": family.headline_higher_is_better,
    }


def run_metric(run_dir: Path, experiment: Experiment) -> float | None:
    """A finished run folder's value of :func:`trial_metric` (None where no value was measured)."""
    name = trial_metric(experiment)["name"]
    if experiment.evaluation.enabled:
        doc = read_json(run_dir / "evaluation" / "results.json")
        label = f"{experiment.algorithm} (trained)"  # the evaluation's one checkpoint (checkpoint_labels)
        cells = [get_path(c, name)["mean"] for c in doc["summary"] if c["policy"] == label]
        cells = [v for v in cells if v is not None]
        return sum(cells) / len(cells) if cells else None
    with open(run_dir / METRICS_FILE, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    values = [r.get(name) or r.get("charts/team_return") for r in rows]  # one-agent envs have only the latter
    values = [float(v) for v in values if v not in (None, "")]
    return values[-1] if values else None


def train_trial(experiment: Experiment, run_dir: Path, command: Sequence[str]) -> bool:
    """Train ``experiment`` into ``run_dir`` unless it finished there: continue from its newest checkpoint, or
    start again (a folder without a checkpoint holds nothing worth keeping). Whether it trained."""
    if (run_dir / RUN_FILE).is_file() and read_json(run_dir / RUN_FILE).get("status") == "finished":
        return False
    resuming = bool(list_checkpoints(run_dir)) if run_dir.is_dir() else False
    if run_dir.exists() and not resuming:
        shutil.rmtree(run_dir)
    trainer = Trainer(experiment, run_dir, resuming=resuming, progress=False, command=command)
    trainer.setup()
    try:
        trainer.run()
    finally:
        trainer.close()
    return True


def _trial(config: dict[str, Any], *, spec: dict[str, Any], sweep_dir: str, command: list[str]) -> None:
    """A Tune trial (runs in a Ray worker): train, then report the run's value and where it ran."""
    import ray
    from ray import tune

    point, seed = int(config["point"]), int(config["seed"])
    experiment = SweepSpec(**spec).trial_experiment(point, seed)
    run_dir = Path(sweep_dir) / RUNS_DIR / f"point{point}_seed{seed}"
    node_file = run_dir / NODE_FILE
    if train_trial(experiment, run_dir, command) or not node_file.is_file():
        node_file.write_text(ray.get_runtime_context().get_node_id() + "\n", encoding="utf-8")
    # a run folder that finished before (a trial Tune's saved state missed at Ctrl-C) is reported from where it ran
    tune.report(
        {
            "value": run_metric(run_dir, experiment),
            "node_id": node_file.read_text(encoding="utf-8").strip(),
            "run": str(run_dir.relative_to(sweep_dir)),
        }
    )


# ------------------------------------------------------------------------------ the sweep


@dataclass(frozen=True)
class SweepTable:
    """The sweep's results: one row per grid point; ``complete`` when every trial reported."""

    metric: dict[str, Any]
    rows: list[dict[str, Any]]
    trials: int
    failed: tuple[dict[str, Any], ...] = ()
    """The trials that raised: ``{point, seed, error}`` (the error's last line; its log is in the trial's folder)."""

    @property
    def finished(self) -> int:
        return sum(r["n"] for r in self.rows)

    @property
    def complete(self) -> bool:
        return self.finished == self.trials

    def to_json(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "trials": self.trials,
            "finished": self.finished,
            "rows": self.rows,
            "failed": list(self.failed),
        }

    def markdown(self) -> str:
        m = self.metric
        better = "higher" if m["higher_is_better"] else "lower"
        lines = [
            f"{m['name']}: {m['label']} ({better} is better); mean over seeds with its 95% interval",
            "",
            "| point | mean | ± 95% | seeds finished | per seed |",
            "|---|---:|---:|---:|---|",
        ]
        for r in self.rows:
            point = ", ".join(f"{k}={json.dumps(v)}" for k, v in r["point"].items()) or "(the experiment)"
            seeds = ", ".join(f"{s}: {_fmt(v['value'])}" for s, v in r["seeds"].items())
            lines.append(f"| {point} | {_fmt(r['mean'])} | {_fmt(r['ci95'])} | {r['n']} | {seeds} |")
        return "\n".join(lines) + "\n"

    def write(self, sweep_dir: Path) -> None:
        md, js = (sweep_dir / name for name in TABLE_FILES)
        md.write_text(self.markdown(), encoding="utf-8")
        js.write_text(json.dumps(self.to_json(), indent=2) + "\n", encoding="utf-8")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def make_table(
    spec: SweepSpec, reports: Mapping[tuple[int, int], Mapping[str, Any]], failed: Sequence[dict[str, Any]] = ()
) -> SweepTable:
    """The table of ``reports`` (each finished trial's ``{value, node_id, run}`` by (point, seed)) and ``failed``."""
    rows = []
    for p, point in enumerate(spec.points()):
        seeds = {str(s): dict(reports[p, s]) for s in spec.seeds if (p, s) in reports}
        rows.append({"point": point, **mean_ci([v["value"] for v in seeds.values()]), "seeds": seeds})
    for row in rows:
        row["n"] = len(row["seeds"])  # seeds finished (mean_ci's n leaves out a run without a value)
    metric = trial_metric(spec.trial_experiment(0, spec.seeds[0]))
    return SweepTable(metric, rows, len(spec.points()) * len(spec.seeds), tuple(failed))


def run_sweep(
    spec: SweepSpec,
    sweep_dir: str | Path,
    *,
    resume: bool = False,
    address: str | None = None,
    max_concurrent: int | None = None,
    command: Sequence[str] = (),
) -> SweepTable:
    """Run (or with ``resume``, finish) the sweep in ``sweep_dir`` as Ray Tune trials; write and return its table.

    Each trial takes one CPU and one more per remote env runner it asks for (``resources.num_env_runners``), on
    the local Ray or the cluster at ``address``. Ctrl-C stops the trials; the table then covers the finished ones.
    """
    from dcgym.agents import ray_session

    sweep_dir = Path(sweep_dir).expanduser().resolve()
    if not resume:
        sweep_dir.mkdir(parents=True, exist_ok=False)
        (sweep_dir / SWEEP_FILE).write_text(json.dumps(spec.to_json(), indent=2) + "\n", encoding="utf-8")
    import ray
    from ray import tune

    cpus = _trial_cpus(spec)
    started = not ray.is_initialized()
    if started:
        ray_session.init(max(LOCAL_CPUS, cpus), address, logging.ERROR)
    try:
        trainable = tune.with_resources(
            tune.with_parameters(_trial, spec=spec.to_json(), sweep_dir=str(sweep_dir), command=list(command)),
            tune.PlacementGroupFactory([{"CPU": 1}] * cpus),
        )
        path = str(sweep_dir / TUNE_DIR)
        if resume:
            tuner = tune.Tuner.restore(path, trainable, resume_unfinished=True, restart_errored=True)
        else:
            tuner = tune.Tuner(
                trainable,
                param_space={
                    "point": tune.grid_search(list(range(len(spec.points())))),
                    "seed": tune.grid_search(spec.seeds),
                },
                tune_config=tune.TuneConfig(max_concurrent_trials=max_concurrent, reuse_actors=True),
                run_config=tune.RunConfig(
                    name=TUNE_DIR, storage_path=str(sweep_dir), verbose=0, callbacks=[_announcer()]
                ),
            )
        results = tuner.fit()
    finally:
        if started:
            ray.shutdown()
    reports, failed = {}, []
    for result in results:
        if not result.config:  # a trial that never started (interrupted before it)
            continue
        point, seed = int(result.config["point"]), int(result.config["seed"])
        if result.error is not None:
            last = (str(result.error).strip().splitlines() or [type(result.error).__name__])[-1]
            failed.append({"point": point, "seed": seed, "error": last, "log": str(result.path)})
        elif "value" in (result.metrics or {}):
            reports[point, seed] = {k: result.metrics[k] for k in ("value", "node_id", "run")}
    table = make_table(spec, reports, failed)
    table.write(sweep_dir)
    return table


def _trial_cpus(spec: SweepSpec) -> int:
    """CPUs of one trial: the training process and its remote env runners (the same for every grid point)."""
    return max(1 + (e.resources.num_env_runners or 0) for e in spec.experiments().values())


def _announcer():
    """A Tune callback writing one line to the log as each trial ends (made here: Ray is imported on first use)."""
    from ray.tune import Callback

    class Announce(Callback):
        def on_trial_complete(self, iteration, trials, trial, **info):
            value = (trial.last_result or {}).get("value")
            log.info("trial point %s seed %s finished: %s", trial.config["point"], trial.config["seed"], _fmt(value))

        def on_trial_error(self, iteration, trials, trial, **info):
            log.error("trial point %s seed %s failed (%s)", trial.config["point"], trial.config["seed"], trial.path)

    return Announce()
