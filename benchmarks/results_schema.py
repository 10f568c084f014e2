"""Write the per-family tables of docs/results.md from the families' row models (between the marker lines).

python benchmarks/results_schema.py
"""

from __future__ import annotations

from pathlib import Path

from dcgym.agents.evaluation.schema import markdown

PAGE = Path(__file__).resolve().parents[1] / "docs" / "results.md"
BEGIN, END = "<!-- generated: families -->", "<!-- end generated -->"


def main() -> None:
    text = PAGE.read_text(encoding="utf-8")
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    PAGE.write_text(f"{head}{BEGIN}\n\n{markdown()}\n{END}{tail}", encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
