"""The colo tests import their helpers (colo_helpers.py) from this folder and reproduce_osml_fig1
from benchmarks/."""

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2] / "benchmarks"))  # reproduce_osml_fig1
sys.path.insert(0, str(HERE))
