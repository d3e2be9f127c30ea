"""Distillation: a fitted bundle (the teacher) taught to one fast tagger (the student).

The student is any registered trained tagger (the CRF by default), trained on
a mix of four sources:

- ``gold``: the teacher's training notes with their gold spans;
- ``teacher``: the same notes with the teacher's spans, taken from its
  *out-of-fold* outputs (each note labelled by the teacher fitted without
  it, :func:`teacher_out_of_fold`): a teacher predicting its own training
  notes repeats their gold and teaches nothing of its errors; ``union``: the
  gold spans plus the teacher's spans that overlap none (recall-leaning);
- ``augment``: surrogate copies of those notes, every labelled span re-drawn
  by the surrogate generator and the offsets moved with it
  (:func:`ensemble_deid.deid.shift.augmented_copies`);
- ``unlabelled``: notes the user supplies without gold, labelled by the
  teacher bundle itself (it never saw them).

Which mix, and which of the student's settings, is chosen by k-fold
patient-grouped cross-validation on the training notes, scored against the
gold of the held-out notes with the teacher's own objective: a recall-first
teacher chooses the student that best meets its recall target. Each
(setting, fold)'s held-out spans are cached (owner-only, checksummed), so an
interrupted run resumes; a damaged record is computed again.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..corpus.document import Annotation, Document
from ..errors import ParameterError

Say = Callable[[str], None]
LABELS = ("gold", "teacher", "union")
RECORD_VERSION = 1


def _quiet(_message: str) -> None:
    pass


@dataclass(frozen=True)
class Mix:
    """What the student is trained on: the training notes with ``labels``
    (gold, teacher or union), ``augment`` surrogate copies of each, and
    ``unlabelled`` copies of each teacher-labelled unlabelled note (0: none;
    a weight by repetition)."""

    labels: str = "gold"
    augment: int = 0
    unlabelled: int = 0

    def __post_init__(self):
        if self.labels not in LABELS:
            raise ParameterError(f"labels must be one of {', '.join(LABELS)}, not {self.labels!r}", "--mix")
        for name in ("augment", "unlabelled"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 10:
                raise ParameterError(f"{name} must be an integer from 0 to 10, not {value!r}", "--mix")

    @classmethod
    def parse(cls, text: str) -> "Mix":
        """``labels=union,augment=1,unlabelled=1`` (keys left out keep their defaults)."""
        values: dict[str, Any] = {}
        for item in filter(None, (p.strip() for p in str(text).split(","))):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or key not in ("labels", "augment", "unlabelled"):
                raise ParameterError(f"expected labels=..., augment=N or unlabelled=N, got {item!r}", "--mix")
            try:
                values[key] = value.strip() if key == "labels" else int(value)
            except ValueError:
                raise ParameterError(f"{key} must be an integer, not {value.strip()!r}", "--mix") from None
        return cls(**values)

    def __str__(self) -> str:
        return f"labels={self.labels},augment={self.augment},unlabelled={self.unlabelled}"

    @property
    def uses_teacher(self) -> bool:
        return self.labels != "gold" or self.unlabelled > 0


# The default grid: the ablation's steps (gold; + augmentation; + the teacher's labels; + unlabelled notes).
DEFAULT_MIXES = (Mix("gold"), Mix("gold", 1), Mix("union", 1), Mix("union", 1, 1))


# --- the teacher's labels ---------------------------------------------------------

def union_spans(gold: Sequence[Annotation], teacher: Sequence[Annotation]) -> list[Annotation]:
    """The gold spans plus every teacher span that overlaps none of them."""
    added = [t for t in teacher if not any(g.start < t.end and t.start < g.end for g in gold)]
    return sorted([*gold, *added], key=lambda a: (a.start, a.end))


def labelled(documents: Sequence[Document], labels: str, teacher: Mapping[str, Any]) -> list[Document]:
    """``documents`` carrying the spans ``labels`` names: their gold, the
    teacher's (``teacher``: doc id -> its out-of-fold prediction) or the union."""
    if labels == "gold":
        return list(documents)
    out = []
    for d in documents:
        spans = teacher[d.id].spans(d)
        out.append(d.with_annotations(spans if labels == "teacher" else union_spans(d.annotations, spans)))
    return out


