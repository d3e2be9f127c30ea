"""Cross-validation engine: fill the prediction cache for a corpus and taggers.

For each tagger: out-of-fold predictions on the training set (one model per
fold, folds grouped by patient) and predictions on each target set (the test
split, or another corpus's documents) from a model trained on the whole
training set. External systems are not trained: their prediction for a
document is the same in every fold, so it is computed once per document set.

Jobs are (tagger, part) pairs run through joblib; what is already in the cache
is reused, so an interrupted run resumes where it stopped. The full-training
model of each trained tagger is kept for ``fit`` (``experiment.kept``).
"""
from __future__ import annotations

import logging
import os
import warnings
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .cache import EntryKey, PartKey, PredictionCache
from .clusters import CONNECT_TIMEOUT, dask_client, ray_init
from ..corpus.document import Document
from ..errors import EnsembleDeidError, ParameterError
from ..corpus.fingerprint import corpus_fingerprint
from ..corpus.folds import FoldAssignment, assign_folds
from ..taggers.constraints import MAX_COUNT, Interval, InvalidParameter, Options, validate_params
from ..taggers.prediction import DocumentPrediction, check_predictions
from .shipping import ShippedDocuments

log = logging.getLogger(__name__)
BACKENDS = ("loky", "threading", "dask", "ray")
# Parallel jobs: a positive count, or -1 for every core (joblib's other
# negative values are a surprise more than a feature).
JOBS = [Interval(int, 1, MAX_COUNT), Options(-1)]


def check_jobs(jobs: Any, owner: str = "cv") -> int:
    """``jobs`` if it is a positive count or -1, else one clear error."""
    try:
        validate_params(owner, {"jobs": jobs}, {"jobs": JOBS})
    except InvalidParameter as exc:
        raise EnsembleDeidError(str(exc)) from None
    return jobs


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


def entry_spec(manifest: Mapping[str, Any]) -> str:
    """The spec that names a cached tagger entry today, for a user to copy:
    the label it was made under while that still gives its parameters, else
    the tagger with every parameter that differs from today's defaults (the
    published MEDDOCAN neural parts were made at ``epochs=12,
    validation_fraction=0`` when those were the defaults: their label alone
    now names a model ``cv`` would train). The class's signature is enough:
    no tagger is built, so listing the cache loads no deep-learning library."""
    import inspect

    from ..taggers.registry import tagger_class

    label, params = str(manifest.get("tagger_label") or manifest.get("tagger", "?")), manifest.get("params")
    try:
        spec = TaggerSpec.parse(label)
        cls = tagger_class(spec.name)
    except Exception:  # a tagger not installed here, or a label that is no spec: shown as recorded
        return label
    if not isinstance(params, dict):
        return label
    defaults = {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()
                if p.default is not inspect.Parameter.empty}
    if {**defaults, **dict(spec.params)} == {**defaults, **params}:  # 0 == 0.0: one model (hashed_params)
        return label
    changed = [(k, v) for k, v in sorted(params.items()) if k not in defaults or defaults[k] != v]
    shown = ",".join(f"{k}={int(v) if isinstance(v, float) and v.is_integer() else v}" for k, v in changed)
    return f"{spec.name}:{shown}" if shown else spec.name


def split_specs(value: str) -> list[str]:
    """The tagger specs of a comma-separated list: a comma starts a new
    tagger unless a key=value follows it, so "crf:c1=0.1,c2=0.2,rules" is
    crf (two parameters) and rules."""
    chunks: list[str] = []
    for piece in (p.strip() for p in value.split(",")):
        if not piece:
            continue
        if chunks and "=" in piece and ":" not in piece.split("=", 1)[0]:
            chunks[-1] += "," + piece  # a key=value continuing the previous tagger
        else:
            chunks.append(piece)
    return chunks


def parse_tagger_specs(value: str, option: str = "--taggers") -> list[TaggerSpec]:
    """Tagger specs from a comma-separated list, each checked (known name,
    valid parameters, available here) before anything runs; a
    :class:`ParameterError` naming ``option`` otherwise."""
    from ..taggers.registry import UnknownTagger, tagger_class

    specs = []
    for chunk in split_specs(value):
        try:
            spec = TaggerSpec.parse(chunk)
            cls = tagger_class(spec.name)
        except (ValueError, UnknownTagger) as exc:
            raise ParameterError(str(exc), option) from None
        ok, reason = cls.availability()
        if ok or cls.external:
            # External tools may be configured by their parameters: ask the instance.
            try:
                tagger = spec.make()
            except ValueError as exc:
                raise ParameterError(str(exc), option) from None
            ok, reason = tagger.availability()
        if not ok:
            raise ParameterError(f"tagger {spec.name!r} is unavailable: {reason}", option)
        specs.append(spec)
    if not specs:
        raise ParameterError("name at least one tagger", option)
    return specs


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


