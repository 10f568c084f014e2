"""The learning side of the multi-LB family (Yao et al., CIKM 2022: multi-agent RL for network load balancing).

| algorithm | module | built on |
|---|---|---|
| ``distr_lb``: Distr-LB, the paper's method | :mod:`.builders` | RLlib's PPO, one independent module per LB |
| ``centr_lb``: Centr-LB, one agent over all LBs | :mod:`.builders` | RLlib's PPO on lb_central_v0 |
| ``qmix_lb``: QMIX-LB | :mod:`.qmix`, :mod:`.qmix_rl_module`, :mod:`.qmix_learner` | a custom RLlib algorithm (new API stack) |
| ``rlb_sac``: RLB-SAC, ref. [40] | :mod:`.builders` | RLlib's SAC, one module per LB |

Their hyperparameter schemas (the paper's values as defaults) are in
:mod:`.hyperparameters`; the algorithm registry
(:mod:`dcgym.agents.algorithms`, through :mod:`.system`) names all five, so ``train.py
--config configs/experiments/<x>.yaml`` trains them (docs/results/multilb.md).
This package imports nothing heavy on its own: import the submodules.
"""
