"""The results document's schema in words: one Markdown table per family, from the families' row models.

docs/results.md holds these tables (``python benchmarks/results_schema.py`` writes them; a test checks the page
against them), so the page and the rows cannot disagree.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel

from dcgym.agents.evaluation.family import EVALUATIONS, family_of

__all__ = ["family_table", "markdown"]


def _type(annotation: Any) -> str:
    """A field's type in words: number, integer, text, true/false, {mean, p50, ...} for a nested model."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "{" + ", ".join(annotation.model_fields) + "}"
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args and len(args) < len(typing.get_args(annotation)):
        return _type(args[0]) + " or null"
    if typing.get_origin(annotation) is dict:
        return "mapping"
    return {float: "number", int: "integer", str: "text", bool: "true/false"}.get(annotation, str(annotation))


def family_table(kind: str) -> str:
    """The Markdown table of one family's result row: field, type, meaning."""
    model = family_of(kind).row_model
    lines = ["| field | type | meaning |", "|---|---|---|"]
    for name, info in model.model_fields.items():
        lines.append(f"| `{name}` | {_type(info.annotation)} | {info.description or ''} |")
    return "\n".join(lines)


def markdown() -> str:
    """Every family's section: its name, what a run's length counts, the summary metrics, the row table."""
    sections = []
    for kind in EVALUATIONS:
        family = family_of(kind)
        summary = ", ".join(f"`{m}`" for m in family.summary_metrics)
        sections.append(
            f"## `{kind}`: {family.row_model.__doc__}\n\n"
            f"The document's `{family.work}` is the length of each run (`--tasks` counts {family.work}). Each summary "
            f"cell holds `{{mean, ci95, n}}` of {summary}, `censored` (any run censored)"
            + (f" and `{family.cdf_field}`, the quantiles at `cdf_probabilities`" if family.cdf_field else "")
            + ".\n\n"
            + family_table(kind)
        )
    return "\n\n".join(sections) + "\n"
