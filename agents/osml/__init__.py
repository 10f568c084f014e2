"""OSML (FAST'23): its models on the colo family (docs/osml.md).

- :mod:`.supervised`: Models A and B, PyTorch MLPs trained on a data set in OSML's layout.
- :mod:`.model_c`: Model-C, OSML's DQN, on RLlib's DQN (``algorithm: osml_dqn``); its hyperparameters and loss.
- :mod:`.model_c_rllib`: Model-C's RLlib module and learner (imports Ray).

Importing this package loads neither Ray nor RLlib.
"""
