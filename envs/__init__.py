"""dcgym's environments, scenario schema and errors.

Importing this package registers the single-agent Gymnasium ids (``dcgym/RackCentral-v0``,
``dcgym/RackDispatch-v0``; see :mod:`dcgym.envs.registration`). The multi-agent environments are
versioned PettingZoo modules: ``from dcgym.envs import rack_v0``.
"""

from dcgym.envs import registration as _registration  # noqa: F401  (registers the Gymnasium ids)
