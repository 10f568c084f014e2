"""The colo family's evaluation: schedulers partitioning one server, rows of convergence, QoS and resources.

Every scheduler runs on every mix of the scenario with every seed for
``seconds`` of simulated time (default: the scenario's ``horizon_s``, OSML's
3 minutes), from time 0 with nothing allocated (:func:`run`). The **load
axis is the mix index**: ``loads`` are indices into the scenario's ``mixes``
(``--mixes 0,3,7`` on the command line), and a row's ``load`` is its mix.

Every second the run takes one sample of each running service's Latency
counter (its p99 over the last second with sampling error, as OSML's and
PARTIES' controllers read it). A service *meets QoS* at a sample when that
p99 is within its target or, as OSML's ``is_QoS_met``, the mean of its last
five samples is. A run has **converged** when every running service met QoS
at each sample of some ``hold_s`` seconds (the scenario's; 5 s, OSML's
five-sample history), and its ``convergence_s`` is the time of the first
sample of the first such streak, counted from time 0 (OSML §6.2: "until all
applications meet their QoS targets"; a run that never gets there within the
horizon is OSML's "cannot deliver QoS"). Whether QoS then holds is
``qos_met_fraction``'s and ``p99_over_target``'s (the last ``hold_s``). EMU (PARTIES, OSML §6.1) is the mix's total load as a fraction
of the services' max loads, counted for converged runs only.

Plots: each service's p99 / target and its cores and ways over time for the
runs that keep a timeline (by default the first seed's runs of the first
four mixes; ``--timeline US`` keeps every run's, sampled every US
microseconds; ``sample_period_us=0`` in Python none), and the CDF of convergence times per
scheduler over every mix and seed.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from dcgym.agents.evaluation.document import finite
from dcgym.agents.evaluation.family import Change, Column, EvaluationFamily, Options
from dcgym.agents.evaluation.plots import new_figure, save_figure, value_axis
from dcgym.agents.osml.files import is_osml_folder
from dcgym.agents.policies.checkpoints import checkpoint_labels
from dcgym.agents.policies.colo import make_scheduler, osml_files, trained_model_c
from dcgym.agents.policies.sources import Source, Spec
from dcgym.cpp_core import check_colo_config
from dcgym.envs.colo.scenario import MAX_HORIZON_S, ColoScenario, SchedulerSpec, parse_scheduler
from dcgym.envs.colo.server import ColoServer
from dcgym.envs.error import InvalidConfigError

__all__ = ["SAMPLE_S", "ColoEvaluation", "ColoJob", "ColoRow", "run", "short_labels"]

SAMPLE_S = 1.0
"""Seconds between the run's QoS samples (the Latency counter's one-second window)."""

HISTORY = 5
"""Samples in OSML's is_QoS_met mean (HISTORY_LEN)."""

TIMELINE_MIXES = 4
"""Without --timeline, the first seed's runs of this many first mixes keep a timeline."""


class ColoRow(BaseModel):
    """One run of one scheduler on one mix with one seed on a colo scenario (times in seconds)."""

    model_config = ConfigDict(extra="forbid")
    policy: str = Field(description="the scheduler's label (its spec)")
    load: int = Field(description="the mix: an index into the scenario's mixes (the colo family's load axis)")
    seed: int = Field(description="the seed of every random stream of the run (noise, the scheduler's draws)")
    services: list[str] = Field(description="the mix's services, in order")
    load_fractions: list[float] = Field(description="each service's initial load as a fraction of its max load")
    converged: bool = Field(description="every running service met QoS at each 1-s sample of some hold_s seconds")
    convergence_s: float | None = Field(
        description="time of the first sample of the first such streak, s from time 0 (null: not converged)"
    )
    qos_met_fraction: float = Field(description="share of (1-s sample, running service) pairs with p99 <= target")
    cores_used: int = Field(description="logical cores held by services at the end, cores (private and shared)")
    ways_used: int = Field(description="LLC ways held by services at the end, ways (private and shared)")
    emu: float | None = Field(
        description="effective machine utilization: the sum of load_fractions when converged (null otherwise)"
    )
    actions: int = Field(description="scheduler decisions that changed the allocation, actions")
    actions_to_convergence: int | None = Field(
        description="of which were taken up to convergence_s, actions (OSML Fig. 9 counts these; null: not converged)"
    )
    core_actions: int = Field(description="of which changed some service's cores, actions")
    way_actions: int = Field(description="of which changed some service's ways, actions")
    p99_over_target: dict[str, float | None] = Field(
        description="per service, mean p99 / target over the last hold_s seconds (null: not running then)"
    )
    max_p99_over_target: float | None = Field(description="the largest of p99_over_target")
    final_cores: dict[str, int] = Field(description="per service, private logical cores at the end, cores")
    final_ways: dict[str, int] = Field(description="per service, private LLC ways at the end, ways")
    sim_time_s: float = Field(description="simulated time at the end of the run, s")
    wall_s: float = Field(description="wall-clock seconds of the run (the only field that differs between reruns)")


