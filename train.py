"""Train one experiment and leave a self-describing run folder: ``python train.py --config FILE`` (see ``-h``).

The same command as ``dcgym-train`` and ``python -m dcgym train``; it lives in :mod:`dcgym.train`.
"""

import sys

from dcgym.train import run

if __name__ == "__main__":
    sys.exit(run(prog="train.py"))
