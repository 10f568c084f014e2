"""Each zoo policy's generalisation gap: its normalised score on the scenario it was trained on minus its score on
the held-out test suite of its family (docs/benchmarking.md, "Held-out scenarios"), written into its card.

    python benchmarks/zoo_gaps.py [--zoo zoo] [--seeds 2] [--work N] [--name NAME]

For each card (``zoo/NAME.md``): the training scenario its ``--scenario`` names, at the scenario's loads; the test
scenarios of the family's suite that the policy applies to (a policy made for a fixed number of nodes, servers or
agents runs only on test scenarios of its shape: the others are named as not applicable). Each run is scored
against the family's reference and top on the same workload (``agents/evaluation/scores.py``; rack and lb runs
drained, so that every family's top is a bound); the gap is the IQM over training runs minus the IQM over test
runs. The card's section ``## Held-out gap`` is replaced (or added at the end).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from dcgym.agents.evaluation import evaluate
from dcgym.agents.evaluation.scores import iqm, run_scores, scoring_of, top_values
from dcgym.agents.evaluation.suites import applies, suite_scenarios
from dcgym.agents.policies.zoo import list_zoo, trained_on
from dcgym.envs.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Held-out gap"
DEFAULT_WORK = {"rack": 20_000, "lb": 2_000, "flow": 5_000, "colo": 60}
"""Units of work per run by default: short, for a gap (the leaderboard runs longer)."""


def _scores(scenario: Any, path: Any, policy: str, loads: list[Any], seeds: list[int], work: int) -> list[float]:
    """The scores of ``policy``'s runs on ``scenario`` (``path``: its name or file) beside its reference and top."""
    scoring = scoring_of({"family": scenario.kind, "drained": True})
    others = [scoring.reference] + ([] if scoring.top_is_bound else [scoring.top])
    drained = scenario.kind in ("rack", "lb")  # so that their tops are their bounds
    doc = evaluate(
        path, [policy, *others], loads=loads, tasks=work, seeds=seeds, progress=False, workers=0, drained=drained
    )
    label = doc["results"][0]["policy"]
    return [r["score"] for r in run_scores(doc, top_values(doc, scenario)) if r["policy"] == label]


def gap(name: str, seeds: list[int], work: int | None) -> dict[str, Any]:
    """The zoo policy ``name``'s training scenario, its scores there and on the test suite, and the gap."""
    trained = trained_on(name)
    scenario = load_scenario(trained)
    kind, policy = scenario.kind, f"zoo:{name}"
    work = work or DEFAULT_WORK[kind]
    loads = list(scenario.loads)[:3]
    train = _scores(scenario, trained, policy, loads, seeds, work)
    test: list[float] = []
    applied, skipped = [], []
    folder = Path(tempfile.mkdtemp(prefix="zoo-gaps-"))
    for entry in suite_scenarios(f"{kind}:test"):
        path = entry.write(folder)
        if not applies(policy, path, entry.loads[0]):
            skipped.append(entry.name)
            continue
        applied.append(entry.name)
        test += _scores(entry.load(), path, policy, list(entry.loads), seeds, work)
    usable = [[s for s in train if s is not None]], [[s for s in test if s is not None]]
    train_iqm = iqm(usable[0]) if usable[0][0] else None
    test_iqm = iqm(usable[1]) if usable[1][0] else None
    return {
        "name": name,
        "kind": kind,
        "trained_on": trained,
        "loads": loads,
        "seeds": seeds,
        "work": work,
        "train": train_iqm,
        "test": test_iqm,
        "applied": applied,
        "skipped": skipped,
        "unscored": sum(s is None for s in train + test),
    }


def section(g: dict[str, Any]) -> str:
    """The card's ``## Held-out gap`` section."""
    scoring = scoring_of({"family": g["kind"], "drained": True})

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.3f}"

    lines = [
        HEADING,
        "",
        f"Normalised score (reference `{scoring.reference}` 0, top `{scoring.top}` 1; docs/benchmarking.md), IQM "
        f"over runs: on its training scenario `{g['trained_on']}` (loads {', '.join(map(str, g['loads']))}) "
        f"{fmt(g['train'])}; on the held-out test scenarios it applies to "
        f"({', '.join(f'`{n}`' for n in g['applied']) or 'none'}) {fmt(g['test'])}; "
        + (
            f"train minus test **{g['train'] - g['test']:+.3f}**."
            if g["train"] is not None and g["test"] is not None
            else "no gap (a side without a score)."
        ),
        "",
        f"Seeds {g['seeds']}, {g['work']:,} units of work per run (`python benchmarks/zoo_gaps.py --name {g['name']}`)"
        + (f"; {g['unscored']} runs without a score (no finite reference or top) left out" if g["unscored"] else "")
        + ".",
    ]
    if g["skipped"]:
        lines += [
            "",
            "Not applicable (another number of nodes, servers or agents than the policy was made for): "
            + ", ".join(f"`{n}`" for n in g["skipped"])
            + ".",
        ]
    return "\n".join(lines) + "\n"


def write(card: Path, text: str) -> None:
    """Replace the card's held-out section (up to the next ``## `` heading or the end) or add it at the end."""
    old = card.read_text(encoding="utf-8")
    start = old.find(HEADING)
    if start < 0:
        new = old.rstrip("\n") + "\n\n" + text
    else:
        end = old.find("\n## ", start + len(HEADING))
        new = old[:start] + text + ("" if end < 0 else old[end:])
    card.write_text(new, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--zoo", type=Path, default=ROOT / "zoo", help="the zoo folder whose cards to update")
    parser.add_argument("--seeds", type=int, default=2, help="seeds 1..N per run")
    parser.add_argument("--work", type=int, default=None, help="units of work per run (default: per family)")
    parser.add_argument("--name", action="append", help="only these zoo entries (repeatable)")
    args = parser.parse_args(argv)
    names = args.name or [*list_zoo(), *list_zoo(entry="folder")]
    for name in names:
        g = gap(name, list(range(1, args.seeds + 1)), args.work)
        write(args.zoo / f"{name}.md", section(g))
        print(f"{name}: train {g['train']} test {g['test']} ({', '.join(g['applied']) or 'no test scenario'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
