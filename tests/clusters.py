"""Real local clusters for the tests: a Dask scheduler and worker processes,
or a Ray head, on 127.0.0.1, started by the test and stopped after (every
process they started, by its id)."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from . import PLUGINS

ROOT = Path(__file__).resolve().parents[1]


def env() -> dict:
    """Workers and subprocesses import this tree (and the test plugin) as pytest does."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [PLUGINS, str(ROOT), os.environ.get("PYTHONPATH", "")])),
            "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(procs) -> None:
    """Stop what was started, and every process it started in turn."""
    import psutil

    family = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            family += psutil.Process(p.pid).children(recursive=True)
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    _, alive = psutil.wait_procs(family, timeout=15)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()


@contextlib.contextmanager
def dask_cluster(logs: Path, workers: int = 2):
    """``dask scheduler`` and ``workers`` worker processes of one thread
    (no nanny: a killed worker stays dead); yields (address, worker processes)."""
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = []
    with open(logs, "ab") as log:
        try:
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                           "--port", str(port), "--no-dashboard"], env=env(), stdout=log, stderr=log))
            for _ in range(workers):
                procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                               "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1", "--no-dashboard"],
                                              env=env(), stdout=log, stderr=log))
            with Client(address, timeout=60) as client:
                client.wait_for_workers(workers, timeout=120)
            yield address, procs[1:]
        finally:
            _stop(procs)


@contextlib.contextmanager
def ray_cluster(logs: Path, cpus: int = 2):
    """A Ray head on 127.0.0.1 with ``cpus`` worker slots, its session in a
    temp folder of its own (not the shared /tmp/ray); yields (address, head process)."""
    pytest.importorskip("ray")
    port = free_port()
    session = tempfile.mkdtemp(prefix="ray-", dir="/tmp")  # short: Ray's socket paths have a length limit
    head = None
    with open(logs, "ab") as log:
        try:
            head = subprocess.Popen([sys.executable, "-m", "ray.scripts.scripts", "start", "--head", "--block",
                                     "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", str(cpus),
                                     "--include-dashboard", "false", "--disable-usage-stats", "--temp-dir", session],
                                    env=env(), stdout=log, stderr=log)
            address = f"127.0.0.1:{port}"
            _wait_for_ray(address, head)
            yield address, head
        finally:
            if head is not None:
                _stop([head])
            shutil.rmtree(session, ignore_errors=True)


def _wait_for_ray(address: str, head, timeout: float = 180) -> None:
    import time

    code = f"import ray; ray.init(address={address!r}, log_to_driver=False); ray.shutdown()"
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert head.poll() is None, "the Ray head stopped (see the cluster log)"
        if subprocess.run([sys.executable, "-c", code], env=env(), capture_output=True).returncode == 0:
            return
        time.sleep(2)
    raise AssertionError(f"no Ray head at {address} after {timeout} s")

