"""Helpers shared by the benchmark scripts: where the data and results live,
a wall/CPU clock, repeated timing, the machine description, progress lines
and result files (JSON and Markdown, written atomically).

The scripts are run as ``python benchmarks/<name>.py``, so this folder is on
``sys.path`` and ``from common import ...`` works; tests import it the same
way after putting ``benchmarks/`` on the path.
"""
from __future__ import annotations

import collections
import json
import os
import re
import platform
import shutil
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
# MEDDOCAN lives beside the repository (../shared/corpora/meddocan); MEDDOCAN_DIR overrides.
MEDDOCAN = Path(os.environ.get("MEDDOCAN_DIR", ROOT.parent / "shared" / "corpora" / "meddocan"))
# The 12 members published in cached_predictions/meddocan/. The neural ones are
# named with version 2's fixed schedules: their bare names now choose epochs by
# early stopping inside each run, which would train new models.
MEDDOCAN_PUBLISHED_MEMBERS = (
    "crf", "rules:label_map=i2b2-to-meddocan", "memm", "searn", "mira", "svm", "ogd", "struct-svm",
    "lstm-crf-l:epochs=12,validation_fraction=0", "lstm-crf-n:epochs=12,validation_fraction=0",
    "lstm-l:epochs=16,validation_fraction=0", "lstm-crf-fea:epochs=12,validation_fraction=0",
)
MEDDOCAN_CITATION = "MEDDOCAN, CC BY 4.0, Marimon et al., IberLEF@SEPLN 2019"
# The repository's published prediction folders (cached_predictions/<corpus>), read through
# ENSEMBLE_DEID_PUBLISHED so nothing published is retrained.
PUBLISHED_PREDICTIONS = ROOT / "cached_predictions"
MEDDOCAN_PUBLISHED = PUBLISHED_PREDICTIONS / "meddocan"  # the 12 members' published MEDDOCAN runs


def meddocan_cv(cache_root: Path, published: tuple[Path, ...] = (MEDDOCAN_PUBLISHED,), docs=None):
    """The 10-fold patient-grouped CV (seed 0) of MEDDOCAN train with dev as
    its test split, over the workspace cache ``cache_root`` and the published
    folders: ``(engine, train, dev)``; ``docs``: (train, dev) already loaded.
    Read its parts with ``read_member``, never ``engine.pending``, which
    writes entries and discards corrupt parts."""
    from ensemble_deid.corpus.formats import load_directory
    from ensemble_deid.experiment.cache import PredictionCache
    from ensemble_deid.experiment.cv import CrossValidation

    train, dev = docs or (load_directory(MEDDOCAN / "train" / "xml"), load_directory(MEDDOCAN / "dev" / "xml"))
    engine = CrossValidation(train, {"test": dev}, PredictionCache(cache_root, published=list(published)), k=10, seed=0)
    return engine, train, dev


def read_member(engine, spec):
    """(oof, dev, folds done, records) of a tagger spec from the parts in the
    cache, never computed here. A part the cache does not call valid (missing,
    corrupt record or predictions, damaged entry manifest) is left out and its
    fold counted as not done, as ``cv`` would recompute it; an external
    tagger's one pass over train counts as every fold."""
    from ensemble_deid.experiment.cache import CorruptPart

    oof, dev, records, folds = {}, None, [], []
    for task in engine.parts(spec):
        if engine.cache.part_status(task.part) != "valid":
            continue
        try:
            preds, record = engine.cache.read_part(task.part)
        except CorruptPart:  # damaged since its status was read (a run writing beside us)
            continue
        records.append(record)
        if task.fold is not None or task.target == "__train__":
            oof.update(preds)
            folds += [task.fold] if task.fold is not None else list(range(engine.k))
        else:
            dev = preds
    return oof, dev, sorted(folds), records


