"""The multi-LB family (``kind: lb``): load balancers over multi-stage servers, and lb_v0, their game.

``scenario`` holds the scenario schema, ``lb_v0`` the PettingZoo environment (Yao et al.,
multi-agent RL for network load balancing). The engine model is :class:`dcgym.cpp_core.LbSim`.
"""
