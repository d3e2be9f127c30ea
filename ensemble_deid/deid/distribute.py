"""Spread a folder's notes over local processes or a cluster (Dask, Ray).

``FolderDeidentifier.run(..., executor=Distributor(...))`` cuts the notes
still to do into chunks of whole batches (so every note is tagged in the
same batch as in a sequential run, and the outputs are byte-identical) and
hands them to workers:

- ``local``: ``jobs`` processes on this machine. Where the system can
  fork, they are forked from the client after it loaded the bundle and run
  its model as it is (no second import, check or load: that start-up cost
  the sequential run pays once made two workers slower than one process);
  elsewhere they are spawned and each loads the bundle once. Either way each
  worker's torch, OpenMP and BLAS threads are its share of the cores, so
  ``jobs`` processes never run more threads than there are cores;
- ``dask``: the workers of a running Dask scheduler (``dask scheduler`` /
  ``dask worker ADDR --nthreads 1``);
- ``ray``: the workers of a running Ray cluster (``ray start --head``).

A worker loads the bundle once (kept per process, checked against the
client's manifest checksum: a different bundle at that path is refused) and
writes the chunk's outputs itself, atomically and owner-only, into the
output folder, which every worker must see at the same path (a shared
file system). The client keeps the lock, ``run.json``, the surrogate
mapping (the workers send theirs back) and the progress; only a bounded
window of chunks is in flight, so a million notes do not grow the client's
memory. A worker killed mid-chunk: the engine runs the chunk again on
another worker (its outputs are rewritten whole); the client killed: the
next run resumes from the notes whose outputs exist.

Errors from a worker name the notes' files and the exception's type, never
its message (it could quote note text).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..errors import EnsembleDeidError, ParameterError, printable
from ..experiment.clusters import CONNECT_TIMEOUT, dask_client, ray_init

BACKENDS = ("local", "dask", "ray")
UNSET = "unset"  # the operating point the bundle was fitted for (no --operating-point)


class WorkerError(EnsembleDeidError):
    """A chunk of notes failed on a worker (named by file, never by text)."""


@dataclass(frozen=True)
class BundleRef:
    """How a worker loads the client's bundle: its folder and the load
    options; ``sha256`` is the manifest checksum the client loaded."""

    path: str
    sha256: str | None = None
    allow_external: Mapping[str, str] = field(default_factory=dict)
    trusted: tuple[str, ...] | None = None
    operating_point: Any = UNSET

    def load(self):
        from .model import Deidentifier

        model = Deidentifier.load(self.path, allow_external=dict(self.allow_external), trusted=self.trusted)
        if model.manifest.get("manifest_sha256") != self.sha256:
            raise WorkerError(f"{printable(self.path)}: a worker found another bundle there than the client loaded "
                              "(every worker must see the same bundle at the same path)")
        if self.operating_point != UNSET:
            model.method.repoint(self.operating_point)
        return model


@dataclass(frozen=True)
class WorkerRecipe:
    """Everything a worker needs to tag a chunk as the client would."""

    bundle: BundleRef
    mode: str
    span_formats: tuple[str, ...]
    surrogates: Any  # a Surrogator with the run's seed (its mapping empty), or None
    group_pattern: str | None
    batch_size: int
    mapping: str | None  # surrogate mode: record the mapping and send it back (the client writes it)
    mark: bool = False  # surrogate mode: also write the marked review copy


_MODELS: dict[str, Any] = {}
_LOAD = threading.Lock()


def _model_key(ref: BundleRef) -> str:
    import json

    return json.dumps([ref.path, ref.sha256, ref.operating_point], sort_keys=True)


def _model(ref: BundleRef):
    key = _model_key(ref)
    with _LOAD:  # one load per worker process, whatever its threads
        if key not in _MODELS:
            _MODELS.clear()  # a worker kept for another run drops the bundle it had
            _MODELS[key] = ref.load()
        return _MODELS[key]


def tag_chunk(recipe: WorkerRecipe, out: str, notes: Sequence, groups: Sequence[str]):
    """Tag and write one chunk on a worker; returns its ``TaggedChunk``."""
    from .batch import SCRATCH, FolderDeidentifier, TaggedChunk, _batches

    try:
        runner = FolderDeidentifier(_model(recipe.bundle), recipe.mode, recipe.span_formats,
                                    replace(recipe.surrogates) if recipe.surrogates is not None else None,
                                    recipe.group_pattern, recipe.batch_size, recipe.mapping, recipe.mark)
        out_path = Path(out)
        total = TaggedChunk()
        # The temp files members make stay in the owner-only output folder, this worker's own part of it.
        from ..files import private_dir

        own = private_dir(out_path / SCRATCH / f"worker-{os.getpid()}")
        saved, tempfile.tempdir = tempfile.tempdir, str(own)
        try:
            for batch, batch_groups in zip(_batches(list(notes), recipe.batch_size),
                                           _batches(list(groups), recipe.batch_size)):
                done = runner.tag_notes(out_path, batch, batch_groups)
                total.notes += done.notes
                total.tokens += done.tokens
                total.clinical_values += done.clinical_values
                total.mapping.update(done.mapping)
        finally:
            tempfile.tempdir = saved
            shutil.rmtree(own, ignore_errors=True)
        return total
    except WorkerError:
        raise
    except Exception as exc:  # noqa: BLE001 - the message could quote a note: only its type crosses
        what = str(exc) if isinstance(exc, EnsembleDeidError) else type(exc).__name__
        first, last = notes[0].path, notes[-1].path
        raise WorkerError(f"notes {printable(first)} .. {printable(last)} ({len(notes)}): tagging failed on a "
                          f"worker ({what})") from None


class Distributor:
    """Runs chunks of notes on ``backend`` (see the module docstring);
    ``address``: the Dask scheduler or Ray head (not for ``local``), given
    ``connect_timeout`` seconds to answer."""

    def __init__(self, bundle: BundleRef, backend: str = "local", jobs: int = 2, address: str | None = None,
                 batches: int = 1, window: int | None = None, connect_timeout: float = CONNECT_TIMEOUT):
        if backend not in BACKENDS:
            raise ParameterError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}", "--backend")
        if backend != "local" and not address:
            flag = "--scheduler tcp://HOST:PORT" if backend == "dask" else "--address HOST:PORT"
            raise ParameterError(f"--backend {backend} needs {flag}", "--scheduler" if backend == "dask" else "--address")
        if backend == "local" and address:
            raise ParameterError("--scheduler/--address need --backend dask or ray", "--backend")
        self.bundle = bundle
        self.backend = backend
        self.jobs = max(1, int(jobs))
        self.address = address
        self.batches = max(1, int(batches))  # batches per chunk
        self.window = window
        self.connect_timeout = connect_timeout
        self._engine: _Engine | None = None

    def __enter__(self) -> "Distributor":
        """Connect (or start the local processes) before any note is read:
        an unreachable scheduler is a clear error, nothing done."""
        self._engine = {"local": _Local, "dask": _Dask, "ray": _Ray}[self.backend](self)
        return self

    def __exit__(self, *exc) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    def map(self, runner, out: Path, chunks: Iterable[tuple[Sequence, Sequence[str]]]) -> Iterator:
        """Each chunk's ``TaggedChunk``, as they finish (a bounded number in flight)."""
        recipe = WorkerRecipe(self.bundle, runner.mode, runner.span_formats,
                              _no_mapping(runner.surrogates), runner.group_pattern, runner.batch_size,
                              None if runner.mapping is None else str(runner.mapping), runner.mark)
        engine = self._engine
        if engine is None:
            raise RuntimeError("use the Distributor in a with block")
        engine.prepare(runner.model)
        window = self.window or 2 * engine.workers
        pending: list = []
        try:
            for notes, groups in chunks:
                pending.append(engine.submit(recipe, str(out), list(notes), list(groups)))
                while len(pending) >= window:
                    done, pending = engine.wait_first(pending)
                    yield from (engine.result(h) for h in done)
            while pending:
                done, pending = engine.wait_first(pending)
                yield from (engine.result(h) for h in done)
        finally:
            engine.cancel(pending)