def teacher_out_of_fold(workspace, manifest: Mapping[str, Any], progress: bool = False, log: Say = _quiet,
                        warn: Say = _quiet, source: str | Path | None = None, corpus=None):
    """(the teacher's training corpus, {doc id: its out-of-fold prediction}).

    An ensemble bundle: its members' cached out-of-fold predictions in
    ``workspace`` (cross-validated first when missing, as ``fit`` does) and
    the method with the parameters the bundle records, refitted on each
    fold's other folds (what the ``ensemble`` step caches as its
    out-of-fold predictions). They must reproduce the leak counts the
    bundle recorded from them (``oof_leaks``): otherwise they are not this
    teacher's. A single-tagger bundle: the tagger's cached cross-validation.
    ``source``: the bundle's folder, named in errors; ``corpus``: the
    teacher's corpus, already loaded and checked."""
    from .bundle import BundleError, MANIFEST

    where = Path(source) / MANIFEST if source is not None else Path(MANIFEST)
    corpus = corpus if corpus is not None else _teacher_corpus(workspace, manifest, where)
    if manifest.get("method") is None:
        return corpus, _single_tagger_oof(workspace, corpus, manifest, where)
    from ..ensemble.run import load_members, make_search, oof_estimator
    from ..ensemble.selection import cross_val_predict
    from .fit import oof_leak_record

    sel = manifest.get("selection")
    if not isinstance(sel, dict) or not all(k in sel for k in ("method", "params", "fixed", "best_params", "folds",
                                                                 "seed", "objective", "members_given")):
        raise BundleError(f"{where}: malformed (field 'selection')")
    fixed = {k: sel["params"][k] for k in sel["fixed"] if k in sel["params"]}
    learner = make_search(sel["method"], fixed, None, folds=sel["folds"], seed=sel["seed"], objective=sel["objective"])
    _, engine, runs = load_members(workspace, corpus.name, ",".join(sel["members_given"]), sel["folds"], sel["seed"],
                                   progress, log, warn)
    log(f"teacher: {sel['method']} out of fold over {len(runs)} members' cached predictions ({engine.k} folds)")
    oof = cross_val_predict(oof_estimator(learner, sel["best_params"]), {n: r.oof for n, r in runs.items()},
                            corpus.train, engine.folds)
    recorded = manifest.get("oof_leaks")
    if recorded is not None and oof_leak_record(corpus.train, oof) != recorded:
        raise BundleError(f"{where}: the out-of-fold predictions this workspace gives do not reproduce the teacher's "
                          f"(field 'oof_leaks'): its members' cached runs changed since it was fitted")
    return corpus, oof


def _single_tagger_oof(workspace, corpus, manifest, where: Path) -> dict:
    from ..experiment.cache import PredictionCache
    from ..experiment.cv import CrossValidation, TaggerSpec
    from .bundle import BundleError

    from ..taggers.state import decoded

    (member,) = manifest["members"]
    try:
        spec = TaggerSpec(member["name"], tuple(sorted(decoded(member["params"]).items())))
        spec.make()  # the parameters checked by the tagger's own constraints (they only key the cache here)
    except (TypeError, ValueError, KeyError, AttributeError):
        raise BundleError(f"{where}: malformed (field 'members')") from None
    cache = PredictionCache(workspace.cache_dir)
    probe = CrossValidation(corpus.train, {"test": corpus.test}, cache, k=2)
    for k in probe.cached_fold_counts([spec]):
        engine = CrossValidation(corpus.train, {"test": corpus.test}, cache, k=k)
        if not engine.pending([spec]):
            return engine.collect([spec])[spec.label].oof
    raise ParameterError(f"the teacher's tagger {member['name']!r} has no cached cross-validation in this workspace "
                         f"(run 'ensemble-deid cv --corpus {corpus.name} --taggers {member['name']}' first: its "
                         f"out-of-fold predictions are the teacher's labels)", "BUNDLE")


# --- unlabelled notes ---------------------------------------------------------------