def pruned_voting(train, dev, variants) -> list[dict]:
    """Pruned voting [KIM20] chosen by CV on train over each ``(label, runs)``
    of ``variants`` (threshold and members by greedy elimination on the
    out-of-fold predictions, the f1 objective), scored once on ``dev``."""
    from types import SimpleNamespace

    from ensemble_deid.ensemble.run import prune_members
    from ensemble_deid.studies.summary import strict_prf

    corpus, out = SimpleNamespace(train=train, test=dev), []
    for label, runs in variants:
        progress(f"pruned voting over {label}: chosen by CV on train")
        done = prune_members(corpus, runs, None, "f1")
        out.append({"members": label, "candidates": len(runs), "threshold": done.search.threshold,
                    "kept": list(done.search.subset), "cv_f1": round(done.search.score, 4),
                    "dev_f1": round(strict_prf(dev, done.test_predictions)[2], 4)})
    return out


# The meta-learners chosen between by CV (issue 29), as ``ensemble --method`` runs them.
CV_METHODS = ("voting-pruned", "decision-templates", "stacked-svm")


def methods_by_cv(train, dev, folds, variants, methods=CV_METHODS, keep_predictions: bool = False) -> list[dict]:
    """Each method of ``methods`` over each ``(label, runs)`` of ``variants``,
    as ``ensemble --method`` fits it (its default grid chosen by CV over the
    members' out-of-fold predictions on ``train``, seed and k of ``folds``;
    a method given as ``(name shown, method, params, grid)`` gets those
    fixed parameters and that grid instead),
    scored by its own out-of-fold predictions on train (``run.oof_estimator``
    fitted on 9 of the members' ``folds`` predicts the 10th: CV F1) and, fitted
    on all of train, on ``dev`` (dev F1, never used to choose). ``keep_predictions``:
    each row also holds its ``dev_predictions``, ``oof_predictions`` and the
    fitted ``learner`` (for other scores and other notes; not JSON)."""
    from ensemble_deid.ensemble.run import learned, make_search, oof_estimator
    from ensemble_deid.ensemble.selection import cross_val_predict
    from ensemble_deid.studies.summary import strict_prf

    out = []
    for label, runs in variants:
        members_oof = {n: r.oof for n, r in runs.items()}
        members_dev = {n: r.test for n, r in runs.items()}
        for entry in methods:
            shown_as, method, params, grid = (entry, entry, None, None) if isinstance(entry, str) else entry
            progress(f"{shown_as} over {label}: chosen by CV on train, scored by its own out-of-fold predictions")
            clock = Clock().start()
            learner = make_search(method, params=params, grid=grid, folds=folds.k, seed=folds.seed,
                                  n_members=len(runs))
            learner.fit(members_oof, train)
            dev_preds = {p.doc_id: p for p in learner.predict(members_dev, dev)}
            oof = cross_val_predict(oof_estimator(learner, learner.best_params_), members_oof, train, folds)
            clock.stop()
            facts = learned(learner.best_estimator_)
            out.append({"members": label, "method": shown_as, "candidates": len(runs),
                        "params": {k: v for k, v in learner.best_params_.items()},
                        "threshold": facts.get("threshold"), "kept": facts.get("subset"),
                        "trust": facts.get("trust"), "cv_f1": round(strict_prf(train, oof)[2], 4),
                        "dev_f1": round(strict_prf(dev, dev_preds)[2], 4),
                        "fits": learner.fits_ + folds.k, "cpu_s": round(clock.cpu, 1)})
            if keep_predictions:
                out[-1].update(dev_predictions=dev_preds, oof_predictions=oof, learner=learner)
    return out


def best_by_cv(rows):
    """The row with the highest CV F1 (the first on a tie); dev F1 is never read."""
    return max(rows, key=lambda r: r["cv_f1"]) if rows else None


# Members computed from a published member's parts (issue 29): doc-consistency with its default base (crf,
# default parameters) is the CRF's output with the document-level rule applied
# (tests/test_doc_consistency.py checks exactly that).
DERIVED = {"doc-consistency": "crf"}


