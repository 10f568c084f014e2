"""The flow family (``kind: flow``): datacenter flow scheduling as PIAS and AuTO study it.

| module | what |
|---|---|
| ``thresholds`` | named MLFQ and QSJF threshold sets (PIAS's published ones, the searched 4-queue ones) |
| ``policies`` | the engine's scheduling policies by name, with their parameters |
| ``scenario`` | the flow scenario and the engine config it produces |
| ``game`` | AuTO's two agents on the engine, shared by every flow environment |
| ``flow_v0`` | the game as a PettingZoo ParallelEnv (agents ``srla`` and ``lrla``) |
| ``wrappers``, ``vector`` | single-agent Gymnasium environments and vector stepping |
| ``render`` | ANSI and RGB drawings of the network |

The engine model is :class:`dcgym.cpp_core.FlowSim` (docs/flow.md).
"""
