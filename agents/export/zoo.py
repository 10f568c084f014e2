"""The policy zoo: exported policies of finished training runs, by name (``zoo/``, zoo/README.md).

Each policy is ``NAME.dcpol`` (a policy file, docs/policy_format.md) beside
``NAME.md`` (one provenance line and its training run's evaluation table).
``evaluate.py --policy zoo:NAME`` evaluates ``NAME.dcpol`` in the engine.
A scheduler made of several models is a folder ``NAME/`` of policy files
beside its ``NAME.md``: OSML's Models A, B and C (``model_a.dcpol``,
``model_b.dcpol``, ``model_c.dcpol``, docs/osml.md), which ``zoo:NAME`` runs
on any colo scenario (:func:`resolve_zoo` with ``entry="folder"``).

The zoo folder is ``$DCGYM_ZOO`` when set, else the ``zoo/`` folder beside
the ``dcgym`` sources: the repository's top-level ``zoo/`` in a checkout or
an editable install (``agents/`` -> ``dcgym.agents``, so its parent is the
repository), and ``dcgym/zoo/`` in an installed wheel that ships it.

:func:`build_entry` makes one zoo entry from a ``train.py`` run folder
(``benchmarks/build_zoo.py`` is its command line).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dcgym.envs.error import InvalidConfigError, did_you_mean

__all__ = [
    "ENTRIES",
    "SUFFIX",
    "ZOO_ENV",
    "ZOO_PREFIX",
    "ZooEntry",
    "build_entry",
    "build_osml_entry",
    "card_options",
    "evaluation_table",
    "experiment_name",
    "is_policy_file_spec",
    "list_zoo",
    "resolve_zoo",
    "split_options",
    "zoo_dir",
]

ZOO_ENV = "DCGYM_ZOO"
"""Environment variable naming another zoo folder (tests, private zoos)."""
ZOO_PREFIX = "zoo:"
"""A policy spec ``zoo:NAME`` names the zoo's ``NAME.dcpol``."""
SUFFIX = ".dcpol"
"""The policy files' suffix."""

_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def zoo_dir(folder: str | Path | None = None) -> Path:
    """The zoo folder: ``folder`` if given, else ``$DCGYM_ZOO``, else the ``zoo/`` beside the dcgym sources."""
    if folder is not None:
        return Path(folder)
    if os.environ.get(ZOO_ENV):
        return Path(os.environ[ZOO_ENV])
    import dcgym.agents

    # dcgym.agents is <repo>/agents in a checkout or editable install, <site-packages>/dcgym/agents in a wheel.
    return Path(dcgym.agents.__file__).resolve().parents[1] / "zoo"


ENTRIES = ("file", "folder")
"""The zoo's two kinds of entry: a policy file ``NAME.dcpol``, or a folder ``NAME/`` of policy files."""


def list_zoo(folder: str | Path | None = None, entry: str = "file") -> list[str]:
    """The names of the zoo's policies, sorted: ``NAME.dcpol`` files (``entry="file"``) or ``NAME/`` folders holding
    policy files (``entry="folder"``: OSML's models); empty if there is no zoo folder."""
    where = zoo_dir(folder)
    if not where.is_dir():
        return []
    if entry == "folder":
        return sorted(p.name for p in where.iterdir() if p.is_dir() and any(p.glob(f"*{SUFFIX}")))
    return sorted(p.name.removesuffix(SUFFIX) for p in where.iterdir() if p.name.endswith(SUFFIX) and p.is_file())


