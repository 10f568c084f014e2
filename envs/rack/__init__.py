"""The rack family (``kind: rack``): nodes with worker cores under a dispatcher, and Malcolm's game.

| module | what |
|---|---|
| ``schema`` | the parts of a rack scenario (nodes, types, entry, load information, migration, dynamics) |
| ``dispatch`` | the engine's dispatch policies by name, with their parameters |
| ``scenario`` | the rack scenario and the engine config it produces |
| ``game`` | Malcolm's game on the engine, shared by every rack environment |
| ``rack_v0`` | the game as a PettingZoo ParallelEnv (one agent per node) |
| ``wrappers``, ``vector`` | single-agent Gymnasium environments and vector stepping |
| ``render`` | ANSI and RGB drawings of a rack |
"""