def _no_mapping(surrogates):
    return None if surrogates is None else replace(surrogates, mapping={})


class _Engine:
    workers = 1

    def prepare(self, model) -> None:
        """Before the first chunk: ``model`` is the client's loaded bundle."""

    def submit(self, recipe, out, notes, groups): ...
    def wait_first(self, pending: list) -> tuple[list, list]: ...
    def result(self, handle): ...
    def cancel(self, pending: list) -> None: ...
    def close(self) -> None: ...


class _Local(_Engine):
    def __init__(self, d: Distributor):
        self.bundle = d.bundle
        self.workers = d.jobs
        self.pool = None  # started by the first chunk, from the client's loaded model (``prepare``)

    def prepare(self, model) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if _can_fork(model, self.bundle):
            # The children inherit the client's checked, loaded and probed model: _model finds it.
            # Forking is safe here: torch ran single-threaded in the client (every member's
            # num_threads), so no OpenMP pool exists to be lost, and each child is pinned below.
            with _LOAD:
                _MODELS.clear()
                _MODELS[_model_key(self.bundle)] = model
            # FolderDeidentifier.run froze the model out of the collector: the children's never writes to (so
            # never copies) the pages they share with the client.
            context = multiprocessing.get_context("fork")
        else:
            context = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=start_local_worker,
                                        initargs=(os.getpid(), worker_threads(self.workers)))

    def submit(self, recipe, out, notes, groups):
        return self.pool.submit(tag_chunk, recipe, out, notes, groups)

    def wait_first(self, pending):
        from concurrent.futures import FIRST_COMPLETED, wait

        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        return [f for f in pending if f in done], [f for f in pending if f not in done]

    def result(self, handle):
        from concurrent.futures.process import BrokenProcessPool

        try:
            return handle.result()
        except BrokenProcessPool:
            raise WorkerError("a local worker process died (killed, or out of memory); run the same command again "
                              "to resume") from None

    def cancel(self, pending):
        for f in pending:
            f.cancel()

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        with _LOAD:
            _MODELS.clear()  # the client's model is the caller's; not kept here past the run


