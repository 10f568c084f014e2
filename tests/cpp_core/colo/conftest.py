"""The colo tests import their helpers (colo_helpers.py) from this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