def read_unlabelled(folder: str | Path) -> list[Document]:
    """The notes of ``folder`` (``.txt``; ``.xml``/BRAT read for their text
    only: any gold they carry is ignored), each its own patient; every
    problem named by file before any work."""
    from ..corpus.formats import CorpusError
    from .batch import check_notes, read_note, scan_folder

    notes, _ = scan_folder(folder)
    check_notes(notes)
    docs = []
    for note in notes:
        doc, _problems = read_note(note)
        if doc is None:
            raise CorpusError(f"{note.path}: cannot be read")
        docs.append(Document(f"unlabelled~{doc.id}", doc.text, (), {"group": f"unlabelled~{doc.id}",
                                                                    "source": str(note.path)}))
    return docs


def refuse_training_notes(unlabelled: Sequence[Document], train: Sequence[Document]) -> None:
    """An unlabelled note whose text is one of the teacher's training notes
    would be labelled by the teacher's in-sample predictions: refused,
    naming its file (never its text)."""
    from ..errors import CorpusError

    seen = {hashlib.sha256(d.text.encode("utf-8")).digest() for d in train}
    found = [d.metadata.get("source", d.id) for d in unlabelled
             if hashlib.sha256(d.text.encode("utf-8")).digest() in seen]
    if found:
        raise CorpusError(f"{found[0]}: the text of one of the teacher's training notes ({len(found)} such note(s) in "
                          f"the folder): the teacher's labels on it would be its in-sample predictions; remove them")


# --- the student's training set ------------------------------------------------------

def training_set(mix: Mix, notes: Sequence[Document], teacher: Mapping[str, Any], augmented: Mapping[str, list],
                 unlabelled: Sequence[Document]) -> list[Document]:
    """The documents ``mix`` trains on, from the training ``notes`` (gold
    kept in them), the teacher's out-of-fold predictions, the notes'
    augmented copies per label source ({labels: [copies of note i, per
    copy]}, keyed by note id inside) and the teacher-labelled unlabelled notes."""
    out = labelled(notes, mix.labels, teacher)
    if mix.augment:
        copies = augmented[mix.labels]
        for i in range(mix.augment):
            out += [copies[i][d.id] for d in notes]
    out += [d for _ in range(mix.unlabelled) for d in unlabelled]
    return out


def augment(notes: Sequence[Document], mixes: Sequence[Mix], teacher: Mapping[str, Any], locale: str,
            date_order: str, seed: int) -> dict[str, list[dict[str, Document]]]:
    """Per label source the mixes use, ``max(augment)`` surrogate copies of
    every note ({id: copy}), its labels re-drawn."""
    from .shift import ShiftOptions, augmented_copies

    out = {}
    for labels in sorted({m.labels for m in mixes if m.augment}):
        copies = max(m.augment for m in mixes if m.labels == labels)
        options = ShiftOptions(identifiers=True, locale=locale, date_order=date_order, seed=seed)
        made = augmented_copies(labelled(notes, labels, teacher), copies, options)
        out[labels] = [{d.metadata["copy_of"]: d for d in batch} for batch in made]
    return out


# --- choosing by cross-validation ------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One candidate student: a mix and the tagger's parameters."""

    mix: Mix
    params: tuple[tuple[str, Any], ...] = ()

    def spec(self, base):
        from ..experiment.cv import TaggerSpec

        return TaggerSpec(base.name, tuple(sorted({**dict(base.params), **dict(self.params)}.items())))

    def to_dict(self) -> dict:
        return {"mix": asdict(self.mix), "params": dict(self.params)}

    def __str__(self) -> str:
        return " ".join([str(self.mix), *(f"{k}={v}" for k, v in self.params)])


def settings(mixes: Sequence[Mix], grid: Mapping[str, Sequence] | None) -> list[Setting]:
    grid = dict(grid or {})
    keys = sorted(grid)
    combos = [tuple(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))] or [()]
    return [Setting(m, c) for m in mixes for c in combos]


