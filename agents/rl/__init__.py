"""What every learning system shares: the RLlib wiring, the algorithm spec, capabilities, the generic baselines.

| module | what |
|---|---|
| ``spec`` | :class:`~.spec.AlgorithmSpec` and :class:`~.spec.LearningSystem`: what a learning system declares |
| ``hyperparameters`` | the base of every hyperparameter schema |
| ``envs`` | :func:`~.envs.make_env`, and every environment as an RLlib env id that needs no registration |
| ``wiring`` | the config every builder starts from (environment, resources, seed), module mapping, settings |
| ``on_policy`` | the on-policy ``training_step`` of dcgym's custom algorithms |
| ``env_runner`` | RLlib's multi-agent env runner with its sample counters logged once per ``sample()`` |
| ``apis`` | capabilities an RLModule may have (:class:`~.apis.PolicyFileAPI`) |
| ``torch_layers`` | torch networks as policy-file layers |
| ``baselines``, ``default_modules`` | RLlib's PPO and SAC as the generic baselines; their modules as policy files |
| ``lazy`` | package attributes imported on first use |

Importing it loads neither Ray nor torch: the builders import them when called.
"""
