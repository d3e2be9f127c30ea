"""Connecting to a running Dask scheduler or Ray cluster, for ``cv`` and
``deidentify`` alike.

Both libraries wait a long time for an address where nothing answers (Dask
its default 30 s; Ray retries for minutes), so a mistyped address looked like
a hang. Here a connection is given ``timeout`` seconds (``--connect-timeout``,
default ``CONNECT_TIMEOUT``), then fails with an error naming the address.
"""
from __future__ import annotations

import os
import socket

from ..errors import ParameterError, printable

CONNECT_TIMEOUT = 5.0  # seconds: ample for a scheduler that is up, even across a slow network


def dask_client(address: str, timeout: float = CONNECT_TIMEOUT):
    """A ``distributed.Client`` of the scheduler at ``address``; a
    ``ParameterError`` (option ``--scheduler``) when none answers in time."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise ParameterError("--backend dask needs dask.distributed: pip install 'ensemble-deid[dask]'",
                             "--backend") from None
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ParameterError(f"cannot reach a Dask scheduler at {printable(address)} within {timeout:g} s "
                             f"({type(exc).__name__}; is it running? a slow network: --connect-timeout)",
                             "--scheduler") from None


def ray_init(address: str | None, timeout: float = CONNECT_TIMEOUT) -> bool:
    """``ray.init`` on the cluster at ``address`` (``None``: ``$RAY_ADDRESS``,
    else a local instance); False when this process is connected already
    (then its caller leaves that connection alone). The head's port is
    tried first, for ``timeout`` seconds, since Ray itself retries an
    address where nothing listens for minutes. A ``ParameterError``
    (option ``--address``) when it cannot connect."""
    try:
        import ray
    except ImportError:
        raise ParameterError("--backend ray needs ray: pip install 'ensemble-deid[ray]'", "--backend") from None
    if ray.is_initialized():
        return False
    target = address or os.environ.get("RAY_ADDRESS")
    where = printable(target or "a local instance")
    if target:
        try:
            _probe(target, timeout)
        except OSError as exc:
            raise ParameterError(f"cannot reach a Ray cluster at {where} within {timeout:g} s ({type(exc).__name__}; "
                                 "is it running? a slow network: --connect-timeout)", "--address") from None
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (OSError, RuntimeError, ValueError) as exc:  # ConnectionError is an OSError
        raise ParameterError(f"cannot reach a Ray cluster at {where} ({type(exc).__name__})", "--address") from None
    return True


def _probe(address: str, timeout: float) -> None:
    """Open and close a TCP connection to ``address`` (``[ray://]HOST:PORT``);
    an ``OSError`` when nothing accepts one within ``timeout`` seconds. Other
    forms (``auto``) are left to Ray."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not (sep and host and port.isdigit()):
        return
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
        pass