def run(
    config: dict[str, Any],
    scheduler: SchedulerSpec | str,
    seed: int,
    seconds: float,
    hold_s: float,
    timeline_s: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One scheduler on one engine config for ``seconds``: the row's measured fields and, with ``timeline_s``,
    each service's p99 / target, cores and ways every ``timeline_s`` seconds."""
    start = time.perf_counter()
    server = ColoServer({**config, "seed": seed})
    sched = make_scheduler(scheduler)
    sched.reset(server, np.random.default_rng(seed))
    n = server.num_services
    end = server.ticks(seconds)
    every = {"decide": server.ticks(sched.interval_s), "sample": server.ticks(SAMPLE_S)}
    if timeline_s:
        every["record"] = server.ticks(timeline_s)
    due = {"decide": 0, "sample": every["sample"], **({"record": 0} if timeline_s else {})}
    history = [deque(maxlen=HISTORY) for _ in range(n)]
    met_all: list[bool] = []
    acted: list[int] = []  # actions taken by each sample
    ratios: list[np.ndarray] = []  # per sample: p99 / target, NaN for services not running
    met_pairs = pairs = 0
    timeline: dict[str, Any] | None = (
        {
            "times_s": [],
            "ratio": [[] for _ in range(n)],
            "cores": [[] for _ in range(n)],
            "ways": [[] for _ in range(n)],
        }
        if timeline_s
        else None
    )
    t = 0
    while True:
        if due.get("record") == t:
            _record(server, timeline)
            due["record"] += every["record"]
        if t >= end:
            break
        if due["decide"] == t:
            sched.act(server)
            due["decide"] += every["decide"]
        nxt = min(end, *due.values())
        server.sim.step(nxt - t)
        t = nxt
        if due["sample"] == t:
            due["sample"] += every["sample"]
            running = server.running
            ratio = np.where(running, server.latency_ms / server.qos_ms, np.nan)
            ok = True
            for i in np.flatnonzero(running):
                history[i].append(ratio[i])
                ok &= bool(ratio[i] <= 1.0 or np.mean(history[i]) <= 1.0)
                met_pairs += bool(ratio[i] <= 1.0)
                pairs += 1
            for i in np.flatnonzero(~running):
                history[i].clear()
            met_all.append(ok)
            acted.append(server.actions)
            ratios.append(ratio)
    hold = max(1, round(hold_s / SAMPLE_S))
    first = next((j for j in range(len(met_all) - hold + 1) if all(met_all[j : j + hold])), None)
    converged = first is not None
    tail = np.array(ratios[-max(1, round(hold_s / SAMPLE_S)) :]) if ratios else np.full((1, n), np.nan)
    with np.errstate(all="ignore"):
        mean_tail = [None if np.all(np.isnan(col)) else float(np.nanmean(col)) for col in tail.T]
    finite_tail = [x for x in mean_tail if x is not None]
    cores_used, ways_used = server.used()
    names = server.names
    row = {
        "converged": converged,
        "convergence_s": (first + 1) * SAMPLE_S if converged else None,
        "qos_met_fraction": met_pairs / pairs if pairs else 1.0,
        "cores_used": int(cores_used),
        "ways_used": int(ways_used),
        "actions": int(server.actions),
        "actions_to_convergence": int(acted[first]) if converged else None,
        "core_actions": int(server.core_actions),
        "way_actions": int(server.way_actions),
        "p99_over_target": dict(zip(names, mean_tail)),
        "max_p99_over_target": max(finite_tail) if finite_tail else None,
        "final_cores": dict(zip(names, map(int, server.cores))),
        "final_ways": dict(zip(names, map(int, server.ways))),
        "sim_time_s": server.now_s,
        "wall_s": time.perf_counter() - start,
    }
    return row, timeline


def _record(server: ColoServer, timeline: dict[str, Any]) -> None:
    running = server.running
    ratio = server.latency_ms / server.qos_ms
    timeline["times_s"].append(server.now_s)
    shared = server.shared
    for i in range(server.num_services):
        timeline["ratio"][i].append(float(ratio[i]) if running[i] else None)
        timeline["cores"][i].append(server.total_cores if shared and running[i] else int(server.cores[i]))
        timeline["ways"][i].append(server.total_ways if shared and running[i] else int(server.ways[i]))


@dataclass(frozen=True)
class ColoJob:
    """One scheduler on one mix with one seed: plain data, so it travels to Ray workers."""

    policy: str
    load: int
    seed: int
    config: dict[str, Any]
    scheduler: dict[str, Any]
    seconds: float
    hold_s: float
    services: tuple[str, ...]
    load_fractions: tuple[float, ...]
    timeline_s: float | None

    def run(self) -> dict[str, Any]:
        measured, timeline = run(
            self.config, SchedulerSpec(self.scheduler), self.seed, self.seconds, self.hold_s, self.timeline_s
        )
        row = {
            "policy": self.policy,
            "load": self.load,
            "seed": self.seed,
            "services": list(self.services),
            "load_fractions": list(self.load_fractions),
            **measured,
        }
        row["emu"] = float(sum(self.load_fractions)) if row["converged"] else None
        row = {k: row[k] for k in ColoRow.model_fields}
        if timeline is not None:
            timeline.update(policy=self.policy, load=self.load, seed=self.seed, services=list(self.services))
        return {"result": finite(row), "histogram": None, "timeline": finite(timeline)}


MixIndices = Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1)]