def _can_fork(model, bundle: BundleRef) -> bool:
    """Whether workers can be forked with ``model``: the system forks, and
    ``model`` is the bundle the workers would load (same checksum)."""
    import multiprocessing

    return ("fork" in multiprocessing.get_all_start_methods() and model is not None
            and (getattr(model, "manifest", None) or {}).get("manifest_sha256") == bundle.sha256)


def start_local_worker(client: int, threads: int) -> None:
    """A local worker's start: it dies with its client (a killed client's
    workers would otherwise tag the chunks still queued, unseen; the resume
    does them), and runs ``threads`` torch/OpenMP/BLAS threads."""
    from ..experiment.cv import limit_threads

    try:
        import ctypes
        import signal

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError, TypeError):  # another system: the worker ends when its queue closes
        pass
    if os.getppid() != client:  # the client died before the line above
        os._exit(1)
    limit_threads(threads)


def worker_threads(jobs: int) -> int:
    """Threads each of ``jobs`` local workers may run: its share of the cores."""
    return max(1, (os.cpu_count() or 1) // max(1, jobs))


class _Dask(_Engine):
    def __init__(self, d: Distributor):
        self.client = dask_client(d.address, d.connect_timeout)
        try:
            self.client.wait_for_workers(1, timeout=60)
        except (OSError, TimeoutError) as exc:
            self.client.close()
            raise ParameterError(f"the Dask scheduler at {printable(d.address)} has no workers after 60 s "
                                 f"({type(exc).__name__})", "--scheduler") from None
        self.workers = max(1, sum(self.client.nthreads().values()))

    def submit(self, recipe, out, notes, groups):
        return self.client.submit(tag_chunk, recipe, out, notes, groups, pure=False)

    def wait_first(self, pending):
        from dask.distributed import wait

        done = wait(pending, return_when="FIRST_COMPLETED").done
        return [f for f in pending if f in done], [f for f in pending if f not in done]

    def result(self, handle):
        from distributed.scheduler import KilledWorker

        try:
            return handle.result()
        except KilledWorker:
            raise WorkerError("the chunk killed every Dask worker that tried it (out of memory?); the notes done "
                              "so far are kept: run the same command again to resume") from None

    def cancel(self, pending):
        if pending:
            self.client.cancel(pending)

    def close(self):
        self.client.close()


class _Ray(_Engine):
    def __init__(self, d: Distributor):
        self.started = ray_init(d.address, d.connect_timeout)
        import ray

        self.ray = ray
        self.task = ray.remote(num_cpus=1, max_retries=3)(tag_chunk)
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))

    def submit(self, recipe, out, notes, groups):
        return self.task.remote(recipe, out, notes, groups)

    def wait_first(self, pending):
        done, rest = self.ray.wait(pending, num_returns=1)
        return done, rest

    def result(self, handle):
        try:
            return self.ray.get(handle)
        except self.ray.exceptions.RayTaskError as exc:
            cause = exc.as_instanceof_cause()
            if isinstance(cause, WorkerError):
                raise WorkerError(str(cause).splitlines()[-1]) from None
            raise WorkerError(f"a chunk failed on a Ray worker ({type(cause).__name__})") from None
        except self.ray.exceptions.WorkerCrashedError:
            raise WorkerError("a Ray worker died on a chunk; the notes done so far are kept: run the same command "
                              "again to resume") from None

    def cancel(self, pending):
        for h in pending:
            self.ray.cancel(h)

    def close(self):
        if self.started:  # a connection the caller had is the caller's
            self.ray.shutdown()

