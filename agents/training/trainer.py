"""Train one experiment and leave a self-describing run folder: the library behind ``train.py``.

    from dcgym.agents.training.experiment import load_experiment
    from dcgym.agents.training import train
    run = train(load_experiment("configs/experiments/ppo_rack.yaml"), out="runs")

A run folder ``{out}/{scenario}__{algorithm}__{seed}__{unix time}/`` holds:

| file | what |
|---|---|
| ``config.yaml`` | the resolved experiment (every default filled in); ``--config`` takes it back |
| ``run.json`` | status (running, finished, interrupted), iterations, timesteps, newest checkpoint, commands, Ray address and env runners, versions |
| ``metrics.csv`` | one row per iteration (:mod:`dcgym.agents.training.metrics`, :mod:`dcgym.agents.training.logs`) |
| ``tensorboard/`` | the same metrics as TensorBoard events (``tensorboard --logdir runs``) |
| ``checkpoints/iter_NNNNNN/`` | ``Algorithm.save_to_path`` plus ``dcgym_checkpoint.json`` (:mod:`dcgym.agents.policies.checkpoints`) |
| ``evaluation/`` | results.json, results.csv, summary.csv: the trained policy against the heuristics |
| ``plots/`` | learning_curve.png, p99_vs_load.png, latency_cdf.png |
| ``rllib/`` | RLlib's own log folder (kept out of ``~/ray_results``) |
| ``wandb/`` | with ``wandb=True``: the W&B run (offline unless an account is configured) |

:func:`resume` continues a run from its newest checkpoint
(``Algorithm.restore_from_path``): the iteration counter, timesteps,
weights and optimizer states continue, metrics rows after the checkpoint
are dropped. Ctrl-C (KeyboardInterrupt) writes a checkpoint before it
propagates.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any
from unittest import mock

from gymnasium.spaces import flatdim

from dcgym.agents import ray_session
from dcgym.agents.algorithms import build_config, trained_agents
from dcgym.agents.evaluation import evaluate, write_plots, write_results
from dcgym.agents.evaluation.estimate import check_size, parallel_runs
from dcgym.agents.evaluation.family import family_of
from dcgym.agents.policies.checkpoints import (
    CHECKPOINTS_DIR,
    RESUMING_PIECES,
    check_pieces,
    list_checkpoints,
    read_json,
    read_meta,
    write_meta,
)
from dcgym.agents.progress import Progress
from dcgym.agents.rl.envs import make_env
from dcgym.agents.training.experiment import Experiment, load_experiment
from dcgym.agents.training.logs import MetricsCsv, iteration_metrics, summary_writer
from dcgym.agents.training.plots import plot_learning_curve
from dcgym.envs.error import DcgymError, InvalidConfigError, Verbatim
from dcgym.envs.scenario import load_scenario

log = logging.getLogger(__name__)

__all__ = ["MissingPackageError", "TrainResult", "Trainer", "find_run", "new_run_dir", "resume", "train"]

CONFIG_FILE = "config.yaml"
RUN_FILE = "run.json"
METRICS_FILE = "metrics.csv"
LOCAL_CPUS = 2
"""CPUs of the local Ray instance (more only when more env runners are asked for)."""


class MissingPackageError(DcgymError, ImportError):
    """An optional package a feature needs is not installed; the message says how to install it."""


@dataclass(frozen=True)
class TrainResult:
    """What a training invocation did."""

    run_dir: Path
    iteration: int
    timesteps: int
    checkpoint: Path | None
    evaluation: dict[str, Any] | None
    status: str


# ------------------------------------------------------------------------------ run folders


def new_run_dir(experiment: Experiment, out: str | Path) -> Path:
    """``{out}/{scenario}__{algorithm}__{seed}__{unix time}`` (CleanRL's run name), not yet created."""
    stamp = int(time.time())
    base = (
        Path(out).expanduser().resolve()
        / f"{experiment.scenario_name}__{experiment.algorithm}__{experiment.seed}__{stamp}"
    )
    path, k = base, 1
    while path.exists():
        path, k = Path(f"{base}_{k}"), k + 1
    return path


def find_run(run: str | Path, out: str | Path = "runs") -> Path:
    """A run folder given as a path or as a name under ``out``, as an absolute path; InvalidConfigError naming
    ``--resume``."""
    for path in (Path(run).expanduser(), Path(out).expanduser() / run):
        if (path / CONFIG_FILE).is_file():
            return path.resolve()
    raise InvalidConfigError(
        "--resume", str(run), f"a run folder written by train.py (with {CONFIG_FILE}), as a path or a name under {out}"
    )


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(data), indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


# ------------------------------------------------------------------------------ checks


def check_experiment(experiment: Experiment, force: bool = False) -> list[str]:
    """Check what the schema cannot: the environment's arguments, the algorithm's config (RLlib's checks), the
    heuristics and the final evaluation's size (refused above hours or gigabytes unless ``force``), all before
    Ray starts. Returns the agents."""
    try:
        agents = trained_agents(experiment.algorithm, experiment.env, experiment.env_config)
    except InvalidConfigError as exc:
        raise (exc if exc.field == "scenario" else exc.under("env_args")) from None
    try:
        build_config(experiment).validate()  # RLlib's own consistency checks, before Ray starts
    except InvalidConfigError:
        raise
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0]
        raise InvalidConfigError("hyperparameters", Verbatim("an inconsistent setting"), first) from None
    if experiment.evaluation.enabled:
        scenario = load_scenario(experiment.scenario, experiment.env_args.get("overrides"))
        for k, name in enumerate(experiment.evaluation.heuristics):
            try:
                scenario.check_policy(name)
            except InvalidConfigError as exc:
                raise InvalidConfigError(
                    f"evaluation.heuristics.{k}", name, exc.allowed, suggestion=exc.suggestion
                ) from None
        ev = experiment.evaluation
        runs = (1 + len(ev.heuristics)) * len(ev.loads or scenario.loads) * len(ev.seeds)
        family = family_of(scenario.kind)
        check_size(family, runs, ev.tasks, parallel_runs(ev.workers, runs, None), force=force, field="evaluation.tasks")
    return agents


