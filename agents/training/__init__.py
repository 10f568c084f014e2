"""Training: experiment files, the algorithm registry, the training loop and its run folders, checkpoints.

| module | what |
|---|---|
| ``experiment`` | experiment files (``configs/experiments/*.yaml``), validated |
| ``algorithms`` | algorithm name -> RLlib config builder; the generic baselines (PPO, SAC); environments for RLlib |
| ``rllib_envs`` | every environment as an RLlib env id that needs no registration |
| ``trainer`` | :func:`train` and :func:`resume`: the loop behind ``train.py`` and its run folder |
| ``metrics``, ``plots`` | what a run measures (CSV, TensorBoard, W&B) and its learning curve |
| ``checkpoints`` | self-describing checkpoints and trained policies acting from them |
"""

from dcgym.agents.training.trainer import (
    CONFIG_FILE,
    METRICS_FILE,
    RUN_FILE,
    MissingPackageError,
    Trainer,
    TrainResult,
    check_experiment,
    find_run,
    new_run_dir,
    resume,
    train,
)

__all__ = [
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
]
