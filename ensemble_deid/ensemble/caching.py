"""Members from the prediction cache, and the ensembles' own cache entries.

An ensemble's predictions are stored in the same cache as a tagger's
(``ensemble_deid.experiment.cache``), under the tagger name ``ensemble.<method>``:

- ``predict-<test fingerprint>/all``: trained on every training document's
  out-of-fold member predictions, predicting the test split;
- ``oof-<folds fingerprint>/fold-NN``: trained on the other folds' out-of-fold
  predictions, predicting fold NN (the folds of the members' own
  cross-validation), so that an ensemble can itself be a member.

The parameter hash covers the method and its parameters, the selection
settings (grid, k, seed, metric, nested) and every member's cache entry
(tagger, version, parameter hash, training corpus), so a change to any member
makes a new entry. An ensemble is named as a member with
``ensemble.<method>:hash=<prefix of its parameter hash>``.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..experiment.cache import EntryKey, PartKey, PredictionCache
from ..experiment.cv import CrossValidation, TaggerSpec
from ..errors import EnsembleDeidError
from ..taggers.prediction import DocumentPrediction
from .base import ENSEMBLE_VERSION

ENSEMBLE_PREFIX = "ensemble."
_ENSEMBLE_SPEC = re.compile(r"ensemble\.([A-Za-z0-9_\-]+)(?::hash=([0-9a-f]{4,16}))?")


class EnsembleNotCached(EnsembleDeidError):
    """No cached entry of the ensemble named (its ``ensemble`` run has not been made)."""


@dataclass
class MemberRun:
    """A member's cached predictions: out-of-fold on the training set, and on the test split."""

    label: str
    entry: EntryKey
    oof: dict[str, DocumentPrediction]
    test: dict[str, DocumentPrediction]
    records: list[dict] = field(default_factory=list)
    # Inference cost, CPU seconds per million tokens (experiment.cost); None:
    # not recorded (an ensemble member, or a part made before times were kept).
    cost: float | None = None


def is_ensemble_spec(text: str) -> bool:
    return text.strip().startswith(ENSEMBLE_PREFIX)


def resolve_members(
    engine: CrossValidation, regular: Sequence[TaggerSpec], ensembles: Sequence[str], order: Sequence[str],
    progress: bool = True, on_corrupt: Callable[[str], None] | None = None,
) -> dict[str, MemberRun]:
    """Run (or reuse) cross-validation for the taggers, read the ensemble
    members from the cache, and return every member in ``order`` (labels)."""
    out: dict[str, MemberRun] = {}
    if regular:
        runs = engine.run(list(regular), progress=progress, on_corrupt=on_corrupt)
        for label, run in runs.items():
            out[label] = MemberRun(label, run.entry, run.oof, run.targets["test"], run.records, run.cost)
    for text in ensembles:
        out[text] = load_ensemble_member(engine, text)
    return {label: out[label] for label in order}


def find_ensemble_entry(cache: PredictionCache, text: str, train_fingerprint: str,
                        members: Sequence[str] | None = None) -> EntryKey:
    """The cached entry ``text`` names. Of several, ``members`` (member
    labels, when the caller has them) picks the one fitted on exactly those:
    an ensemble of other members (another ``fit`` or ``ensemble`` run) is
    not what was asked for, and need not be named by its hash."""
    m = _ENSEMBLE_SPEC.fullmatch(text.strip())
    if not m:
        raise EnsembleDeidError(f"member {text!r}: expected ensemble.<method>[:hash=<hex prefix>]")
    tagger, prefix = ENSEMBLE_PREFIX + m.group(1), m.group(2) or ""
    found = []
    for entry_dir, manifest in cache.entries():
        if (manifest and manifest.get("tagger") == tagger and manifest.get("train_fingerprint") == train_fingerprint
                and str(manifest.get("param_hash", "")).startswith(prefix)):
            found.append((EntryKey(tagger, manifest["version"], manifest["param_hash"], train_fingerprint),
                          ensemble_summary(manifest, entry_dir), manifest.get("members")))
    if not found:
        raise EnsembleNotCached(f"ensemble {text!r}: no cached ensemble of that name for this training set "
                                "(run 'ensemble' first)")
    if len(found) > 1 and members is not None:
        same = [f for f in found if isinstance(f[2], list) and sorted(map(str, f[2])) == sorted(members)]
        found = same if len(same) == 1 else found
    if len(found) > 1:
        candidates = "; ".join(f"hash={e.param_hash}: {summary}" for e, summary, _ in sorted(found, key=lambda f: f[0].param_hash))
        raise EnsembleDeidError(f"ensemble {text!r} is ambiguous: name one with :hash=<prefix>. Cached: {candidates}")
    return found[0][0]


def ensemble_summary(manifest: Mapping[str, Any], entry_dir: Path | None = None) -> str:
    """What tells two cached ensembles of one method apart, in a line: the
    members, the objective the selection maximised, the parameters the user fixed, what
    the selection chose (from the test part's record: the method's defaults
    in the entry's manifest are not what ran) and the date."""
    settings = manifest.get("settings") if isinstance(manifest.get("settings"), dict) else {}
    params = settings.get("params") if isinstance(settings.get("params"), dict) else {}
    fields = [f"members {', '.join(map(str, manifest['members']))}"] if manifest.get("members") else []
    fields.append(f"objective {settings.get('metric', 'f1')}")
    fixed = [k for k in settings.get("fixed") or () if isinstance(k, str)]
    if fixed:
        fields.append("fixed " + ", ".join(f"{k}={_short(params.get(k))}" for k in fixed))
    made = None
    if entry_dir is not None:
        chosen, made = _chosen(entry_dir)
        if chosen:
            fields.append(f"chosen {chosen}")
    if made:
        fields.append(f"made {made}")
    return "; ".join(fields)


