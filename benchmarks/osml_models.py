"""Train OSML's Model-A and Model-B on a data set in OSML's layout (``benchmarks/colo_dataset.py collect`` writes one).

A front over :mod:`dcgym.agents.osml.supervised` (same as ``python -m dcgym.agents.osml.supervised``)::

    python benchmarks/osml_models.py /tmp/osml_data --out /tmp/osml_models --quick
"""

import sys

from dcgym.agents.osml.supervised import main

if __name__ == "__main__":
    sys.exit(main())