def resolve_zoo(spec: str, folder: str | Path | None = None, entry: str = "file") -> Path:
    """The file of ``zoo:NAME`` (or ``NAME``), or with ``entry="folder"`` its folder of policy files;
    InvalidConfigError naming ``policy``, with the available names and a did-you-mean suggestion, if the zoo has
    no such policy."""
    name = spec.removeprefix(ZOO_PREFIX)
    where = zoo_dir(folder)
    path = where / (name if entry == "folder" else f"{name}{SUFFIX}")
    if _NAME.fullmatch(name) and name not in (".", "..") and (path.is_dir() if entry == "folder" else path.is_file()):
        return path
    known = list_zoo(folder, entry)
    what = "a zoo folder of policy files" if entry == "folder" else "a zoo policy"
    allowed = (
        f"{what}, one of " + ", ".join(ZOO_PREFIX + k for k in known) if known else f"{what}, but the zoo has none"
    )
    suggestion = did_you_mean(name, known)
    raise InvalidConfigError(
        "policy",
        spec,
        f"{allowed} (zoo folder {where}; ${ZOO_ENV} sets another)",
        suggestion=None if suggestion is None else ZOO_PREFIX + suggestion,
    )


# ------------------------------------------------------------------------------ building entries


@dataclass(frozen=True)
class ZooEntry:
    """What :func:`build_entry` wrote."""

    name: str
    policy: Path  # NAME.dcpol
    card: Path  # NAME.md


def experiment_name(run_dir: str | Path) -> str:
    """The experiment a run folder trained: the stem of ``--config`` in the first command of its run.json
    (``configs/experiments/malcolm_hetero_exp.yaml`` -> ``malcolm_hetero_exp``), else
    ``<scenario>__<algorithm>`` from its config.yaml."""
    config = _config_path(_run_json(Path(run_dir)))
    if config is not None:
        return Path(config).name.removesuffix(".yaml").removesuffix(".yml")
    experiment = _config(Path(run_dir))
    return f"{Path(str(experiment['scenario'])).stem}__{experiment['algorithm']}"


def build_entry(run_dir: str | Path, out: str | Path, name: str | None = None, commit: str | None = None) -> ZooEntry:
    """Export a run folder's final checkpoint to ``out/NAME.dcpol`` and write ``out/NAME.md``.

    ``name`` defaults to :func:`experiment_name`; ``commit`` to the dcgym
    repository's ``git rev-parse HEAD`` (the commit the zoo is built from).
    The card has one provenance line (config, seed, commit, training budget
    and what was used of it, run and checkpoint) and the p99 table of the
    run's final evaluation (``evaluation/results.json``), if it has one.
    """
    from dcgym.agents.export.exporter import export_policy
    from dcgym.agents.export.format import read_policy
    from dcgym.agents.training.checkpoints import find_checkpoint, read_meta

    run = Path(run_dir)
    if not (run / "run.json").is_file() or not (run / "config.yaml").is_file():
        raise InvalidConfigError(
            "RUN", str(run_dir), "a run folder written by train.py (with run.json and config.yaml)"
        )
    name = experiment_name(run) if name is None else name
    if not _NAME.fullmatch(name):
        raise InvalidConfigError("name", name, "1 to 128 letters, digits, _, - and .")
    checkpoint = find_checkpoint(run)
    out = Path(out)
    policy_path = export_policy(checkpoint, out / f"{name}{SUFFIX}")
    policy = read_policy(policy_path)
    meta = read_meta(checkpoint)
    info = _run_json(run)
    experiment = _config(run)
    lines = [
        f"# {name}",
        "",
        _provenance(run, info, experiment, meta, checkpoint, commit),
        "",
        *_training_command(info),
        f"Policy: `{name}{SUFFIX}`, {policy.kind}, {policy.num_agents} agents.",
        "",
        _usage(name, experiment),
        "",
    ]
    results = run / "evaluation" / "results.json"
    if results.is_file():
        doc = json.loads(results.read_text(encoding="utf-8"))
        lines += [_table_caption(doc), "", evaluation_table(doc), ""]
    else:
        lines += ["The run has no final evaluation (evaluation/results.json).", ""]
    card = out / f"{name}.md"
    card.write_text("\n".join(lines), encoding="utf-8")
    return ZooEntry(name, policy_path, card)


