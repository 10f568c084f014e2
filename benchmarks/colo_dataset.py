"""OSML's data set from the command line: write the colo model's own, or fit service parameters to one.

A front over :mod:`dcgym.agents.osml.dataset_cli` (same as ``python -m dcgym.agents.osml.dataset_cli``)::

    python benchmarks/colo_dataset.py generate /tmp/osml --service moses --rps 400 800 --threads 36 20
    python benchmarks/colo_dataset.py fit /tmp/osml --service moses
"""

import sys

from dcgym.agents.osml.dataset_cli import main

if __name__ == "__main__":
    sys.exit(main())