class FoldRecords:
    """Each (setting, fold)'s held-out spans, one owner-only JSON file per
    pair under ``root`` (no text: offsets and labels), with the checksum of
    its content; a damaged or foreign record counts as missing."""

    def __init__(self, root: Path, context: Mapping[str, Any]):
        self.root = Path(root)
        self.context = json.loads(json.dumps(context, sort_keys=True, default=str))

    def _key(self, setting: Setting, fold: int) -> str:
        body = json.dumps([self.context, setting.to_dict(), fold], sort_keys=True, default=str)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:24]

    def path(self, setting: Setting, fold: int) -> Path:
        return self.root / f"{self._key(setting, fold)}.json"

    def read(self, setting: Setting, fold: int) -> dict | None:
        path = self.path(setting, fold)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            body = {k: v for k, v in record.items() if k != "sha256"}
            if record.get("sha256") != _checksum(body) or record.get("key") != self._key(setting, fold):
                return None
            return record
        except (OSError, ValueError, AttributeError):
            return None

    def write(self, setting: Setting, fold: int, spans: Mapping[str, list], seconds: float) -> dict:
        from ..files import private_dir, write_private_json

        private_dir(self.root)
        body = {"version": RECORD_VERSION, "key": self._key(setting, fold), "fold": fold,
                "setting": setting.to_dict(), "seconds": round(seconds, 2), "spans": dict(spans)}
        record = {**body, "sha256": _checksum(body)}
        write_private_json(self.path(setting, fold), record)
        return record


def _checksum(body: Mapping) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


def _span_rows(doc: Document, spans: Sequence[Annotation]) -> list:
    return [[a.start, a.end, a.category, a.type] for a in spans]


def _spans_of(doc: Document, rows) -> list[Annotation]:
    return [Annotation(int(s), int(e), c, t, doc.text[int(s):int(e)]) for s, e, c, t in rows]


def fold_record(base_spec, setting: Setting, fold: int, k: int, train: Sequence[Document], test: Sequence[Document],
                teacher: Mapping[str, Any], augmented: Mapping[str, list], unlabelled: Sequence[Document],
                records: FoldRecords, log: Say = _quiet) -> dict:
    """The record of ``setting`` trained on ``train`` (fold ``fold``'s other
    folds) and predicting ``test``: read when cached, else computed and written."""
    record = records.read(setting, fold)
    if record is None:
        log(f"student {setting}: fold {fold + 1}/{k}")
        t0 = time.perf_counter()
        tagger = setting.spec(base_spec).make()
        tagger.fit(training_set(setting.mix, train, teacher, augmented, unlabelled))
        preds = tagger.predict(test)
        record = records.write(setting, fold, {d.id: _span_rows(d, p.spans(d)) for d, p in zip(test, preds)},
                               time.perf_counter() - t0)
    return record


@dataclass
class Choice:
    """The chosen setting, every setting's pooled held-out score under the
    objective, and the held-out spans of the chosen one (doc id -> spans)."""

    setting: Setting
    results: list[dict]
    held_out: dict[str, list[Annotation]]


def choose(base_spec, candidates: Sequence[Setting], notes: Sequence[Document], teacher: Mapping[str, Any],
           augmented: Mapping[str, list], unlabelled: Sequence[Document], folds, objective: str, records: FoldRecords,
           log: Say = _quiet) -> Choice:
    """Each candidate trained on the other folds' notes (and their copies,
    and the unlabelled notes) and scored on the held-out notes' gold, pooled
    over folds, with ``objective``; the best wins (ties: the first)."""
    from ..ensemble.objective import GoldKeys, parse_objective, tally_spans
    from ..ensemble.splits import fold_indices
    from ..evaluation.metrics import f_beta

    goal = parse_objective(objective)
    gold = GoldKeys(notes)
    results, best, best_score, held_best = [], None, None, {}
    for setting in candidates:
        held: dict[str, list[Annotation]] = {}
        for f, (train_idx, test_idx) in enumerate(fold_indices(notes, folds)):
            if not len(test_idx):
                continue
            test = [notes[i] for i in test_idx]
            record = fold_record(base_spec, setting, f, folds.k, [notes[i] for i in train_idx], test, teacher,
                                 augmented, unlabelled, records, log)
            for d in test:
                held[d.id] = _spans_of(d, record["spans"].get(d.id, []))
        tally = tally_spans(gold, [held.get(d.id, []) for d in notes])
        score = goal.score(tally)
        tp, n_sys, tp_gold, n_gold = tally.overall["strict"]
        p, r = (tp / n_sys if n_sys else 0.0), (tp_gold / n_gold if n_gold else 0.0)
        btp, bn, bgtp, bgn = tally.overall["binary-token"]
        results.append({**setting.to_dict(), "objective_score": list(score), "strict_f1": round(f_beta(p, r, 1.0), 6),
                        "strict_precision": round(p, 6), "strict_recall": round(r, 6),
                        "token_leak": round(1 - (bgtp / bgn if bgn else 1.0), 6)})
        if best_score is None or score > best_score:
            best, best_score, held_best = setting, score, held
    for row in results:
        row["chosen"] = row["mix"] == asdict(best.mix) and row["params"] == dict(best.params)
    return Choice(best, results, held_best)