def _metric(doc: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """The statistic the card shows: (summary key, statistic, what it is, number format): rack p99 latency in us,
    multi-LB p99 FCT in s, flow mean FCT in ms (AuTO's headline)."""
    if doc["summary"] and "fct_ms" in doc["summary"][0]:
        return "fct_ms", "mean", "mean flow completion time (ms)", ",.2f"
    if doc["summary"] and "fct_s" in doc["summary"][0]:
        return "fct_s", "p99", "p99 flow completion time (s)", ",.3f"
    return "latency_us", "p99", "p99 latency (us)", ",.1f"


def evaluation_table(doc: Mapping[str, Any]) -> str:
    """A Markdown table of the results document's headline statistic (:func:`_metric`): one row per policy, one
    column per load; ``mean ± ci95`` over seeds when there are several."""
    key, stat, _, fmt = _metric(doc)
    loads: list[float] = []
    cells: dict[str, dict[float, str]] = {}
    for s in doc["summary"]:
        if s["load"] not in loads:
            loads.append(s["load"])
        value = s[key][stat]
        text = "-" if value["mean"] is None else format(value["mean"], fmt)
        if value["mean"] is not None and value.get("ci95") is not None:
            text += f" ± {format(value['ci95'], fmt)}"
        cells.setdefault(s["policy"], {})[s["load"]] = text
    head = "| policy | " + " | ".join(f"load {load:g}" for load in loads) + " |"
    rule = "|---|" + "---:|" * len(loads)
    rows = [f"| {policy} | " + " | ".join(row.get(load, "-") for load in loads) + " |" for policy, row in cells.items()]
    return "\n".join([head, rule, *rows])


def _table_caption(doc: Mapping[str, Any]) -> str:
    seeds = doc.get("seeds") or [doc.get("seed")]
    which = f"seed {seeds[0]}" if len(seeds) == 1 else f"{len(seeds)} seeds, mean ± 95% CI"
    what = _metric(doc)[2]
    work = "flows" if "flows" in doc else "tasks"  # the document names its unit of work (document.py)
    return (
        f"{what} of the run's final evaluation on `{doc['scenario']}` ({which}, "
        f"{doc[work]:,} {work} per run, the trained policy through its environment):"
    )


def _provenance(
    run: Path,
    info: Mapping[str, Any],
    experiment: Mapping[str, Any],
    meta: Mapping[str, Any],
    checkpoint: Path,
    commit: str | None,
) -> str:
    budget = experiment.get("budget") or {}
    limits = [
        f"{budget[k]:,} {k}" if k != "wall_time_s" else f"{budget[k]:g} s"
        for k in ("iterations", "timesteps", "wall_time_s")
        if budget.get(k) is not None
    ]
    config = _config_path(info)
    env_args = dict(experiment.get("env_args") or {})
    overrides = env_args.get("overrides")
    scenario = f"`{experiment['scenario']}`" + (f" with overrides `{json.dumps(overrides)}`" if overrides else "")
    if env_args.get("reward"):
        scenario += f", reward `{env_args['reward']}`"
    trained = _count(meta.get("iteration", info.get("iteration")))
    return (
        f"Provenance: config `{config or 'config.yaml'}` ({experiment['algorithm']} on {experiment['env']}, "
        f"scenario {scenario}), seed {experiment.get('seed')}, commit {_commit() if commit is None else commit}, "
        f"budget {' / '.join(limits) or 'none'}; trained {trained} iterations, "
        f"{_count(meta.get('timesteps', info.get('timesteps')))} env steps (run `{info.get('run_name', run.name)}`, "
        f"status {info.get('status', '?')}, checkpoint `{checkpoint.name}`)."
    )


def _usage(name: str, experiment: Mapping[str, Any]) -> str:
    env_args = dict(experiment.get("env_args") or {})
    if str(experiment.get("env", "")).startswith("lb_"):  # a multi-LB policy: lb_v0 driven by the C++ runtime
        spec = f"zoo:{name}" + (f":dispatch={env_args['dispatch']}" if env_args.get("dispatch") else "")
        return (
            f"Evaluate (lb_v0 driven by the C++ runtime each decision period): `python evaluate.py --policy {spec} "
            f"--scenario {experiment['scenario']} --policy sed`."
        )
    if str(experiment.get("env", "")) == "flow_v0":  # an AuTO agent: the whole run in C++, deciding every interval
        return (
            f"Evaluate in the engine (the runtime deciding every interval): `python evaluate.py --policy zoo:{name} "
            f"--scenario {experiment['scenario']} --policy qsjf --policy pias`."
        )
    options = [
        f"{k}={env_args[k]}"
        for k in ("heartbeat_us", "load_metric")
        if k in env_args and env_args[k] != {"heartbeat_us": 100, "load_metric": "expected_wait"}[k]
    ]
    spec = f"zoo:{name}" + (":" + ",".join(options) if options else "")
    scenario = str(experiment["scenario"])
    note = " (the scenario with the overrides above, as a YAML file)" if env_args.get("overrides") else ""
    return f"Evaluate in the engine: `python evaluate.py --policy {spec} --scenario {scenario} --policy po2`{note}."


def _training_command(info: Mapping[str, Any]) -> list[str]:
    """The card's ``Trained with`` paragraph: run.json's first command (train.py's, with its ``--set``
    overrides), or nothing for a run started from Python."""
    commands = info.get("commands") or []
    if not commands:
        return []
    return [f"Trained with: `python {commands[0]}`.", ""]


def card_options(name: str, folder: str | Path | None = None) -> str:
    """The options the card of ``zoo:NAME`` evaluates it with (``zoo:NAME:dispatch=sed`` -> ``dispatch=sed``):
    what a policy file does not store, so that a bare ``zoo:NAME`` runs as it was trained; ``""`` if none."""
    card = zoo_dir(folder) / f"{name}.md"
    if not card.is_file():
        return ""
    found = re.search(rf"--policy {re.escape(ZOO_PREFIX + name)}:(\S+?)[`\s]", card.read_text(encoding="utf-8"))
    return "" if found is None else found.group(1)


def _config_path(info: Mapping[str, Any]) -> str | None:
    """The ``--config`` of the first command in run.json that has one (train.py's, not a --resume)."""
    for command in info.get("commands") or []:
        words = str(command).split()
        for k, word in enumerate(words):
            if word == "--config" and k + 1 < len(words):
                return words[k + 1]
            if word.startswith("--config="):
                return word.split("=", 1)[1]
    return None


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else str(value)


def _commit() -> str:
    """``git rev-parse HEAD`` of the dcgym repository, or ``unknown`` outside one."""
    import dcgym.agents

    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(dcgym.agents.__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (proc.stdout.strip() or "unknown") if proc.returncode == 0 else "unknown"


def _run_json(run: Path) -> dict[str, Any]:
    path = run / "run.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _config(run: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))


def build_zoo(runs: Sequence[str | Path], out: str | Path, commit: str | None = None) -> list[ZooEntry]:
    """:func:`build_entry` for every run folder into ``out``; refuses two runs of one experiment name."""
    names = [experiment_name(r) if (Path(r) / "run.json").is_file() else None for r in runs]
    for name in names:
        if name is not None and names.count(name) > 1:
            clash = [str(r) for r, n in zip(runs, names) if n == name]
            raise InvalidConfigError("RUN", clash, f"one run per experiment name (these all make zoo/{name}{SUFFIX})")
    return [build_entry(r, out, commit=commit) for r in runs]


def build_osml_entry(
    models: str | Path,
    run_dir: str | Path,
    out: str | Path,
    name: str,
    commit: str | None = None,
    made_with: Sequence[str] = (),
) -> ZooEntry:
    """OSML's three models as the zoo folder ``out/NAME/`` (``model_a.dcpol``, ``model_b.dcpol`` from a folder of
    ``model_a.pt`` and ``model_b.pt``, ``model_c.dcpol`` from a Model-C run folder's final checkpoint) and the card
    ``out/NAME.md``: Model-C's provenance line (as :func:`build_entry`'s), Models A and B's rows and held-out errors
    (their files' training metrics), the commands that made them (``made_with``, as given) and how to evaluate it."""
    from dcgym.agents.export.osml_policies import export_osml
    from dcgym.agents.training.checkpoints import find_checkpoint, read_meta

    run = Path(run_dir)
    if not (run / "run.json").is_file() or not (run / "config.yaml").is_file():
        raise InvalidConfigError("RUN", str(run_dir), "Model-C's run folder written by train.py (algorithm osml_dqn)")
    if not _NAME.fullmatch(name) or name in (".", ".."):
        raise InvalidConfigError("name", name, "1 to 128 letters, digits, _, - and .")
    experiment = _config(run)
    if experiment.get("algorithm") != "osml_dqn":
        raise InvalidConfigError("RUN", str(run_dir), "a run of algorithm osml_dqn (OSML's Model-C)")
    checkpoint = find_checkpoint(run)
    folder = Path(out) / name
    written = export_osml(models, checkpoint, folder)
    from dcgym.agents.osml.supervised import Model

    metrics = {kind: Model.load(Path(models) / f"model_{kind.lower()}.pt").metrics for kind in ("A", "B")}
    sizes = sum(p.stat().st_size for p in written.values())
    lines = [
        f"# {name}",
        "",
        "OSML's three models (Liu et al., FAST 2023; docs/osml.md) as policy files: "
        + "; ".join(_model_line(kind, metrics.get(kind)) for kind in ("A", "B"))
        + "; Model-C "
        + _provenance(run, _run_json(run), experiment, read_meta(checkpoint), checkpoint, commit).removeprefix(
            "Provenance: "
        ),
        "",
    ]
    import datetime

    lines += [f"Built {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC.", ""]
    if made_with:
        lines += ["Made with:", "", "```text", *made_with, "```", ""]
    lines += [
        f"Policy: folder `{name}/`, {sizes:,} bytes: `model_a.dcpol` (raw counters -> OAA, RCliff, bandwidth), "
        "`model_b.dcpol` (raw counters and slowdown -> B-Points), `model_c.dcpol` (scaled counters -> 49 Q-values).",
        "",
        "Evaluate on any colo scenario (OSML's control logic beside the engine, the models in the C++ runtime): "
        f"`python evaluate.py --scenario osml_case_a --policy {ZOO_PREFIX}{name} --policy parties`.",
        "",
    ]
    for kind in ("A", "B"):
        per_service = (metrics.get(kind) or {}).get("test_mae_per_service")
        if per_service:
            targets = list(next(iter(per_service.values())))
            lines += [
                f"Model-{kind}'s held-out mean absolute error per service (data set units):",
                "",
                "| service | " + " | ".join(targets) + " |",
                "|---|" + "---:|" * len(targets),
                *(
                    f"| {svc} | " + " | ".join(f"{v:.2f}" for v in errs.values()) + " |"
                    for svc, errs in per_service.items()
                ),
                "",
            ]
    card = Path(out) / f"{name}.md"
    card.write_text("\n".join(lines), encoding="utf-8")
    return ZooEntry(name, folder, card)


def _model_line(kind: str, metrics: Mapping[str, Any] | None) -> str:
    if not metrics:
        return f"Model-{kind} (no training metrics)"
    return f"Model-{kind} trained on {metrics['train_rows']:,} rows, {metrics['test_rows']:,} held out"


# ------------------------------------------------------------------------------ policy-file specs


def is_policy_file_spec(spec: Any) -> bool:
    """Whether a policy spec names a policy file: ``zoo:NAME``, a path ending in ``.dcpol``, or a path (with a
    folder separator) to a file; options after a last ``:`` (``FILE:heartbeat_us=50``) allowed."""
    if isinstance(spec, Path):
        return spec.suffix == SUFFIX or spec.is_file()
    if not isinstance(spec, str):
        return False
    path, _ = split_options(spec)
    if path.startswith(ZOO_PREFIX):
        return True
    return path.endswith(SUFFIX) or (("/" in path or "\\" in path) and Path(path).is_file())


def split_options(spec: str) -> tuple[str, str]:
    """``"a.dcpol:heartbeat_us=50"`` -> ``("a.dcpol", "heartbeat_us=50")``; no options -> ``(spec, "")``."""
    head, sep, tail = spec.rpartition(":")
    if sep and "=" in tail and "/" not in tail and "\\" not in tail:
        return head, tail
    return spec, ""