def derive_consistency(preds, docs_by_id):
    """doc-consistency's predictions from its base's (doc id -> prediction)."""
    import numpy as np

    from ensemble_deid.taggers.prediction import DocumentPrediction
    from ensemble_deid_adapters.doc_consistency import DocConsistencyTagger, propagate

    member = DocConsistencyTagger()
    out = {}
    for doc_id, pred in preds.items():
        conf = None if pred.confidences is None else np.asarray(pred.confidences, dtype=np.float32)
        tags, conf = propagate(docs_by_id[doc_id].tokens.words, pred.tags, conf, member.min_chars, member.proper_only)
        out[doc_id] = DocumentPrediction(doc_id, tuple(tags), conf)
    return out


def derived_member(name, oof, dev, published, docs_by_id):
    """(oof, dev, documents checked) of a ``DERIVED`` member, from its base's
    published runs; every part ``cv`` computed for it (``oof``, ``dev``: what
    ``read_member`` found) is compared with the derivation, and a difference exits."""
    base = published[DERIVED[name]]
    derived_oof, derived_dev = derive_consistency(base.oof, docs_by_id), derive_consistency(base.test, docs_by_id)
    checked = list(oof) + ([] if dev is None else list(dev))
    if not all((oof.get(i) or dev[i]).tags == (derived_oof.get(i) or derived_dev[i]).tags for i in checked):
        raise SystemExit(f"{name}'s computed parts differ from the derivation from {DERIVED[name]}: "
                         "the derivation is not the member")
    return derived_oof, derived_dev, len(checked)


def where(records) -> dict[str, int]:
    """Parts per place they were computed: the recorded host (published parts
    drop it) and torch version."""
    def place(r):
        host, torch = r.get("host") or "host not recorded", (r.get("environment") or {}).get("torch")
        return f"{host}, torch {torch}" if torch else host  # linear members record no torch

    return dict(collections.Counter(place(r) for r in records))


def write_member_results(stem: Path, result: dict, tables: Callable[[dict], tuple[str, str]]) -> None:
    """``stem``.json, then the two tables ``tables(result)`` makes as
    ``stem``.md and ``stem``-voting.md, printed too."""
    write_json(stem.with_suffix(".json"), result)
    members_md, voting_md = tables(result)
    write_markdown(stem.with_suffix(".md"), members_md)
    write_markdown(stem.parent / (stem.name + "-voting.md"), voting_md)
    print(members_md + "\n" + voting_md)


def read_published(engine) -> dict:
    """The 12 published MEDDOCAN members' runs (label -> ``oof``, ``test``),
    read from the cache; exits naming the first member whose parts are not all there."""
    from types import SimpleNamespace

    from ensemble_deid.experiment.cv import TaggerSpec

    runs = {}
    for text in MEDDOCAN_PUBLISHED_MEMBERS:
        spec = TaggerSpec.parse(text)
        oof, dev, folds, _ = read_member(engine, spec)
        if len(folds) < engine.k or dev is None:
            raise SystemExit(f"{spec.label}: the published parts are not all in {MEDDOCAN_PUBLISHED} "
                             f"({len(folds)}/{engine.k} folds, dev {'done' if dev is not None else 'missing'})")
        runs[spec.label] = SimpleNamespace(oof=oof, test=dev)
    return runs

# Distributions whose versions describe a run (absent ones are left out).
LIBRARIES = (
    "ensemble-deid", "numpy", "scipy", "scikit-learn", "python-crfsuite", "vowpalwabbit", "torch", "joblib",
    "filelock", "philter-ucsf", "presidio-analyzer", "scrubadub",
)


