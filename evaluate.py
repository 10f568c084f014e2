"""Evaluate policies on a scenario and write the results: ``python evaluate.py --scenario NAME --policy P`` (``-h``).

The same command as ``dcgym-evaluate`` and ``python -m dcgym evaluate``; it lives in :mod:`dcgym.evaluate`.
"""

import sys

from dcgym.evaluate import run

if __name__ == "__main__":
    sys.exit(run(prog="evaluate.py"))