def _chosen(entry_dir: Path) -> tuple[str, str | None]:
    """(what the selection chose, when) from the newest test part's record of
    an ensemble entry; ("", None) when it has none that reads."""
    records = sorted(entry_dir.glob("predict-*/all.json"), key=lambda p: p.stat().st_mtime)
    record = PredictionCache._read_json(records[-1], strict=False) if records else None
    selection = (record or {}).get("selection")
    if not isinstance(selection, dict):
        return "", None
    best = dict(selection.get("best_params") or {})
    point = best.pop("operating_point", None)
    shown = [f"{k}={_short(v)}" for k, v in sorted(best.items())]
    if selection.get("threshold") is not None:  # pruned voting: its own search
        shown.append(f"t={selection['threshold']}")
    if isinstance(selection.get("subset"), list) and isinstance(selection.get("members"), list):
        shown.append(f"{len(selection['subset'])} of {len(selection['members'])} members")
    if selection.get("trusted") and selection.get("trust") is not None and "trust" not in best:
        shown.append(f"trust {_short(selection['trust'])}")
    point = point or selection.get("category_thresholds")
    if point:
        shown.append(f"operating point {_short(point)}")
    made = time.strftime("%Y-%m-%d %H:%M", time.localtime(records[-1].stat().st_mtime))
    return ", ".join(shown) or "(nothing to choose)", made


def _short(value: Any) -> str:
    """A parameter value in a few characters: floats to 4 significant digits."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return str(value)


def locate_ensemble(engine: CrossValidation, text: str, oof: bool = True,
                    members: Sequence[str] | None = None) -> tuple[EntryKey, list[PartKey]]:
    """The cached entry ``text`` names and the parts ``load_ensemble_member``
    reads, checked (nothing read): an EnsembleDeidError when there is no such
    entry or a part is missing or corrupt."""
    entry = find_ensemble_entry(engine.cache, text, engine.train_fingerprint, members)
    parts = [PartKey.fold(entry, engine.folds.fingerprint, f) for f in range(engine.k)] if oof else []
    parts.append(PartKey.predict(entry, engine.target_fingerprints["test"]))
    missing = [p for p in parts if engine.cache.part_status(p) != "valid"]
    if missing:
        if not oof:
            raise EnsembleDeidError(f"system {text!r}: its cached test predictions are missing or corrupt; "
                                    "rerun 'ensemble'")
        raise EnsembleDeidError(
            f"ensemble {text!r}: {len(missing)} cached part(s) missing or corrupt for these folds "
            f"(e.g. {missing[0].kind}-{missing[0].scope}/{missing[0].name}); rerun 'ensemble' with the "
            "same --folds and --seed, without --no-oof"
        )
    return entry, parts


def load_ensemble_member(engine: CrossValidation, text: str, oof: bool = True,
                         members: Sequence[str] | None = None) -> MemberRun:
    """A cached ensemble's predictions: out-of-fold on the training set and on
    the test split, or (``oof=False``) the test split only, so that ``--no-oof``
    ensembles can be compared too (``members``: see ``find_ensemble_entry``)."""
    entry, parts = locate_ensemble(engine, text, oof, members)
    run = MemberRun(text, entry, {}, {})
    for part in parts:
        preds, record = engine.cache.read_part(part)
        run.records.append(record)
        (run.oof if part.kind == "oof" else run.test).update(preds)
    return run


def ensemble_entry(method: str, settings: Mapping[str, Any], members: Mapping[str, MemberRun],
                   train_fingerprint: str) -> EntryKey:
    blob = json.dumps({
        "method": method, "settings": settings,
        "members": [[label, m.entry.tagger, m.entry.version, m.entry.param_hash, m.entry.train_fingerprint]
                    for label, m in members.items()],
    }, sort_keys=True, default=str)
    return EntryKey(ENSEMBLE_PREFIX + method, ENSEMBLE_VERSION, hashlib.sha256(blob.encode()).hexdigest()[:16],
                    train_fingerprint)


def member_test_checksums(runs: Mapping[str, MemberRun], test_fingerprint: str) -> dict[str, str | None]:
    """Each member's cached test part, by the checksum of its predictions:
    the key names the members' entries, not what their test parts hold, so
    a test part computed again (deleted, corrupt, a kept model) would leave
    the ensemble's cached test predictions stale without this."""
    return {label: next((r.get("npz_sha256") for r in run.records
                         if r.get("kind") == "predict" and r.get("scope") == test_fingerprint), None)
            for label, run in runs.items()}


def ensemble_parts(engine: CrossValidation, entry: EntryKey) -> tuple[PartKey, list[PartKey]]:
    """(test part, out-of-fold parts)."""
    return (PartKey.predict(entry, engine.target_fingerprints["test"]),
            [PartKey.fold(entry, engine.folds.fingerprint, f) for f in range(engine.k)])


def part_metadata(label: str, params: Mapping[str, Any], seconds: float, extra: Mapping[str, Any] | None = None) -> dict:
    return {"tagger_label": label, "params": {k: jsonable(v) for k, v in params.items()},
            "seconds": round(seconds, 4), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **(extra or {})}


def jsonable(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)