class ColoEvaluation(EvaluationFamily):
    """Schedulers on one server: convergence, QoS, resources used and EMU per mix."""

    kind = "colo"
    work = "seconds"
    default_work = 180
    run_length = "seconds of simulated time on a colo server"
    default_scenario = "osml_case_a"  # OSML's case A, three services on its server
    default_heuristics = ("parties",)  # the search OSML is compared with
    fastest_rate = 2000.0  # osml_case_a with its scheduler: 1,600 simulated seconds a second
    row_model = ColoRow
    load_grid = MixIndices
    load_name = "mix"
    headline = ("qos_met_fraction", "share of (1-s sample, running service) pairs within QoS", 3)
    headline_higher_is_better = True
    card_metric = ("qos_met_fraction", "share of (1-s sample, running service) pairs within QoS", ",.3f")
    summary_metrics: ClassVar[tuple[str, ...]] = (
        "converged",
        "convergence_s",
        "qos_met_fraction",
        "cores_used",
        "ways_used",
        "emu",
        "actions",
        "max_p99_over_target",
    )

    def default_work_for(self, scenario: Any) -> int:
        return int(math.ceil(scenario.horizon_s))

    def run_length_help(self) -> str:
        return f"{self.run_length} (default: the scenario's horizon_s)"

    def warmup_fraction(self, scenario: Any) -> float:
        return 0.0  # every run starts from nothing allocated: its convergence is what is measured

    def changes(self, scenario: Any, load: int) -> list[Change]:
        events = []
        for i, (name, entry) in enumerate(zip(scenario.agent_names(load), scenario.mix(load))):
            where = f"mixes.{load}.{i}"
            if entry.launch_s > 0:
                events.append((entry.launch_s, f"{where}.launch_s", f"{name} launches at {entry.launch_s:g} s"))
            if entry.end_s is not None:
                events.append((entry.end_s, f"{where}.end_s", f"{name} ends at {entry.end_s:g} s"))
            for k, (t, x) in enumerate(entry.changes):
                events.append((t, f"{where}.changes.{k}", f"{name}'s load to {x:g} at {t:g} s"))
        return [Change(field, what, t) for t, field, what in sorted(events)]

    def arrivals(self, scenario: Any, load: int) -> Callable[[float], float]:
        return lambda seconds: seconds  # a run's length is simulated time

    def run_end(self, scenario: Any, load: int, work: int) -> str:
        return f"{work} s of simulated time"

    def summary_paths(self, rows: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
        """The summary metrics, less those no run of the cell has (convergence time and EMU when none converged)."""
        return tuple(m for m in self.summary_metrics if any(r.get(m) is not None for r in rows))

    def default_policies(self, scenario: Any) -> list[Any]:
        return [str(scenario.scheduler)]

    def jobs(
        self,
        scenario: ColoScenario,
        scenario_spec: str | Path,
        specs: Sequence[Spec],
        loads: Sequence[int],
        seeds: Sequence[int],
        work: int,
        options: Options,
    ) -> list[Any]:
        if not scenario.hold_s < work <= MAX_HORIZON_S:
            raise InvalidConfigError(
                "tasks",
                work,
                f"seconds of simulated time per run > the scenario's hold_s ({scenario.hold_s:g}) and at most "
                f"{MAX_HORIZON_S:,} (a day, as horizon_s)",
            )
        for load in loads:
            scenario.mix(load)
        period = options.sample_period_us
        jobs: list[Any] = []
        for spec in specs:
            label = None
            if spec.source is Source.POLICY_FILE:
                label, files = osml_files(spec.given)
                spec = Spec(files, Source.HEURISTIC)
            elif spec.source is Source.CHECKPOINT and is_osml_folder(spec.given):
                # a folder of OSML's policy files, as osml:files=DIR
                label = f"{Path(spec.given).name} (files)"
                spec = Spec({"policy": "osml", "files": str(spec.given)}, Source.HEURISTIC)
            elif spec.source is Source.CHECKPOINT:  # a run of osml_dqn: its Model-C with the zoo's Models A and B
                label = checkpoint_labels([spec.given])[0]
                spec = Spec(trained_model_c(spec.given), Source.HEURISTIC)
            given = spec.given
            if not isinstance(given, (str, Mapping)):
                raise self.refuse(spec, "a colo scheduler name or mapping")
            try:
                parsed = parse_scheduler(given)
                make_scheduler(parsed)  # checks the parameters before any run
            except InvalidConfigError as exc:
                raise exc.under("policy") if exc.field not in ("", "policy") else _as_policy(exc) from None
            label = label or (given if isinstance(given, str) else str(parsed))
            for k, load in enumerate(loads):
                for j, seed in enumerate(seeds):
                    config = scenario.engine_config(mix=load, seed=seed)
                    check_colo_config(config)
                    keep = (period is None and j == 0 and k < TIMELINE_MIXES) or bool(period)
                    timeline_s = (period / 1e6 if period else SAMPLE_S) if keep else None
                    jobs.append(
                        ColoJob(
                            label,
                            int(load),
                            seed,
                            config,
                            dict(parsed),
                            float(work),
                            scenario.hold_s,
                            tuple(scenario.agent_names(load)),
                            tuple(scenario.load_fractions(load)),
                            timeline_s,
                        )
                    )
        return jobs

    def timeline_values(self, scenario: Any, job: Any) -> float:
        """A kept timeline's samples, each a time and every service's latency ratio, cores and ways."""
        return 0.0 if not job.timeline_s else (job.seconds / job.timeline_s + 1) * (1 + 3 * len(job.services))

    def columns(self, doc: Mapping[str, Any]) -> list[Column]:
        return [
            Column("converged", "converged", 2),
            Column("convergence (s)", "convergence_s", 1),
            Column("QoS met", "qos_met_fraction", 3),
            Column("cores", "cores_used", 1),
            Column("ways", "ways_used", 1),
            Column("EMU", "emu", 2),
            Column("actions", "actions", 1),
            Column("worst p99/target", "max_p99_over_target", 2),
        ]

    def plots(self, doc: Mapping[str, Any], out: Path) -> dict[str, Path]:
        paths = {"convergence_cdf": plot_convergence_cdf(doc, out / "convergence_cdf.png")}
        if doc.get("timelines"):
            paths["latency"] = plot_timelines(doc, out / "latency_over_time.png", "ratio")
            paths["allocation"] = plot_timelines(doc, out / "allocation_over_time.png", "cores")
        return paths


def _as_policy(exc: InvalidConfigError) -> InvalidConfigError:
    return InvalidConfigError("policy", exc.value, exc.allowed, suggestion=exc.suggestion)


def _title(doc: Mapping[str, Any]) -> str:
    seeds = doc.get("seeds") or [doc.get("seed")]
    runs = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds"
    return f"{doc['scenario']}: {doc['seconds']:,} s per run, {runs}"


def short_labels(policies: Sequence[str]) -> dict[str, str]:
    """Legend labels for scheduler specs: a parameter that every spec of the same scheduler gives the same value
    (two specs or more) is left out and a path value is cut to its last part, so
    ``osml:models=/tmp/m,model_c=/tmp/mc_mixes`` next to ``osml:models=/tmp/m,model_c=/tmp/mc_single`` reads
    ``osml:model_c=mc_mixes``; specs whose labels would then coincide keep their full spec."""
    parsed = {}
    for p in policies:
        name, _, rest = p.partition(":")
        parsed[p] = (name, [kv for kv in rest.split(",") if kv] if rest else [])
    labels = {}
    for p, (name, pairs) in parsed.items():
        same = [q for q, (n, _) in parsed.items() if n == name]
        keep = [kv for kv in pairs if len(same) < 2 or not all(kv in parsed[q][1] for q in same)]
        cut = [
            k + "=" + v.rstrip("/").rsplit("/", 1)[-1] if "/" in v else kv
            for kv in keep
            for k, _, v in [kv.partition("=")]
        ]
        labels[p] = name + (":" + ",".join(cut) if cut else "")
    counts = Counter(labels.values())
    return {p: (label if counts[label] == 1 else p) for p, label in labels.items()}


def plot_convergence_cdf(doc: Mapping[str, Any], path: str | Path) -> Path:
    """The share of runs (every mix and seed) converged by each time, one line per scheduler (labelled by
    :func:`short_labels`, the legend below the axes); it tops out at the converged share."""
    policies = list(dict.fromkeys(r["policy"] for r in doc["results"]))
    labels = short_labels(policies)
    fig = new_figure(figsize=(6.4, 4.2 + 0.2 * math.ceil(len(policies) / 2)), layout="constrained")
    ax = fig.subplots()
    shown: list[float] = []
    for policy in policies:
        rows = [r for r in doc["results"] if r["policy"] == policy]
        times = sorted(r["convergence_s"] for r in rows if r["converged"])
        if not times:
            ax.plot([], [], label=f"{labels[policy]} (none converged)")
            continue
        shares = np.arange(1, len(times) + 1) / len(rows)
        ax.step([0.0, *times], [0.0, *shares], where="post", label=f"{labels[policy]} ({len(times)}/{len(rows)})")
        shown += times
    value_axis(ax, shown, "x")
    ax.set_xlabel("convergence time (s)")
    ax.set_ylabel("share of runs converged")
    ax.set_ylim(0, 1.02)
    ax.set_title(_title(doc), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    return save_figure(fig, path)


def plot_timelines(doc: Mapping[str, Any], path: str | Path, what: str) -> Path:
    """One panel per kept run (a row per scheduler, a column per mix): each service's p99 / target (``ratio``,
    log scale, the target at 1) or its cores (solid) and ways (dashed) over time. Services with the same values
    would hide each other: each is drawn thinner than the one before, so a line over another shows as a thin line
    inside a thick one. One legend for the figure, under the panels."""
    timelines = list(doc["timelines"])
    policies = list(dict.fromkeys(t["policy"] for t in timelines))
    labels = short_labels(policies)
    mixes = list(dict.fromkeys(t["load"] for t in timelines))
    services = list(dict.fromkeys(name for t in timelines for name in t["services"]))
    colors = {name: f"C{k % 10}" for k, name in enumerate(services)}
    widths = {name: 3.2 - 2.4 * k / max(len(services) - 1, 1) for k, name in enumerate(services)}
    fig = new_figure(figsize=(max(6.4, 4.0 * len(mixes)), 2.8 * len(policies) + 0.6), layout="constrained")
    axes = fig.subplots(len(policies), len(mixes), squeeze=False, sharex=True)
    for t in timelines:
        ax = axes[policies.index(t["policy"]), mixes.index(t["load"])]
        for i, name in enumerate(t["services"]):
            style = {"linewidth": widths[name], "color": colors[name], "alpha": 0.8}
            if what == "ratio":
                ys = [np.nan if v is None else v for v in t["ratio"][i]]
                ax.plot(t["times_s"], ys, **style)
            else:
                ax.step(t["times_s"], t["cores"][i], where="post", **style)
                ax.step(t["times_s"], t["ways"][i], where="post", linestyle="--", **style)
        if what == "ratio":
            ax.axhline(1.0, color="black", linewidth=0.6)
            ax.set_yscale("log")
            ax.set_ylabel("p99 / target")
        else:
            ax.set_ylabel("cores, ways")
        ax.set_title(f"{labels[t['policy']]}, mix {t['load']} (seed {t['seed']})", fontsize=9)
        ax.set_xlabel("time (s)")
        ax.grid(True, alpha=0.3)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors[n], linewidth=widths[n], label=n) for n in services]
    if what != "ratio":
        handles += [
            Line2D([], [], color="black", linewidth=1.0, label="cores"),
            Line2D([], [], color="black", linewidth=1.0, linestyle="--", label="ways"),
        ]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8)
    fig.suptitle(_title(doc), fontsize=9)
    return save_figure(fig, path)