class Clock:
    """Wall-clock and CPU seconds of a block, and the 1-minute load average
    before and after it. CPU: this process only, or with ``children=True``
    this process and the child processes it has waited for, joblib's worker
    pool ended at the stop so that its workers count (the package's own
    ``cpu_seconds``, which a study's time line uses too)."""

    def __init__(self, children: bool = False):
        self.children = children

    def _cpu(self, stopping: bool = False) -> float:
        if not self.children:
            return time.process_time()
        from ensemble_deid.studies.study import cpu_seconds

        return cpu_seconds(ended_workers=stopping)

    def __enter__(self) -> "Clock":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "Clock":
        self.load_before = round(os.getloadavg()[0], 2)
        self.w0, self.c0 = time.perf_counter(), self._cpu()
        return self

    def stop(self) -> None:
        cpu = self._cpu(stopping=True)
        self.wall = time.perf_counter() - self.w0
        self.cpu = cpu - self.c0
        self.load_after = round(os.getloadavg()[0], 2)

    def as_dict(self, digits: int = 3) -> dict:
        return {"wall_s": round(self.wall, digits), "cpu_s": round(self.cpu, digits)}


def repeat(fn: Callable[[], Any], times: int) -> dict:
    """Run ``fn`` ``times`` times: median and best wall seconds, median CPU
    seconds (steadier on a shared machine) and the last result."""
    walls, cpus, result = [], [], None
    for _ in range(max(1, times)):
        with Clock() as c:
            result = fn()
        walls.append(c.wall)
        cpus.append(c.cpu)
    return {"median_s": statistics.median(walls), "best_s": min(walls), "cpu_median_s": statistics.median(cpus),
            "runs": len(walls), "result": result}


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def cpu_model() -> str:
    for line in _read("/proc/cpuinfo").splitlines():
        if line.lower().startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def memory_gb() -> dict:
    out = {}
    for line in _read("/proc/meminfo").splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable") and rest.split():
            out[key] = round(int(rest.split()[0]) / 2**20, 1)  # kB -> GiB
    return {"total_gib": out.get("MemTotal"), "available_gib": out.get("MemAvailable")}


def cpu_quota() -> float | None:
    """CPUs allowed by the cgroup (None when unlimited or unknown)."""
    parts = _read("/sys/fs/cgroup/cpu.max").split()
    if len(parts) == 2 and parts[0] != "max":
        return round(int(parts[0]) / int(parts[1]), 2)
    return None


def library_versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    out = {}
    for dist in LIBRARIES + tuple(extra):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return out