def _wandb_module():
    try:
        import wandb
    except ImportError:
        raise MissingPackageError("--wandb needs Weights & Biases, which is not installed: pip install wandb") from None
    return wandb


# ------------------------------------------------------------------------------ the trainer


class Trainer:
    """One training invocation on one run folder: :meth:`setup` (may raise bad-input errors), then :meth:`run`."""

    def __init__(
        self,
        experiment: Experiment,
        run_dir: str | Path,
        *,
        resuming: bool = False,
        address: str | None = None,
        use_wandb: bool = False,
        progress: bool = True,
        command: Sequence[str] | None = None,
        ray_log_level: int = logging.WARNING,
        force: bool = False,
    ) -> None:
        self.experiment = experiment
        self.force = force  # run a final evaluation estimated to take hours or gigabytes
        self.run_dir = Path(run_dir)
        self.resuming = resuming
        self.address = address
        self.use_wandb = use_wandb
        self.progress = progress
        self.command = list(command) if command is not None else list(sys.argv)
        self.ray_log_level = ray_log_level
        self.algo = None
        self.iteration = 0
        self.timesteps = 0
        self.checkpoint: Path | None = None
        self._ray_started = False
        self._created = False
        self._writer = None
        self._wandb_run = None
        self._wandb_mode = None
        self._env_runners = None
        self._command_logged = False
        self._csv = None

    # -------------------------------------------------------------- setup

    def setup(self) -> None:
        """Validate, start Ray, build (or restore) the algorithm, open the loggers. Cleans up after itself on error."""
        wandb = _wandb_module() if self.use_wandb else None
        self.agents = check_experiment(self.experiment, self.force)
        env = make_env(self.experiment.env, self.experiment.env_config)
        # flatdim: a Box's size, and a Dict's (colo_v0: counters and action mask) flattened
        self._observation_sizes = {a: int(flatdim(env.observation_space(a))) for a in self.agents}
        self._partial_agents = len(self.agents) < len(env.possible_agents)  # the others held by the env's rules
        if self.resuming and not list_checkpoints(self.run_dir):
            raise InvalidConfigError(
                "--resume", str(self.run_dir), "a run folder with a checkpoint (this one has none)"
            )
        if self.resuming:
            check_pieces(list_checkpoints(self.run_dir)[-1], RESUMING_PIECES, "--resume")
            if (self.run_dir / RUN_FILE).is_file():
                read_json(self.run_dir / RUN_FILE)  # a damaged run.json is named before Ray starts
        if not self.resuming:
            self.run_dir.mkdir(parents=True, exist_ok=False)
            self._created = True
            (self.run_dir / CONFIG_FILE).write_text(self.experiment.to_yaml(), encoding="utf-8")
        try:
            self._start_ray()
            self.algo = self._build()
            if self.resuming:
                self.checkpoint = list_checkpoints(self.run_dir)[-1]
                self.algo.restore_from_path(str(self.checkpoint.resolve()))
                self.iteration = int(self.algo.iteration)
                self.timesteps = int(_timesteps(self.algo))
                log.info("resumed %s at iteration %d from %s", self.run_dir, self.iteration, self.checkpoint)
                self._drop_stale_results()
            self._open_logs(wandb)
            self._write_status("running")
        except BaseException:
            self.close()
            if self._created:
                shutil.rmtree(self.run_dir, ignore_errors=True)  # nothing was trained: leave no half run folder
            raise

    def _start_ray(self) -> None:
        ray_session.quiet_environment()
        import ray
        import torch

        torch.set_num_threads(self.experiment.resources.torch_threads)
        if ray.is_initialized():
            return
        runners = self.experiment.resources.num_env_runners or 0
        ray_session.init(max(LOCAL_CPUS, runners + 1), self.address, self.ray_log_level)
        self._ray_started = True

    def _resolved_experiment(self) -> Experiment:
        """The experiment with ``num_env_runners: null`` made concrete for this Ray session."""
        import ray

        res = self.experiment.resources
        if res.num_env_runners is not None:
            return self.experiment
        runners = 0
        if self.address is not None:
            runners = max(0, int(ray.cluster_resources().get("CPU", 1)) - 1 - res.num_learners)
        return self.experiment.model_copy(update={"resources": res.model_copy(update={"num_env_runners": runners})})

    def _build(self):
        from dcgym.agents.rl.bulk_env_runner import BulkEnvRunner  # Ray: needed once Ray runs
        from dcgym.agents.training.metrics import DcgymMetrics

        experiment = self._resolved_experiment()
        self._env_runners = experiment.resources.num_env_runners
        config = build_config(experiment, experiment.env_config)
        if config.env_runner_cls is None and config.is_multi_agent:
            config.env_runners(env_runner_cls=BulkEnvRunner)  # RLlib's runner, sampling in bulk (same episodes)
        existing = config.callbacks_class
        existing = existing if isinstance(existing, list) else [existing]
        extra = [c for c in existing if c.__name__ != "RLlibCallback"]
        config.callbacks(callbacks_class=[*extra, DcgymMetrics] if extra else DcgymMetrics)
        config.debugging(log_level=logging.getLevelName(self.ray_log_level))  # RLlib sets its loggers' level from it
        logdir = self.run_dir / "rllib"
        logdir.mkdir(exist_ok=True)
        with warnings.catch_warnings(), mock.patch("ray.tune.trainable.trainable.DEFAULT_STORAGE_PATH", str(logdir)):
            warnings.filterwarnings("ignore", message=".*Overriding environment", category=UserWarning)
            return config.build_algo()

    def _open_logs(self, wandb) -> None:
        self._csv = MetricsCsv(self.run_dir / METRICS_FILE, keep_through=self.iteration if self.resuming else None)
        self._writer = summary_writer(
            self.run_dir / "tensorboard", purge_step=self.timesteps + 1 if self.resuming else None
        )
        if wandb is not None:
            id_file = self.run_dir / "wandb_id.txt"
            run_id = id_file.read_text().strip() if id_file.is_file() else wandb.util.generate_id()
            id_file.write_text(run_id + "\n")
            mode = os.environ.get("WANDB_MODE") or ("online" if _wandb_account(wandb) else "offline")
            self._wandb_mode = mode
            self._wandb_run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "dcgym"),
                name=self.run_dir.name,
                id=run_id,
                resume="allow",
                dir=str(self.run_dir),
                mode=mode,
                config=self.experiment.model_dump(mode="json"),
            )
            log.info("W&B run %s (%s)", run_id, mode)

    # -------------------------------------------------------------- training

    def run(self) -> TrainResult:
        """Train to the budget, checkpoint, evaluate, plot. Ctrl-C checkpoints, then re-raises."""
        budget = self.experiment.budget
        start = time.monotonic()
        total = budget.iterations if budget.iterations is not None else budget.timesteps
        by_steps = budget.iterations is None and budget.timesteps is not None
        bar = Progress(
            total,
            self.run_dir.name[:48],
            self.progress,
            "step" if by_steps else "iteration",
            initial=self.timesteps if by_steps else self.iteration,
        )
        shown: dict[str, float] = {}  # the newest value of each metric: episodes end every few iterations
        try:
            while not self._done(start):
                result = self._train_once()
                metrics = self._log(result)
                shown.update(metrics)
                bar.set_postfix(_postfix(shown))
                bar.update((self.timesteps - bar.done) if by_steps else 1)
                every = self.experiment.checkpoint_every
                if every and self.iteration % every == 0:
                    self._save()
        except KeyboardInterrupt:
            bar.close()
            self._save()
            self._write_status("interrupted")
            raise
        finally:
            bar.close()
        try:
            if self.checkpoint is None or self._checkpoint_iteration() != self.iteration:
                self._save()
            evaluation = self._evaluate() if self.experiment.evaluation.enabled else None
            self._plot(evaluation)
        except KeyboardInterrupt:  # the checkpoint is kept; the evaluation and plots are not complete
            self._write_status("interrupted")
            raise
        self._write_status("finished")
        return TrainResult(self.run_dir, self.iteration, self.timesteps, self.checkpoint, evaluation, "finished")

    def _done(self, start: float) -> bool:
        b = self.experiment.budget
        return (
            (b.iterations is not None and self.iteration >= b.iterations)
            or (b.timesteps is not None and self.timesteps >= b.timesteps)
            or (b.wall_time_s is not None and time.monotonic() - start >= b.wall_time_s)
        )

    def _train_once(self) -> dict[str, Any]:
        result = self.algo.train()
        self.iteration = int(result["training_iteration"])
        self.timesteps = int(result.get("num_env_steps_sampled_lifetime", self.timesteps) or self.timesteps)
        return result

    def _log(self, result: Mapping[str, Any]) -> dict[str, float]:
        metrics = iteration_metrics(result)
        self._csv.append(metrics)
        if self._writer is not None:
            for key, value in metrics.items():
                if "/" in key:
                    self._writer.add_scalar(key, value, global_step=self.timesteps)
            self._writer.flush()
        if self._wandb_run is not None:
            self._wandb_run.log(metrics, step=self.iteration)
        return metrics

    def _checkpoint_iteration(self) -> int | None:
        return read_meta(self.checkpoint)["iteration"] if self.checkpoint else None

    def _save(self) -> Path:
        """Write ``checkpoints/iter_NNNNNN`` (RLlib's files + dcgym_checkpoint.json); drop the oldest beyond keep."""
        path = (self.run_dir / CHECKPOINTS_DIR / f"iter_{self.iteration:06d}").resolve()
        if path.exists():
            shutil.rmtree(path)
        self.algo.save_to_path(str(path))
        from ray.rllib.core import DEFAULT_MODULE_ID

        config = self.algo.config
        write_meta(
            path,
            {
                "iteration": self.iteration,
                "timesteps": self.timesteps,
                "run_name": self.run_dir.name,
                "experiment": self.experiment.model_dump(mode="json"),
                "env_config": _jsonable(dict(config.env_config)),
                "agent_to_module": {
                    a: config.policy_mapping_fn(a, None) if config.is_multi_agent else DEFAULT_MODULE_ID
                    for a in self.agents
                },
                "observation_sizes": self._observation_sizes,
                "partial_agents": self._partial_agents,
                "normalize_actions": bool(config.normalize_actions),
                "clip_actions": bool(config.clip_actions),
                "saved": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            },
        )
        self.checkpoint = path
        keep = self.experiment.keep_checkpoints
        if keep is not None:
            for old in list_checkpoints(self.run_dir)[:-keep]:
                if old.resolve() != path:
                    shutil.rmtree(old, ignore_errors=True)
        self._write_status("running")
        return path

    def _drop_stale_results(self) -> None:
        """Remove the evaluation and plots of the run's earlier end: they describe an older checkpoint, and the
        continued run writes its own (or, with the evaluation off, none that could be mistaken for its own)."""
        for folder in ("evaluation", "plots"):
            if (self.run_dir / folder).is_dir():
                shutil.rmtree(self.run_dir / folder)
                log.info("removed %s/ of iteration %d's checkpoint", folder, self.iteration)

    # -------------------------------------------------------------- after training

    def _evaluate(self) -> dict[str, Any]:
        """The final checkpoint against the heuristics on the scenario's load grid; written to evaluation/."""
        ev = self.experiment.evaluation
        overrides = self.experiment.env_args.get("overrides")
        scenario = load_scenario(self.experiment.scenario, overrides) if overrides else self.experiment.scenario
        self.algo.stop()  # frees its CPUs for the evaluation runs
        self.algo = None
        doc = evaluate(
            scenario,
            [str(self.checkpoint), *ev.heuristics],
            ev.loads,
            tasks=ev.tasks,
            seeds=ev.seeds,
            workers=ev.workers,
            address=self.address,
            progress=self.progress,
            explore=ev.explore,
            force=True,  # its size was checked before training (check_experiment)
        )
        write_results(doc, self.run_dir / "evaluation")
        return doc

    def _plot(self, evaluation: dict[str, Any] | None) -> None:
        plots = self.run_dir / "plots"
        plot_learning_curve(self._csv.rows, plots / "learning_curve.png", title=self.run_dir.name)
        if evaluation is not None:
            write_plots(evaluation, plots)

    def _write_status(self, status: str) -> None:
        import ray
        import torch

        previous = {}
        if (self.run_dir / RUN_FILE).is_file():
            previous = read_json(self.run_dir / RUN_FILE)
        _write_json(
            self.run_dir / RUN_FILE,
            {
                "run_name": self.run_dir.name,
                "status": status,
                "created": previous.get("created", time.strftime("%Y-%m-%dT%H:%M:%S%z")),
                "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "iteration": self.iteration,
                "timesteps": self.timesteps,
                "checkpoint": None
                if self.checkpoint is None
                else str(self.checkpoint.relative_to(self.run_dir.resolve())),
                "commands": self._commands(previous.get("commands", [])),
                "ray": {"address": self.address, "num_env_runners": self._env_runners},
                "versions": {"dcgym": version("dcgym"), "ray": ray.__version__, "torch": torch.__version__},
                "wandb": None if self._wandb_run is None else {"id": self._wandb_run.id, "mode": self._wandb_mode},
            },
        )

    def _commands(self, previous: list[str]) -> list[str]:
        """The command lines that worked on this run folder, this one appended once."""
        if not self._command_logged:
            self._command_logged = True
            return [*previous, " ".join(self.command)]
        return previous

    def close(self) -> None:
        """Stop the algorithm, close the loggers, shut Ray down if this trainer started it."""
        if self.algo is not None:
            self.algo.stop()
            self.algo = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._wandb_run is not None:
            self._wandb_run.finish()
            self._wandb_run = None
        if self._ray_started:
            import ray

            ray.shutdown()
            self._ray_started = False