# --- the command ---------------------------------------------------------------------

@dataclass
class DistilResult:
    path: Path
    info: dict
    lines: list[str]

    @property
    def summary(self) -> str:
        return "\n".join(self.lines)


def check_request(tagger: str, mixes: Sequence[Mix], unlabelled_dir, folds: int) -> Any:
    """The student's tagger spec, checked (a registered trained tagger), and the mixes against the inputs."""
    from ..experiment.cv import parse_tagger_specs

    specs = parse_tagger_specs(tagger, "--tagger")
    if len(specs) != 1:
        raise ParameterError(f"name one student tagger, not {len(specs)}", "--tagger")
    if specs[0].make().external:
        raise ParameterError(f"{specs[0].name!r} is an external system: a student must be a tagger that trains",
                             "--tagger")
    if not mixes:
        raise ParameterError("give at least one mix", "--mix")
    if unlabelled_dir is None and any(m.unlabelled for m in mixes):
        raise ParameterError("a mix uses unlabelled notes: give --unlabelled FOLDER (or drop unlabelled=N)", "--mix")
    if folds < 2:
        raise ParameterError("at least 2 folds", "--folds")
    return specs[0]


def distil(workspace, bundle: str | Path, out: str | Path, tagger: str = "crf",
           mixes: Sequence[Mix] | None = None, grid: Mapping[str, Sequence] | None = None,
           unlabelled: str | Path | None = None, folds: int = 3, seed: int = 0, locale: str = "en_US",
           date_order: str = "mdy", progress: bool = False, log: Say = _quiet, warn: Say = _quiet) -> DistilResult:
    """Write the student of the teacher ``bundle`` to ``out`` (see the
    module docstring). Every input is checked before any training: the
    bundle (verified, its corpus in ``workspace``), the tagger, the mixes,
    the unlabelled folder. ``mixes``: the candidates (default: the
    ablation's four, the last only with ``unlabelled``); ``grid``: the
    student's parameters to choose from."""
    from ..corpus.fingerprint import corpus_fingerprint
    from ..ensemble.splits import make_folds
    from .bundle import MANIFEST, read_manifest
    from .fit import _info, _new_folder, _test_scores, oof_leak_record
    from .model import Deidentifier

    out = _new_folder(out)
    if mixes is None:
        mixes = [m for m in DEFAULT_MIXES if unlabelled is not None or not m.unlabelled]
    spec = check_request(tagger, mixes, unlabelled, folds)
    for key, values in (grid or {}).items():  # every parameter value checked now, not after hours of folds
        for value in values:
            try:
                Setting(mixes[0], ((key, value),)).spec(spec).make()
            except (TypeError, ValueError) as exc:
                raise ParameterError(f"{key}={value!r}: {exc}", "--grid") from None
    manifest = read_manifest(bundle)  # a tampered or foreign bundle: refused here
    extra = read_unlabelled(unlabelled) if unlabelled is not None else []
    objective = (manifest.get("selection") or {}).get("objective", "f1")
    candidates = settings(mixes, grid)
    need_teacher = any(c.mix.uses_teacher for c in candidates)
    teacher_model = Deidentifier.load(bundle) if extra else None  # loads and probes: before any training
    corpus = _teacher_corpus(workspace, manifest, Path(bundle) / MANIFEST)
    refuse_training_notes(extra, corpus.train)
    teacher = {}
    if need_teacher or extra:
        corpus, teacher = teacher_out_of_fold(workspace, manifest, progress, log, warn, bundle, corpus)
    notes = corpus.train
    if extra:
        log(f"teacher: labelling {len(extra)} unlabelled note(s)")
        spans = teacher_model.spans(extra)
        extra = [d.with_annotations(spans[d.id]) for d in extra]
    augmented = augment(notes, [c.mix for c in candidates], teacher, locale, date_order, seed)
    fold_assignment = make_folds(notes, folds, seed)
    context = {"teacher": manifest["manifest_sha256"], "tagger": spec.label, "train": corpus_fingerprint(notes),
               "folds": folds, "seed": seed, "locale": locale, "date_order": date_order,
               "unlabelled": corpus_fingerprint(extra) if extra else None, "objective": objective}
    records = FoldRecords(Path(workspace.cache_dir) / "distil" / manifest["manifest_sha256"][:16], context)
    log(f"choosing the student: {len(candidates)} setting(s) x {fold_assignment.k} folds on {len(notes)} training "
        f"notes (objective {objective})")
    choice = choose(spec, candidates, notes, teacher, augmented, extra, fold_assignment, objective, records, log)
    chosen = choice.setting
    log(f"chosen: {chosen}; training the student on every training note")
    t0 = time.perf_counter()
    final_spec = chosen.spec(spec)
    student = final_spec.make()
    train_docs = training_set(chosen.mix, notes, teacher, augmented, extra)
    student.fit(train_docs)
    seconds = time.perf_counter() - t0
    model = Deidentifier({final_spec.label: student}, None, {})
    scores = _test_scores(corpus, {p.doc_id: p for p in model.predict(corpus.test)})
    info = _info(corpus, corpus_fingerprint(notes))
    info["scores"] = {"test_strict": scores}
    info["member_models"] = {final_spec.label: {"model": "trained by distil"}}
    info["oof_leaks"] = oof_leak_record(notes, {d.id: _prediction(d, choice.held_out[d.id]) for d in notes})
    info["distillation"] = {
        "teacher": {"manifest_sha256": manifest["manifest_sha256"],
                    "method": (manifest.get("method") or {}).get("name"),
                    "members": [m.get("label") for m in manifest.get("members", []) if isinstance(m, dict)],
                    "objective": objective,
                    "labels_on_training_notes": "out-of-fold" if need_teacher else "not used"},
        "objective": objective, "folds": fold_assignment.k, "seed": seed,
        "chosen": chosen.to_dict(), "cv": choice.results,
        "trained_on": {"training_notes": len(notes), "labels": chosen.mix.labels,
                       "augmented_copies": chosen.mix.augment * len(notes),
                       "augmentation": {"locale": locale, "date_order": date_order, "seed": seed},
                       "unlabelled_notes": len(extra) if chosen.mix.unlabelled else 0,
                       "unlabelled_fingerprint": context["unlabelled"] if chosen.mix.unlabelled else None,
                       "documents": len(train_docs)},
        "fit_seconds": round(seconds, 2)}
    model.save(out, info)
    from .fit import _saved

    lines = [f"student {final_spec.label} chosen by {fold_assignment.k}-fold CV ({objective}) over {len(candidates)} "
             f"setting(s): {chosen}; trained on {len(train_docs)} documents in {seconds:.1f} s",
             *(f"  {'*' if r['chosen'] else ' '} {Setting(Mix(**r['mix']), tuple(r['params'].items()))}: CV strict F1 "
               f"{r['strict_f1']:.4f}, token leak {r['token_leak']:.4f}" for r in choice.results),
             f"test strict P {scores['precision']:.4f} R {scores['recall']:.4f} F1 {scores['f1']:.4f}",
             f"saved student bundle to {out}", *_saved(out)]
    return DistilResult(out, info, lines)


def _teacher_corpus(workspace, manifest, where: Path):
    from ..corpus.fingerprint import corpus_fingerprint
    from .bundle import BundleError

    corpus_info = manifest.get("corpus")
    if not isinstance(corpus_info, dict) or not isinstance(corpus_info.get("name"), str):
        raise BundleError(f"{where}: no training corpus recorded (field 'corpus'): not a bundle written by fit")
    corpus = workspace.load(corpus_info["name"])
    if corpus_fingerprint(corpus.train) != corpus_info.get("train_fingerprint"):
        raise ParameterError(f"corpus {corpus.name!r} in this workspace is not the teacher's training set (its "
                             f"fingerprint differs from the bundle's field 'corpus.train_fingerprint')", "BUNDLE")
    return corpus


def _prediction(doc: Document, spans):
    from ..taggers.prediction import DocumentPrediction

    return DocumentPrediction.from_spans(doc, spans)