def gpu() -> str | None:
    """The GPU's name if nvidia-smi finds one (torch is not imported for this)."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    names = [x.strip() for x in res.stdout.splitlines() if x.strip()]
    return ", ".join(names) or None


def git_revision() -> dict:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return {}
    if head.returncode:
        return {}
    return {"commit": head.stdout.strip(), "modified_tracked_files": len(dirty.stdout.splitlines())}


def machine_description(extra_libraries: tuple[str, ...] = ()) -> dict:
    """What a result depends on: CPU, cores, memory, OS, Python, library
    versions, the repository revision and the load at the time of the call."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        usable = os.cpu_count()
    return {
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_quota": cpu_quota(),
        "memory": memory_gb(),
        "gpu": gpu(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "libraries": library_versions(extra_libraries),
        "git": git_revision(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def machine_lines(machine: dict) -> list[str]:
    """The machine description as short Markdown bullet lines."""
    mem = machine.get("memory") or {}
    libs = ", ".join(f"{k} {v}" for k, v in (machine.get("libraries") or {}).items())
    git = machine.get("git") or {}
    lines = [
        f"- CPU: {machine.get('cpu_model')}, {machine.get('cpus')} logical CPUs "
        f"({machine.get('cpus_usable')} usable{', cgroup quota ' + str(machine['cpu_quota']) if machine.get('cpu_quota') else ''})",
        f"- memory: {mem.get('total_gib')} GiB ({mem.get('available_gib')} GiB available at the start)",
        f"- GPU: {machine.get('gpu') or 'none used'}",
        f"- {machine.get('platform')}, Python {machine.get('python')}",
        f"- libraries: {libs}",
        f"- load average at the start: {', '.join(str(x) for x in machine.get('load_average', []))}",
    ]
    if git:
        lines.append(f"- revision: {git.get('commit', '?')[:12]} ({git.get('modified_tracked_files', 0)} modified tracked files)")
    return lines


def load_range(*loads) -> str:
    """The 1-minute load averages recorded around a run, as the docs print
    them (``3.9-5.2``, ``12-18`` from 10 up; one value alone; ``not recorded``)."""
    known = sorted(x for x in loads if x is not None)
    return "-".join(f"{x:.0f}" if x >= 10 else f"{x:.1f}" for x in known) if known else "not recorded"


def timing_phrase(entry: dict) -> str:
    """Wall time with CPU time, cores and load beside it, as the docs print
    it: on a shared machine wall time alone mostly measures the others' work.
    ``entry`` holds ``wall_s`` and, when recorded, ``cpu_s``, ``load_before``
    / ``load_after`` (1 minute), ``cores``, and ``steps`` / ``steps_computed``
    (run_all.py: how much the run computed rather than read from the cache); a results file that kept only
    its ``machine`` description and ``load_average_at_end`` is read too."""
    machine = entry.get("machine") or {}

    def dur(s: float) -> str:
        return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"

    def first(value):
        return value[0] if isinstance(value, list) and value else value

    load = load_range(entry.get("load_before", first(machine.get("load_average"))),
                      entry.get("load_after", first(entry.get("load_average_at_end"))))
    cpu = f", {dur(entry['cpu_s'])} CPU" if entry.get("cpu_s") is not None else ", CPU time not recorded"
    cores = entry.get("cores") or machine.get("cpus_usable") or "?"
    when = str(machine.get("when") or entry.get("started") or "")[:10]
    nice = f", nice {entry['nice']}" if entry.get("nice") else ""  # a niced run waits behind the others
    # A run that read steps from the prediction cache says how many: a fully cached
    # rerun's seconds are not the time the work takes (issue 34 item 8).
    steps, computed = entry.get("steps"), entry.get("steps_computed")
    cached = (f"; {computed} of {steps} steps computed, the rest read from the cache"
              if steps is not None and computed is not None and computed < steps else "")
    return f"{dur(entry['wall_s'])} wall{cpu} ({cores} cores, load {load}{nice}{', ' + when if when else ''}{cached})"


_T0 = time.perf_counter()


def score_predictions(docs, predictions, types=None) -> dict:
    """Strict and token micro scores by the evaluation module (the official
    i2b2 rules), strict F1 per subtype, and ``f1`` (strict micro). ``types``
    keeps only spans of those subtypes, gold and system alike."""
    from ensemble_deid.corpus.document import Document
    from ensemble_deid.evaluation import evaluate

    def keep(spans):
        return list(spans) if types is None else [s for s in spans if s.type in types]

    gold = docs if types is None else [Document(d.id, d.text, keep(d.annotations), d.metadata) for d in docs]
    system = {p.doc_id: keep(p.spans(d)) for p, d in zip(predictions, docs)}
    report = evaluate(gold, system, criteria=["strict", "token"], leak=False)
    strict = report["strict"]
    return {
        "strict_micro": strict.micro.to_dict(),
        "token_micro": report["token"].micro.to_dict(),
        "strict_by_subtype": {k: round(v.f1, 4) for k, v in sorted(strict.by_subtype.items())},
        "f1": round(strict.micro.f1, 4),
    }



def criterion_scores(docs, spans) -> dict:
    """Micro precision, recall and F1 (unrounded) of ``spans`` (a list per
    document of ``docs``) on each criterion selection counts by (strict,
    token, binary-token: ``ensemble.objective``), against ``docs``' gold."""
    from ensemble_deid.ensemble.objective import GoldKeys, tally_spans

    out = {}
    for criterion, (tp_s, n_s, tp_g, n_g) in tally_spans(GoldKeys(docs), spans).overall.items():
        p, r = (tp_s / n_s if n_s else 0.0), (tp_g / n_g if n_g else 0.0)
        out[criterion] = {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}
    return out

def console_script() -> str:
    """The installed ``ensemble-deid`` command beside this interpreter, as a
    user runs it (benchmarks time the command, never import the CLI)."""
    exe = Path(sys.executable).with_name("ensemble-deid")
    if not exe.exists():
        sys.exit(f"{exe}: not found; install the package (make) to time the command end to end")
    return str(exe)


def load1() -> float:
    """The 1-minute load average, as the results files record it."""
    return round(os.getloadavg()[0], 2)


def code_env(tree: Path = ROOT, *, extend: bool = True, drop: tuple[str, ...] = ()) -> dict:
    """An environment whose Python runs ``tree``'s code (its ``.devpath``
    maps the bundled adapters): ``tree`` first on ``PYTHONPATH``, the rest of
    it kept unless ``extend`` is False (a baseline tree alone); ``drop``:
    variables left out."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    paths = [str(tree)] + ([str(tree / ".devpath")] if (tree / ".devpath").is_dir() else [])
    if extend and env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def timed_child(argv: list[str], cwd, env: dict, stdout=None, stderr=None) -> dict:
    """Run ``argv`` to its end: wall seconds, CPU seconds (user + system of
    the child and the descendants it waited for, such as joblib workers:
    ``os.wait4``), the load before and after, this process's niceness, the
    exit status and the peak resident memory of the largest process."""
    before = load1()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=stdout, stderr=stderr)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1), "load_before": before,
            "load_after": load1(), "nice": os.nice(0), "exit_status": os.waitstatus_to_exitcode(status),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def deidentify_throughput(printed: str) -> tuple[int, float]:
    """(tokens, seconds) of the throughput line ``deidentify`` prints ("N tokens in S s")."""
    m = re.search(r"(\d+) tokens in ([\d.]+) s", printed)
    if m is None:
        raise ValueError("deidentify printed no throughput line")
    return int(m.group(1)), float(m.group(2))


def progress(message: str) -> None:
    """A progress line on stderr, with the seconds since the script started."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {message}", file=sys.stderr, flush=True)


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


_RECORD: list = []


def _record() -> dict | None:
    """The provenance record of this run (``provenance.py``): the script, its
    command line, the commit and the fingerprint of the code it depends on,
    taken once, at the first results file written."""
    if not _RECORD:
        from provenance import current_record

        _RECORD.append(current_record())
    return _RECORD[0]


def write_json(path: Path, data: Any) -> Path:
    """``data`` as JSON; a results object gets the run's ``provenance`` field."""
    record = _record()
    if record is not None and isinstance(data, dict):
        data = {**data, "provenance": record}
    _atomic_write_text(Path(path), json.dumps(data, indent=2, default=str) + "\n")
    return Path(path)


def write_markdown(path: Path, text: str) -> Path:
    """``text`` as Markdown, its first line the run's provenance record."""
    from provenance import with_record

    _atomic_write_text(Path(path), with_record(path, text.rstrip("\n") + "\n", _record()))
    return Path(path)


def replace_between_markers(doc: Path, begin: str, end: str, text: str) -> Path:
    """Put ``text`` between the ``begin`` and ``end`` marker lines of ``doc``
    (the docs' tables are the results files', never typed by hand)."""
    body = doc.read_text(encoding="utf-8")
    if begin not in body or end not in body:
        raise SystemExit(f"{doc}: no {begin!r} ... {end!r} markers")
    head, rest = body.split(begin, 1)
    _, tail = rest.split(end, 1)
    return write_markdown(doc, head + begin + "\n" + text.strip("\n") + "\n" + end + tail)


def shown(path: Path) -> str:
    """A path relative to the repository when it is inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b, or None when either is missing or b is zero."""
    if a is None or b is None or not b:
        return None
    return a / b
