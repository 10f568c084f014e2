"""The colo family (``kind: colo``): latency-critical services sharing one server's cores, LLC ways and bandwidth.

| module | what |
|---|---|
| ``catalog`` | the platforms and services of ``catalog.yaml`` (every default, with its source) as engine dicts |
| ``dataset`` | OSML's data-set layout: read it, write the model's own, fit service parameters to it |
| ``scenario`` | the colo scenario (a platform, service mixes, a scheduler) and the engine config it produces |
| ``server`` | the interface a scheduler acts through: observe counters, set allocations, steady states |
| ``colo_v0`` | the per-service game as a PettingZoo ParallelEnv (OSML's Model-C actions and reward) |
| ``wrappers`` | a central single-agent Gymnasium environment over colo_v0 |
| ``vector`` | B copies of colo_v0 stepped together with arrays and one engine call |

The engine model is :class:`dcgym.cpp_core.ColoSim` (docs/colo.md).
"""
