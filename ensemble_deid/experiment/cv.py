"""Cross-validation engine: fill the prediction cache for a corpus and taggers.

For each tagger: out-of-fold predictions on the training set (one model per
fold, folds grouped by patient) and predictions on each target set (the test
split, or another corpus's documents) from a model trained on the whole
training set. External systems are not trained: their prediction for a
document is the same in every fold, so it is computed once per document set.

Jobs are (tagger, part) pairs run through joblib; what is already in the cache
is reused, so an interrupted run resumes where it stopped.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .cache import EntryKey, PartKey, PredictionCache
from ..corpus.document import Document
from ..errors import EnsembleDeidError
from ..corpus.fingerprint import corpus_fingerprint
from ..corpus.folds import FoldAssignment, assign_folds
from ..taggers.prediction import DocumentPrediction, check_predictions
from .shipping import ShippedDocuments

log = logging.getLogger(__name__)
BACKENDS = ("loky", "threading", "dask", "ray")


# --- what to run -----------------------------------------------------------------

@dataclass(frozen=True)
class TaggerSpec:
    """A tagger name with parameter overrides, e.g. ``crf:c1=0.05,max_iterations=50``."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def parse(cls, text: str) -> "TaggerSpec":
        name, _, rest = text.strip().partition(":")
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
            raise ValueError(f"tagger spec {text!r}: bad tagger name {name!r}")
        params = []
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq or not key:
                raise ValueError(f"tagger spec {text!r}: expected key=value, got {item!r}")
            params.append((key.strip(), _parse_value(value.strip())))
        return cls(name, tuple(sorted(params)))

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in self.params)

    def make(self):
        from ..taggers.registry import make_tagger

        return make_tagger(self.name, **dict(self.params))


def _parse_value(text: str) -> Any:
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


@dataclass
class Task:
    spec: TaggerSpec
    part: PartKey
    fold: int | None = None  # out-of-fold part
    target: str | None = None  # predict part: name of the target document set


@dataclass
class TaggerRun:
    """One tagger's cached predictions for a corpus, with their provenance."""

    spec: TaggerSpec
    entry: EntryKey
    external: bool
    oof: dict[str, DocumentPrediction] = field(default_factory=dict)
    targets: dict[str, dict[str, DocumentPrediction]] = field(default_factory=dict)
    records: list[dict] = field(default_factory=list)
    computed: int = 0
    reused: int = 0

    @property
    def fit_seconds(self) -> float:
        return sum(r.get("fit_seconds", 0.0) for r in self.records)

    @property
    def predict_seconds(self) -> float:
        return sum(r.get("predict_seconds", 0.0) for r in self.records)

    @property
    def peak_mb(self) -> float:
        return max((r.get("peak_rss_mb", 0.0) for r in self.records), default=0.0)


# --- measuring -------------------------------------------------------------------------

