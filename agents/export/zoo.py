"""The policy zoo, built: zoo entries from finished training runs (``zoo/``, zoo/README.md).

Each policy is ``NAME.dcpol`` (a policy file, docs/policy_format.md) beside ``NAME.md``, its card: one
provenance line, the command that trained it, how to evaluate it (the family's words:
:meth:`~dcgym.agents.evaluation.family.EvaluationFamily.zoo_usage`) and its training run's evaluation table (the
family's :attr:`~dcgym.agents.evaluation.family.EvaluationFamily.card_metric`). OSML's three models make a folder
``NAME/`` of policy files beside its ``NAME.md`` (:func:`build_osml_entry`). :func:`build_entry` makes one entry
from a ``train.py`` run folder (``benchmarks/build_zoo.py`` is its command line); :mod:`dcgym.agents.policies.zoo`
reads the zoo.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dcgym.agents.evaluation.document import get_path
from dcgym.agents.evaluation.family import family_of
from dcgym.agents.export.exporter import export_policy
from dcgym.agents.export.osml_policies import export_osml
from dcgym.agents.policies.checkpoints import find_checkpoint, read_meta
from dcgym.agents.policies.zoo import ENTRY_NAME, SUFFIX, ZOO_PREFIX
from dcgym.agents.policy_format import read_policy
from dcgym.envs.error import InvalidConfigError
from dcgym.envs.families import env_family

__all__ = ["ZooEntry", "build_entry", "build_osml_entry", "build_zoo", "evaluation_table", "experiment_name"]


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


def _refuse_existing(out: Path, name: str, paths: Sequence[Path], replace: bool) -> None:
    """InvalidConfigError naming ``name`` if one of ``paths`` exists and ``replace`` is false: nothing is overwritten
    by accident (a zoo entry may have been made another way, e.g. searched, and its card written by hand)."""
    there = [p.name for p in paths if p.exists()]
    if there and not replace:
        raise InvalidConfigError(
            "name", name, f"an entry not in {out} yet ({', '.join(there)} there; --replace overwrites it)"
        )


def build_entry(
    run_dir: str | Path, out: str | Path, name: str | None = None, commit: str | None = None, replace: bool = False
) -> ZooEntry:
    """Export a run folder's final checkpoint to ``out/NAME.dcpol`` and write ``out/NAME.md``; an entry already
    there is refused unless ``replace``.

    ``name`` defaults to :func:`experiment_name`; ``commit`` to the dcgym
    repository's ``git rev-parse HEAD`` (the commit the zoo is built from).
    The card has one provenance line (config, seed, commit, training budget
    and what was used of it, run and checkpoint) and the p99 table of the
    run's final evaluation (``evaluation/results.json``), if it has one.
    """
    run = Path(run_dir)
    if not (run / "run.json").is_file() or not (run / "config.yaml").is_file():
        raise InvalidConfigError(
            "RUN", str(run_dir), "a run folder written by train.py (with run.json and config.yaml)"
        )
    name = experiment_name(run) if name is None else name
    if not ENTRY_NAME.fullmatch(name):
        raise InvalidConfigError("name", name, "1 to 128 letters, digits, _, - and .")
    out = Path(out)
    _refuse_existing(out, name, [out / f"{name}{SUFFIX}", out / f"{name}.md"], replace)
    checkpoint = find_checkpoint(run)
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


def _metric(doc: Mapping[str, Any]) -> tuple[str, str, str]:
    """The statistic the card shows (the family's :attr:`~dcgym.agents.evaluation.family.EvaluationFamily.card_metric`):
    (dotted path in a summary cell, what it is, number format)."""
    return family_of(doc["family"]).card_metric


def evaluation_table(doc: Mapping[str, Any]) -> str:
    """A Markdown table of the results document's headline statistic (:func:`_metric`): one row per policy, one
    column per load; ``mean ± ci95`` over seeds when there are several."""
    path, _, fmt = _metric(doc)
    loads: list[float] = []
    cells: dict[str, dict[float, str]] = {}
    for s in doc["summary"]:
        if s["load"] not in loads:
            loads.append(s["load"])
        value = get_path(s, path)
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
    what = _metric(doc)[1]
    work = family_of(doc["family"]).work
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
    """How the card's policy is evaluated: its family's words (:meth:`EvaluationFamily.zoo_usage`)."""
    return family_of(env_family(experiment["env"])).zoo_usage(name, experiment)


def _training_command(info: Mapping[str, Any]) -> list[str]:
    """The card's ``Trained with`` paragraph: run.json's first command (train.py's, with its ``--set``
    overrides), or nothing for a run started from Python."""
    commands = info.get("commands") or []
    if not commands:
        return []
    return [f"Trained with: `python {commands[0]}`.", ""]


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
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parents[2],  # <repo>/agents/export/zoo.py
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
    return yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8"))


def build_zoo(
    runs: Sequence[str | Path], out: str | Path, commit: str | None = None, replace: bool = False
) -> list[ZooEntry]:
    """:func:`build_entry` for every run folder into ``out``; refuses two runs of one experiment name, and (unless
    ``replace``) an entry already there, before writing any."""
    names = [experiment_name(r) if (Path(r) / "run.json").is_file() else None for r in runs]
    for name in names:
        if name is not None and names.count(name) > 1:
            clash = [str(r) for r, n in zip(runs, names) if n == name]
            raise InvalidConfigError("RUN", clash, f"one run per experiment name (these all make zoo/{name}{SUFFIX})")
        if name is not None:
            _refuse_existing(Path(out), name, [Path(out) / f"{name}{SUFFIX}", Path(out) / f"{name}.md"], replace)
    return [build_entry(r, out, commit=commit, replace=replace) for r in runs]


def build_osml_entry(
    models: str | Path,
    run_dir: str | Path,
    out: str | Path,
    name: str,
    commit: str | None = None,
    made_with: Sequence[str] = (),
    options: Mapping[str, str] | None = None,
    replace: bool = False,
) -> ZooEntry:
    """OSML's three models as the zoo folder ``out/NAME/`` (``model_a.dcpol``, ``model_b.dcpol`` from a folder of
    ``model_a.pt`` and ``model_b.pt``, ``model_c.dcpol`` from a Model-C run folder's final checkpoint) and the card
    ``out/NAME.md``: Model-C's provenance line (as :func:`build_entry`'s), Models A and B's rows and held-out errors
    (their files' training metrics), the commands that made them (``made_with``, as given) and how to evaluate it.
    Models A' and B' join when ``models`` holds them; ``options`` (the scheduler's ``rule``, ``reclaim``, ``shadows``) are
    recorded in ``model_c.dcpol``, so that ``zoo:NAME`` runs with them. An entry already there is refused unless
    ``replace``."""
    run = Path(run_dir)
    if not (run / "run.json").is_file() or not (run / "config.yaml").is_file():
        raise InvalidConfigError("RUN", str(run_dir), "Model-C's run folder written by train.py (algorithm osml_dqn)")
    if not ENTRY_NAME.fullmatch(name) or name in (".", ".."):
        raise InvalidConfigError("name", name, "1 to 128 letters, digits, _, - and .")
    experiment = _config(run)
    if experiment.get("algorithm") != "osml_dqn":
        raise InvalidConfigError("RUN", str(run_dir), "a run of algorithm osml_dqn (OSML's Model-C)")
    _refuse_existing(Path(out), name, [Path(out) / name, Path(out) / f"{name}.md"], replace)
    checkpoint = find_checkpoint(run)
    folder = Path(out) / name
    written = export_osml(models, checkpoint, folder, options)
    from dcgym.agents.osml.supervised import Model  # torch: only to read the PyTorch models' training metrics

    metrics = {  # Models A' and B' (the shadows) when the folder holds them
        kind: Model.load(Path(models) / f"{which}.pt").metrics for kind, which in SUPERVISED.items() if which in written
    }
    sizes = sum(p.stat().st_size for p in written.values())
    lines = [
        f"# {name}",
        "",
        "OSML's models (Liu et al., FAST 2023; docs/osml.md) as policy files: "
        + "; ".join(_model_line(kind, metrics.get(kind)) for kind in metrics)
        + "; Model-C "
        + _provenance(run, _run_json(run), experiment, read_meta(checkpoint), checkpoint, commit).removeprefix(
            "Provenance: "
        ),
        "",
    ]
    lines += [f"Built {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC.", ""]
    if made_with:
        lines += ["Made with:", "", "```text", *made_with, "```", ""]
    roles = {
        "model_a": "raw counters -> OAA, RCliff, bandwidth",
        "model_b": "raw counters and slowdown -> B-Points",
        "model_c": "scaled counters -> 49 Q-values",
        "model_a_shadow": "Model-A', raw counters and the neighbours' -> OAA, RCliff, bandwidth",
        "model_b_shadow": "Model-B', those and the cores and ways kept -> slowdown",
    }
    files = ", ".join(f"`{path.name}` ({roles[which]})" for which, path in written.items())
    lines += [
        f"Policy: folder `{name}/`, {sizes:,} bytes: {files}.",
        "",
        "OSML's scheduler runs it with "
        + (", ".join(f"`{k}={v}`" for k, v in options.items()) if options else "its default parameters")
        + (
            " (recorded in `model_c.dcpol`; a parameter given, `zoo:NAME:key=value`, overrides them)."
            if options
            else "."
        ),
        "",
        "Evaluate on any colo scenario (OSML's control logic beside the engine, the models in the C++ runtime): "
        f"`python evaluate.py --scenario {experiment.get('scenario', 'osml_case_a')} --policy {ZOO_PREFIX}{name} "
        "--policy parties`.",
        "",
    ]
    for kind in metrics:
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


SUPERVISED = {"A": "model_a", "B": "model_b", "A'": "model_a_shadow", "B'": "model_b_shadow"}
"""The card's name of each supervised model, and its file's stem."""


def _model_line(kind: str, metrics: Mapping[str, Any] | None) -> str:
    if not metrics:
        return f"Model-{kind} (no training metrics)"
    return f"Model-{kind} trained on {metrics['train_rows']:,} rows, {metrics['test_rows']:,} held out"
