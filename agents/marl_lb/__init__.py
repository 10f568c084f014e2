"""The learning side of the multi-LB family (Yao et al., CIKM 2022: multi-agent RL for network load balancing).

| algorithm | module | built on |
|---|---|---|
| ``distr_lb``: Distr-LB, the paper's method | :mod:`.qmix` (independent mode) | a custom RLlib algorithm: a Q-learner per LB |
| ``centr_lb``: Centr-LB, one agent over all LBs | :mod:`.qmix` (independent mode) | the same, on lb_central_v0 |
| ``qmix_lb``: QMIX-LB | :mod:`.qmix`, :mod:`.qmix_rl_module`, :mod:`.qmix_learner` | a custom RLlib algorithm (new API stack) |
| ``rlb_sac``: RLB-SAC, ref. [40] | :mod:`.builders` | RLlib's SAC, one module per LB |
| ``distr_lb_ppo``: Distr-LB on PPO | :mod:`.builders` | RLlib's PPO, one independent module per LB |

:mod:`.bandit` is the simplest learner of the weights, outside RLlib: successive
halving over fixed patterns of one level per server group.

Their hyperparameter schemas (the paper's values as defaults) are in
:mod:`.hyperparameters`; the algorithm registry
(:mod:`dcgym.agents.algorithms`, through :mod:`.system`) names all five, so ``train.py
--config configs/experiments/<x>.yaml`` trains them (docs/results/multilb.md).
This package imports nothing heavy on its own: import the submodules.
"""