def _timesteps(algo) -> float:
    """Env steps sampled over the algorithm's life (restored with it)."""
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME

    try:
        return algo.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0) or 0
    except (KeyError, AttributeError, TypeError):
        return 0


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (RLlib's env_config may hold tuples or paths)."""
    return json.loads(json.dumps(value, default=str))


def _wandb_account(wandb) -> bool:
    """Whether W&B has an API key configured (wandb's own lookup: env, settings, netrc)."""
    try:
        return bool(wandb.Api().api_key)
    except Exception:  # noqa: BLE001 - any failure means: no usable account, stay offline
        return False


_PROGRESS = (
    ("charts/imbalance", "imbalance", ".3g", ""),  # rack
    ("charts/p99_us", "p99", ".0f", "us"),  # rack
    ("charts/p99_fct_s", "p99", ".3g", "s"),  # multi-LB
    ("charts/link_utilization", "link_utilization", ".3f", ""),  # flow
)
"""Environment metrics the progress line shows after the return, those the environment reports."""


def _postfix(metrics: Mapping[str, float]) -> str:
    value = metrics.get("charts/return", metrics.get("charts/team_return"))  # a one-agent env has only the latter
    shown = [f"return={'(no episode ended yet)' if value is None else format(value, '.4g')}"]
    shown += [f"{label}={format(metrics[key], fmt)}{unit}" for key, label, fmt, unit in _PROGRESS if key in metrics]
    return " ".join(shown)


# ------------------------------------------------------------------------------ entry points


def train(
    experiment: Experiment,
    out: str | Path = "runs",
    *,
    address: str | None = None,
    use_wandb: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Train ``experiment`` in a new run folder under ``out``; returns what was done."""
    trainer = Trainer(experiment, new_run_dir(experiment, out), address=address, use_wandb=use_wandb, progress=progress)
    trainer.setup()
    try:
        return trainer.run()
    finally:
        trainer.close()


def resume(
    run: str | Path,
    out: str | Path = "runs",
    overrides: Mapping[str, Any] | None = None,
    *,
    address: str | None = None,
    use_wandb: bool = False,
    progress: bool = True,
) -> TrainResult:
    """Continue the run folder ``run`` (a path or a name under ``out``) from its newest checkpoint.

    ``overrides`` (dotted keys, as ``--set``) change the experiment, e.g.
    ``{"budget.iterations": 200}``; the changed experiment is written back.
    """
    run_dir = find_run(run, out)
    experiment = load_experiment(run_dir / CONFIG_FILE, overrides)
    trainer = Trainer(experiment, run_dir, resuming=True, address=address, use_wandb=use_wandb, progress=progress)
    trainer.setup()
    (run_dir / CONFIG_FILE).write_text(experiment.to_yaml(), encoding="utf-8")
    try:
        return trainer.run()
    finally:
        trainer.close()