class PeakMemory:
    """Peak resident memory of this process while the block runs (MB), sampled."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak = 0.0
        self._stop = threading.Event()

    @staticmethod
    def rss_mb() -> float:
        try:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
        except (OSError, ValueError):
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def _watch(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self.rss_mb())

    def __enter__(self):
        self.peak = self.rss_mb()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.rss_mb())


# --- the worker side --------------------------------------------------------------

def execute_task(
    task: Task, train: ShippedDocuments, targets: Mapping[str, ShippedDocuments],
    folds: FoldAssignment, cache_root: str, threads: int,
) -> dict:
    """Compute one part unless another run already has (runs in a worker)."""
    cache = PredictionCache(cache_root)
    _limit_threads(threads)
    with cache.lock(task.part):
        if cache.part_status(task.part) == "valid":
            return {"status": "reused", "task": task}
        tagger = task.spec.make()
        docs = train.get()
        if task.fold is not None:
            fit_docs, predict_docs = folds.split(docs, task.fold)
        else:
            fit_docs, predict_docs = docs, targets[task.target].get()
        with PeakMemory() as mem:
            t0 = time.perf_counter()
            tagger.fit([] if tagger.external else fit_docs)
            t1 = time.perf_counter()
            predictions = tagger.predict(predict_docs)
            t2 = time.perf_counter()
        check_predictions(predict_docs, predictions, f"tagger {task.spec.label}")
        meta = {
            "tagger_label": task.spec.label, "params": {k: _jsonable(v) for k, v in tagger.get_params().items()},
            "fold": task.fold, "target": task.target,
            "fit_documents": 0 if tagger.external else len(fit_docs),
            "fit_seconds": round(t1 - t0, 4), "predict_seconds": round(t2 - t1, 4),
            "peak_rss_mb": round(mem.peak, 1), "environment": tagger.environment(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        cache.write_part(task.part, predictions, predict_docs, meta)
    return {"status": "computed", "task": task, **meta}


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


def _limit_threads(threads: int) -> None:
    """Keep BLAS/torch from oversubscribing the cores shared by parallel jobs."""
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass
    import sys

    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    os.environ["OMP_NUM_THREADS"] = str(threads)


# --- the driver --------------------------------------------------------------------

@dataclass
class CrossValidation:
    """Cache-filling cross-validation of taggers on one training set.

    ``targets`` names the document sets that full-training models predict
    (``{"test": corpus.test}`` for a plain study).
    """

    train: Sequence[Document]
    targets: Mapping[str, Sequence[Document]]
    cache: PredictionCache
    k: int = 10
    seed: int = 0

    def __post_init__(self):
        self.train = list(self.train)
        self.folds = assign_folds(self.train, self.k, self.seed)
        self.train_fingerprint = corpus_fingerprint(self.train)
        self.target_fingerprints = {name: corpus_fingerprint(docs) for name, docs in self.targets.items()}

    # keys
    def entry_key(self, spec: TaggerSpec) -> tuple[EntryKey, bool]:
        tagger = spec.make()
        return EntryKey(spec.name, tagger.version, tagger.param_hash(), self.train_fingerprint), tagger.external

    def parts(self, spec: TaggerSpec) -> list[Task]:
        entry, external = self.entry_key(spec)
        tasks = []
        if external:  # one pass over the training documents serves every fold
            tasks.append(Task(spec, PartKey.predict(entry, self.train_fingerprint), target="__train__"))
        else:
            tasks += [Task(spec, PartKey.fold(entry, self.folds.fingerprint, f), fold=f) for f in range(self.k)]
        tasks += [Task(spec, PartKey.predict(entry, fp), target=name) for name, fp in self.target_fingerprints.items()]
        return tasks

    def _describe(self, spec: TaggerSpec) -> dict:
        tagger = spec.make()
        return {"tagger_label": spec.label, "params": {k: _jsonable(v) for k, v in tagger.get_params().items()},
                "external": tagger.external}

    def pending(self, specs: Sequence[TaggerSpec], on_corrupt: Callable[[str], None] | None = None) -> list[Task]:
        """Tasks whose part is missing or corrupt (corrupt parts are discarded)."""
        todo = []
        for spec in specs:
            entry, _ = self.entry_key(spec)
            self.cache.ensure_entry(entry, self._describe(spec))
            for task in self.parts(spec):
                status = self.cache.part_status(task.part)
                if status.startswith("corrupt"):
                    if on_corrupt:
                        on_corrupt(f"{task.part}: {status}; recomputing")
                    self.cache.discard_part(task.part)
                if status != "valid":
                    todo.append(task)
        return todo

    def run(
        self, specs: Sequence[TaggerSpec], jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
        progress: bool = True, on_corrupt: Callable[[str], None] | None = None, desc: str = "cv",
    ) -> dict[str, TaggerRun]:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        for spec in specs:
            spec.make()  # fail early on unknown taggers, bad parameters or missing dependencies
        todo = self.pending(specs, on_corrupt)
        results = self._execute(todo, jobs, backend, scheduler, progress, desc)
        runs = self.collect(specs)
        for res in results:
            run = runs[res["task"].spec.label]
            if res["status"] == "computed":
                run.computed += 1
            else:
                run.reused += 1
        for run in runs.values():
            run.reused += len(run.records) - run.computed - run.reused
        return runs

    def _execute(self, todo: list[Task], jobs: int, backend: str, scheduler: str | None, progress: bool,
                 desc: str = "cv") -> list[dict]:
        if not todo:
            return []
        from joblib import Parallel, delayed, parallel_config
        from tqdm.auto import tqdm

        cores = os.cpu_count() or 1
        jobs = max(1, min(jobs if jobs > 0 else cores, len(todo)))
        threads = max(1, cores // jobs)
        inline = backend in ("dask", "ray") or jobs == 1
        train = ShippedDocuments(self.train, self.train_fingerprint, inline=inline)
        targets = {name: ShippedDocuments(docs, self.target_fingerprints[name], inline=inline) for name, docs in self.targets.items()}
        targets["__train__"] = train
        shipped = [train] + [t for n, t in targets.items() if n != "__train__"]
        for s in shipped:
            s.spill()
        config: dict[str, Any] = {"backend": backend, "n_jobs": jobs}
        client = None
        try:
            if backend == "dask":
                if not scheduler:
                    raise EnsembleDeidError("the dask backend needs --scheduler tcp://HOST:PORT")
                from dask.distributed import Client

                client = Client(scheduler)
                config.update(scatter=shipped, wait_for_workers_timeout=60)
                config["n_jobs"] = -1
            elif backend == "ray":
                from ray.util.joblib import register_ray

                register_ray()
            bar = tqdm(total=len(todo), desc=desc, unit="part", disable=not progress)
            out = []
            call = delayed(execute_task)
            with parallel_config(**config):
                if jobs == 1 and backend == "loky":
                    stream = (execute_task(t, train, targets, self.folds, str(self.cache.root), threads) for t in todo)
                else:
                    stream = Parallel(return_as="generator_unordered")(
                        call(t, train, targets, self.folds, str(self.cache.root), threads) for t in todo
                    )
                for res in stream:
                    out.append(res)
                    bar.set_postfix_str(f"{res['task'].spec.label} {res['task'].part.name}", refresh=False)
                    bar.update()
            bar.close()
            return out
        finally:
            for s in shipped:
                s.cleanup()
            if client is not None:
                client.close()

    def collect(self, specs: Sequence[TaggerSpec]) -> dict[str, TaggerRun]:
        """Read every tagger's predictions back from the cache (all parts must be valid)."""
        runs = {}
        for spec in specs:
            entry, external = self.entry_key(spec)
            run = TaggerRun(spec, entry, external)
            for task in self.parts(spec):
                preds, record = self.cache.read_part(task.part)
                run.records.append(record)
                if task.fold is not None or task.target == "__train__":
                    run.oof.update(preds)
                else:
                    run.targets[task.target] = preds
            missing = [d.id for d in self.train if d.id not in run.oof]
            if missing:
                raise EnsembleDeidError(f"{spec.label}: cached out-of-fold predictions lack {len(missing)} training document(s)")
            runs[spec.label] = run
        return runs
