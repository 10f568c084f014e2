"""Training: experiment files, the training loop and its run folders, what a run measures.

| module | what |
|---|---|
| ``experiment`` | experiment files (``configs/experiments/*.yaml``), validated |
| ``trainer`` | :func:`train` and :func:`resume`: the loop behind ``train.py`` and its run folder |
| ``metrics``, ``plots`` | what a run measures (CSV, TensorBoard, W&B) and its learning curve |

The algorithms are the registry's (:mod:`dcgym.agents.algorithms`); the checkpoints a run writes are read by
:mod:`dcgym.agents.policies.checkpoints`. The names below are imported on first use: reading an experiment file
loads neither Ray nor torch.
"""

from dcgym.agents.rl.lazy import lazy_exports

_EXPORTS = {
    name: "trainer"
    for name in (
        "CONFIG_FILE",
        "METRICS_FILE",
        "RUN_FILE",
        "MissingPackageError",
        "TrainResult",
        "Trainer",
        "check_experiment",
        "find_run",
        "new_run_dir",
        "resume",
        "train",
    )
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
