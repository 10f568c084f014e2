"""Train an experiment over a grid and seeds as Ray Tune trials: ``python sweep.py --config FILE --grid K=V1,V2``.

The same command as ``dcgym-sweep`` and ``python -m dcgym sweep``; it lives in :mod:`dcgym.sweep` (``-h``).
"""

import sys

from dcgym.sweep import run

if __name__ == "__main__":
    sys.exit(run(prog="sweep.py"))
