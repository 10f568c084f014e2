"""OSML (FAST'23): its models on the colo family (docs/osml.md).

- :mod:`.supervised`: Models A and B, PyTorch MLPs trained on a data set in OSML's layout.
- :mod:`.model_c`: Model-C, OSML's DQN, on RLlib's DQN (``algorithm: osml_dqn``); its hyperparameters and loss.
- :mod:`.model_c_rllib`: Model-C's RLlib module, learner and builder (imports Ray).
- :mod:`.scheduler`: OSML's control logic, the colo scheduler ``osml``.
- :mod:`.files`: the three models from policy files, run by the C++ runtime (no torch, no Ray);
  :mod:`.policy_file` turns the trained models into them, :mod:`dcgym.agents.export.osml_policies` writes the folder.
  :mod:`.features`: the models' inputs and outputs by name.
- :mod:`.dataset`, :mod:`.colocation`: OSML's data sets on the colo model (collect, read, label, fit), and
  :mod:`.dataset_cli` their command line.
- :mod:`.system`: Model-C as the registry sees it (``osml_dqn``).

Importing this package loads neither Ray nor RLlib.
"""