def entry_key(spec: TaggerSpec, train_fingerprint: str) -> tuple[EntryKey, bool]:
    """(the cache entry of ``spec`` trained on the documents of
    ``train_fingerprint``, whether the tagger is external)."""
    tagger = spec.make()
    return EntryKey(spec.name, tagger.version, tagger.param_hash(), train_fingerprint), tagger.external


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
    parts: list[PartKey] = field(default_factory=list)  # of ``records``, in the same order
    computed_parts: set[PartKey] = field(default_factory=set)  # computed by this run (the rest were cached)

    @property
    def fit_seconds(self) -> float:
        return sum(r.get("fit_seconds", 0.0) for r in self.records)

    @property
    def predict_seconds(self) -> float:
        return sum(r.get("predict_seconds", 0.0) for r in self.records)

    def seconds(self, key: str, computed: bool) -> float:
        """``key`` ("fit_seconds", "predict_seconds") summed over the parts this
        run computed (``computed``) or over those it found cached, whose
        seconds were spent when they were made."""
        return sum(r.get(key, 0.0) for r, p in zip(self.records, self.parts) if (p in self.computed_parts) == computed)

    @property
    def cost(self) -> float | None:
        """Inference cost: CPU seconds per million tokens over the recorded parts (``experiment.cost``)."""
        from .cost import inference_cost

        return inference_cost(self.records)

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
    folds: FoldAssignment, cache_root: str, threads: int, keep_model: bool = False,
) -> dict:
    """Compute one part unless another run already has (runs in a worker).
    ``keep_model``: a predict part's full-training model is kept for ``fit``
    (``experiment.kept``), and a valid kept model predicts instead of a new fit."""
    cache = PredictionCache(cache_root, published=())  # pending() already looked in published folders
    limit_threads(threads)
    with cache.lock(task.part), cache.scratch():
        if cache.part_status(task.part) == "valid":
            return {"status": "reused", "task": task}
        tagger = task.spec.make()
        docs = train.get()
        if task.fold is not None:
            fit_docs, predict_docs = folds.split(docs, task.fold)
        else:
            fit_docs, predict_docs = docs, targets[task.target].get()
        kept: dict = {}
        keeps = keep_model and task.target is not None and not tagger.external  # a full-training model
        with PeakMemory() as mem, _kept_model_lock(task, cache_root, keeps):
            t0 = time.perf_counter()
            if keeps:
                tagger, kept = _fit_or_reuse(task, tagger, fit_docs, cache_root)
            else:
                tagger.fit([] if tagger.external else fit_docs)
            t1, c1 = time.perf_counter(), time.process_time()
            predictions = tagger.predict(predict_docs)
            t2, c2 = time.perf_counter(), time.process_time()
        check_predictions(predict_docs, predictions, f"tagger {task.spec.label}")
        meta = {
            "tagger_label": task.spec.label, "params": {k: _jsonable(v) for k, v in tagger.get_params().items()},
            "fold": task.fold, "target": task.target,
            "fit_documents": 0 if tagger.external else len(fit_docs),
            "fit_seconds": round(t1 - t0, 4), "predict_seconds": round(t2 - t1, 4),
            "predict_cpu_seconds": round(c2 - c1, 4),  # the inference cost (experiment.cost)
            "peak_rss_mb": round(mem.peak, 1), "environment": tagger.environment(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        choices = {} if tagger.external else tagger.training_choices()
        if choices:
            meta["training_choices"] = {k: _jsonable(v) for k, v in choices.items()}
        meta.update(kept)
        cache.write_part(task.part, predictions, predict_docs, meta)
    return {"status": "computed", "task": task, **meta}


def _kept_model_lock(task: Task, cache_root: str, keeps: bool):
    """The entry's kept-model lock for a predict part that keeps its model
    (held while the model is trained: another target's part waits, then
    reuses it), else nothing."""
    import contextlib

    from .kept import model_lock

    if keeps:
        return model_lock(cache_root, task.part.entry)
    return contextlib.nullcontext()


def _fit_or_reuse(task: Task, tagger, fit_docs, cache_root: str) -> tuple[Any, dict]:
    """The entry's kept model if a valid one is there (the predict part of
    another target made it), else ``tagger`` fitted on ``fit_docs`` and kept;
    with what the part records about it (``model_sha256``: which model made it)."""
    from . import kept

    entry = task.part.entry
    try:
        model, sha = kept.load(cache_root, entry)
        return model, {"model_sha256": sha, "model_reused": True}
    except kept.KeptModelError:  # none, or damaged: trained again and replaced
        pass
    tagger.fit(fit_docs)
    try:
        return tagger, {"model_sha256": kept.keep(cache_root, entry, tagger, task.spec.label)}
    except Exception as exc:  # noqa: BLE001 - keeping is a saving for fit, never a reason to lose the part
        # The type only: a state error's message may quote a key of the model's vocabulary.
        return tagger, {"model_not_kept": type(exc).__name__}


def _jsonable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


def limit_threads(threads: int) -> None:
    """Keep BLAS/torch from oversubscribing the cores shared by parallel jobs
    (a worker process's first step; also ``deid.distribute``'s local workers)."""
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
    keep_models: bool = True  # keep each entry's full-training model for fit (experiment.kept)

    def __post_init__(self):
        self.train = list(self.train)
        patients = len({d.group for d in self.train})
        if patients < self.k:
            raise EnsembleDeidError(f"{self.k} folds but the training set has only {patients} patient group(s) "
                                    f"({len(self.train)} documents): lower --folds to at most {patients}")
        self.folds = assign_folds(self.train, self.k, self.seed)
        self.train_fingerprint = corpus_fingerprint(self.train)
        self.target_fingerprints = {name: corpus_fingerprint(docs) for name, docs in self.targets.items()}

    # keys
    def entry_key(self, spec: TaggerSpec) -> tuple[EntryKey, bool]:
        return entry_key(spec, self.train_fingerprint)

    def parts(self, spec: TaggerSpec) -> list[Task]:
        entry, external = self.entry_key(spec)
        tasks = []
        if external:  # one pass over the training documents serves every fold
            tasks.append(Task(spec, PartKey.predict(entry, self.train_fingerprint), target="__train__"))
        else:
            tasks += [Task(spec, PartKey.fold(entry, self.folds.fingerprint, f), fold=f) for f in range(self.k)]
        tasks += [Task(spec, PartKey.predict(entry, fp), target=name) for name, fp in self.target_fingerprints.items()]
        return tasks

    def cached_fold_counts(self, specs: Sequence[TaggerSpec], most: int = 20) -> list[int]:
        """The fold counts k (same seed; ``self.k`` included) for which every
        trained tagger of ``specs`` has all its out-of-fold parts in the
        cache, without touching it: a run asking for a k not among them
        starts a new CV, which deserves a word."""
        trained = [e for e, external in map(self.entry_key, specs) if not external]
        if not trained:
            return []
        patients = len({d.group for d in self.train})
        found = []
        for k in sorted(set(range(2, min(patients, most) + 1)) | {self.k}):
            scope = assign_folds(self.train, k, self.seed).fingerprint
            if all(len(list((self.cache.root / e.relpath / f"oof-{scope}").glob("fold-*.json"))) == k for e in trained):
                found.append(k)
        return found

    def split_warnings(self) -> list[str]:
        """Target document sets that repeat training notes (a test split equal
        to the training split scores the taggers on what they learnt)."""
        train_texts = {hash(d.text) for d in self.train}
        out = []
        for name, docs in self.targets.items():
            if self.target_fingerprints[name] == self.train_fingerprint:
                out.append(f"the {name} split is identical to the training split: its scores measure "
                           "memorisation, not generalisation")
                continue
            repeated = sum(hash(d.text) in train_texts for d in docs)
            if repeated:
                out.append(f"{repeated} of {len(docs)} {name} document(s) also occur (same text) in the training split")
        return out

    def _describe(self, spec: TaggerSpec) -> dict:
        tagger = spec.make()
        return {"tagger_label": spec.label, "params": {k: _jsonable(v) for k, v in tagger.get_params().items()},
                "external": tagger.external}

    def pending(self, specs: Sequence[TaggerSpec], on_corrupt: Callable[[str], None] | None = None) -> list[Task]:
        """Tasks whose part is missing or corrupt (corrupt parts are discarded)."""
        todo = []
        for spec in specs:
            entry, _ = self.entry_key(spec)
            spec_todo = []
            for task in self.parts(spec):
                status = self.cache.part_status(task.part)
                if status.startswith("corrupt"):
                    if on_corrupt:
                        on_corrupt(f"{task.part}: {status}; recomputing")
                    self.cache.discard_part(task.part)
                if status != "valid":
                    spec_todo.append(task)
            if spec_todo:  # no workspace entry when every part is served (e.g. from a published folder)
                self.cache.ensure_entry(entry, self._describe(spec))
            todo += spec_todo
        return todo

    def run(
        self, specs: Sequence[TaggerSpec], jobs: int = 1, backend: str = "loky", scheduler: str | None = None,
        progress: bool = True, on_corrupt: Callable[[str], None] | None = None, desc: str = "cv",
        connect_timeout: float = CONNECT_TIMEOUT,
    ) -> dict[str, TaggerRun]:
        if backend not in BACKENDS:
            raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
        check_jobs(jobs)
        for spec in specs:
            spec.make()  # fail early on unknown taggers, bad parameters or missing dependencies
        todo = self.pending(specs, on_corrupt)
        try:
            results = self._execute(todo, jobs, backend, scheduler, progress, desc, connect_timeout)
        except BaseException:
            for spec in specs:  # a failed run leaves no entry without parts
                self.cache.discard_if_empty(self.entry_key(spec)[0])
            raise
        runs = self.collect(specs)
        for res in results:
            run = runs[res["task"].spec.label]
            if res["status"] == "computed":
                run.computed += 1
                run.computed_parts.add(res["task"].part)
            else:
                run.reused += 1
        for run in runs.values():
            run.reused += len(run.records) - run.computed - run.reused
        return runs

    def _execute(self, todo: list[Task], jobs: int, backend: str, scheduler: str | None, progress: bool,
                 desc: str = "cv", connect_timeout: float = CONNECT_TIMEOUT) -> list[dict]:
        if not todo:
            return []
        from joblib import Parallel, delayed, parallel_config
        from ..progress import progress_bar

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
        started_ray = False
        try:
            if backend == "dask":
                if not scheduler:
                    raise EnsembleDeidError("the dask backend needs --scheduler tcp://HOST:PORT")
                client = dask_client(scheduler, connect_timeout)
                config.update(scatter=shipped, wait_for_workers_timeout=60)
                config["n_jobs"] = -1
            elif backend == "ray":
                started_ray = ray_init(scheduler, connect_timeout)  # --address (None: RAY_ADDRESS, else a local one)
                from ray.util.joblib import register_ray

                register_ray()
            # Parts of different taggers take seconds to hours: no time-remaining.
            bar = progress_bar(total=len(todo), desc=desc, unit="part", disable=not progress, eta=False)
            out = []
            call = delayed(execute_task)
            with parallel_config(**config), warnings.catch_warnings():
                # loky retires a worker whose memory grew (the neural taggers load
                # torch) and says so in a UserWarning that breaks into the progress
                # bar; no work is lost (every part is read back from the
                # checksummed cache), so the warning tells a user nothing.
                warnings.filterwarnings("ignore", category=UserWarning,
                                        message="A worker stopped while some jobs were given to the executor")
                if jobs == 1 and backend == "loky":
                    stream = (execute_task(t, train, targets, self.folds, str(self.cache.root), threads, self.keep_models)
                              for t in todo)
                else:
                    # Ray's joblib backend returns only a list (no progress until the end)
                    stream = Parallel(return_as="list" if backend == "ray" else "generator_unordered")(
                        call(t, train, targets, self.folds, str(self.cache.root), threads, self.keep_models) for t in todo
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
            if started_ray:
                import ray

                ray.shutdown()

    def collect(self, specs: Sequence[TaggerSpec]) -> dict[str, TaggerRun]:
        """Read every tagger's predictions back from the cache (all parts must be valid)."""
        runs = {}
        for spec in specs:
            entry, external = self.entry_key(spec)
            run = TaggerRun(spec, entry, external)
            for task in self.parts(spec):
                preds, record = self.cache.read_part(task.part)
                run.records.append(record)
                run.parts.append(task.part)
                if task.fold is not None or task.target == "__train__":
                    run.oof.update(preds)
                else:
                    run.targets[task.target] = preds
            missing = [d.id for d in self.train if d.id not in run.oof]
            if missing:
                raise EnsembleDeidError(f"{spec.label}: cached out-of-fold predictions lack {len(missing)} training document(s)")
            runs[spec.label] = run
        return runs


def label_warnings(runs: Mapping[str, "TaggerRun"], train: Sequence[Document], corpus_name: str = "the corpus",
                   share: float = 0.2) -> list[str]:
    """Taggers whose predicted labels mostly do not occur in the corpus's gold
    (e.g. the i2b2-labelled rules on MEDDOCAN without a label map): every
    such span counts as a false positive, so say so instead of scoring 0 quietly."""
    gold = {a.label for d in train for a in d.annotations}
    out = []
    for label, run in runs.items():
        predicted: dict[str, int] = {}
        for pred in run.oof.values():
            for tag in pred.tags:
                if tag.startswith("B-"):
                    predicted[tag[2:]] = predicted.get(tag[2:], 0) + 1
        total = sum(predicted.values())
        foreign = {lab: n for lab, n in predicted.items() if lab not in gold}
        if total and sum(foreign.values()) / total > share:
            top = ", ".join(sorted(foreign, key=foreign.get, reverse=True)[:5])
            out.append(f"tagger {label}: {sum(foreign.values())} of {total} predicted spans carry labels that "
                       f"{corpus_name} never uses ({top}); they all count as errors. Give it a label map "
                       f"(its label_map parameter, e.g. rules:label_map=i2b2-to-meddocan) or register "
                       f"the corpus with --label-map")
    return out


def cross_corpus_target(corpus_name: str) -> str:
    """The target name of a corpus's test split predicted by models trained on another corpus."""
    return f"{corpus_name}.test"


@dataclass
class CVResult:
    """What :func:`cross_validate` ran: the corpus, the engine (folds, cache)
    and each tagger's run; ``others`` holds the other corpora's test splits
    by target name (:func:`cross_corpus_target`)."""

    corpus: Any
    engine: CrossValidation
    runs: dict[str, TaggerRun]
    others: dict[str, list[Document]]


def cross_validate(workspace, corpus_name: str, taggers: str | Sequence[TaggerSpec], folds: int = 10, seed: int = 0,
                   jobs: int = 1, backend: str = "loky", scheduler: str | None = None, targets: Sequence[str] = (),
                   progress: bool = True, warn: Callable[[str], None] | None = None,
                   keep_models: bool = True, connect_timeout: float = CONNECT_TIMEOUT) -> CVResult:
    """The ``cv`` step: out-of-fold and test predictions of every tagger on a
    workspace's corpus, computed once and kept in its prediction cache
    (what is cached is reused, so an interrupted run resumes). With
    ``targets``, the full-training models also predict those corpora's test
    splits. Every option is checked, and every corpus loaded, before any
    tagger runs; ``warn`` receives the warnings (corrupt parts, labels).
    ``keep_models``: keep each tagger's full-training model for ``fit``
    (``experiment.kept``); ``connect_timeout``: seconds the Dask scheduler
    or Ray head has to answer (``experiment.clusters``)."""
    from .cache import PredictionCache

    warn = warn or (lambda msg: log.warning(msg))
    try:
        check_jobs(jobs)
    except EnsembleDeidError as exc:
        raise ParameterError(str(exc), "--jobs") from None
    if backend == "dask" and not scheduler:
        raise ParameterError("--backend dask needs --scheduler tcp://HOST:PORT", "--scheduler")
    specs = parse_tagger_specs(taggers) if isinstance(taggers, str) else list(taggers)
    if corpus_name in targets:
        raise ParameterError(f"{corpus_name!r} is the training corpus: its test split is predicted anyway", "--target")
    twice = sorted({t for t in targets if list(targets).count(t) > 1})
    if twice:
        raise ParameterError(f"{twice[0]!r} is named twice", "--target")
    corpus = workspace.load(corpus_name)
    others = {cross_corpus_target(name): workspace.load(name).test for name in targets}
    engine = CrossValidation(corpus.train, {"test": corpus.test, **others}, PredictionCache(workspace.cache_dir),
                             k=folds, seed=seed, keep_models=keep_models)
    for msg in engine.split_warnings():
        warn(msg)
    runs = engine.run(specs, jobs=jobs, backend=backend, scheduler=scheduler, progress=progress, on_corrupt=warn,
                      connect_timeout=connect_timeout)
    for msg in label_warnings(runs, corpus.train, f"corpus {corpus_name!r}"):
        warn(msg)
    return CVResult(corpus, engine, runs, others)
