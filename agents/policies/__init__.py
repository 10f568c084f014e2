"""Where a policy comes from, one interface over every source: a heuristic, a checkpoint, a policy file, a zoo entry.

| module | what |
|---|---|
| ``sources`` | :func:`classify`: what a policy spec names (:class:`Source`) |
| ``checkpoints`` | checkpoints of ``train.py``: finding and reading them, :class:`TrainedPolicy` acting from one |
| ``zoo`` | the policy zoo: ``zoo:NAME`` resolved, its cards' options |
| ``rack``, ``lb``, ``flow``, ``colo`` | how each source acts on the family's engine or environment (policy files checked against a scenario, a checkpoint's steps, OSML's scheduler) |

The evaluation (:mod:`dcgym.agents.evaluation`) runs them and measures; the export (:mod:`dcgym.agents.export`)
writes policy files; neither is imported here.
"""

from dcgym.agents.policies.sources import Source, Spec, classify

__all__ = ["Source", "Spec", "classify"]
