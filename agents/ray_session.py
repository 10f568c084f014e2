"""Starting or joining Ray, shared by evaluation and training: quick refusal of a dead address, quiet logs.

``ray.init(address=...)`` retries for minutes when nothing listens at the
address, printing a warning every few seconds. :func:`check_address` asks
the address's GCS port first (a TCP connect with a short timeout) and fails
with one line naming ``address`` within seconds.
"""

from __future__ import annotations

import logging
import os
import socket

from dcgym.envs.error import InvalidConfigError

__all__ = ["CONNECT_TIMEOUT_S", "check_address", "init", "quiet_environment"]

CONNECT_TIMEOUT_S = 3.0
"""How long the check waits for the cluster's GCS to accept a connection."""


def quiet_environment() -> None:
    """No usage statistics, no token file: Ray's defaults for a session dcgym starts."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def check_address(address: str) -> None:
    """Raise InvalidConfigError naming ``address`` unless a process accepts connections at ``host:port``.

    ``auto`` and ``ray://`` client addresses are left to Ray.
    """
    if address == "auto" or address.startswith("ray://"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidConfigError(
            "address", address, "HOST:PORT of a running Ray cluster's head (ray start --head prints it), or auto"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        why = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or type(exc).__name__
        raise InvalidConfigError(
            "address",
            address,
            f"the address of a running Ray cluster; nothing answers there ({why} within {CONNECT_TIMEOUT_S:g} s)",
        ) from None


def init(num_cpus: int, address: str | None = None, log_level: int = logging.WARNING) -> None:
    """Join the cluster at ``address`` (checked first) or start a local one of ``num_cpus`` CPUs on loopback."""
    quiet_environment()
    import ray  # only here: importing Ray takes a second

    if address is not None:
        check_address(address)
        # The cluster's workers were started by `ray start`, not by this process: they get its hash seed through
        # the job's runtime environment (a local Ray inherits it; dcgym._app.reproducible_hashes says why).
        hash_seed = {"PYTHONHASHSEED": os.environ["PYTHONHASHSEED"]} if "PYTHONHASHSEED" in os.environ else {}
        ray.init(address=address, log_to_driver=False, logging_level=log_level, runtime_env={"env_vars": hash_seed})
    else:
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
            logging_level=log_level,
            # Workers start when the first task needs them: a training on the driver alone (num_env_runners=0)
            # never does, and Ray's prestarted workers cost about 2 s of CPU each time a command starts.
            _system_config={"prestart_worker_first_driver": False},
        )
