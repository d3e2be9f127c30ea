"""A cached run's inference cost: CPU seconds per million tokens predicted.

Every part the cache holds records how long its prediction took
(``predict_seconds``, wall clock, and from this version on
``predict_cpu_seconds``, the process's CPU time) and how many tokens it
predicted (``tokens``). A tagger's cost is the time of all its parts over all
their tokens: out-of-fold parts and the test part together, so one slow or
fast part weighs by its size. CPU time is preferred where a part recorded it;
older and published parts recorded wall time only: ``cv`` limits each job to
cores/jobs threads, so with one thread a job the wall time is its CPU time
when it had a core to itself, and more (an upper bound) when jobs shared the
cores.

A tagger whose parts recorded no prediction time (an entry made before the
cache recorded it) is **re-measured**: fitted on the training documents of
fold 0 and timed predicting fold 0 (:func:`measure_cost`); the measurement is
kept, checksummed, in ``ROOT/costs/`` of the workspace cache so that it is
made once per entry.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..files import private_dir, write_private
from .cache import EntryKey, PredictionCache, _record_checksum

PER_TOKENS = 1_000_000  # costs are per million tokens
COSTS_DIR = "costs"


def part_cpu_seconds(record: Mapping) -> float | None:
    """The prediction time a part's record holds: CPU seconds, else wall seconds; None if neither."""
    for key in ("predict_cpu_seconds", "predict_seconds"):
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return None


def inference_cost(records: Iterable[Mapping]) -> float | None:
    """CPU seconds per million tokens over the parts that recorded a
    prediction time and predicted some tokens; None when none did."""
    seconds = tokens = 0.0
    for record in records:
        spent, n = part_cpu_seconds(record), record.get("tokens")
        if spent is None or not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            continue
        seconds += spent
        tokens += n
    return PER_TOKENS * seconds / tokens if tokens else None


def format_cost(cost: float | None) -> str:
    """A cost for tables: ``12.3`` (CPU s per million tokens), ``-`` when unknown."""
    return "-" if cost is None else f"{cost:,.1f}"


# --- re-measuring ------------------------------------------------------------------

def _cost_path(cache: PredictionCache, entry: EntryKey) -> Path:
    return cache.root / COSTS_DIR / entry.tagger / f"{entry.version}-{entry.param_hash}-{entry.train_fingerprint}.json"


def stored_cost(cache: PredictionCache, entry: EntryKey) -> float | None:
    """A re-measured cost kept for this entry; None when there is none, or
    when the file is damaged or names another entry (it is then measured again)."""
    try:
        record = json.loads(_cost_path(cache, entry).read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if (not isinstance(record, dict) or record.get("record_sha256") != _record_checksum(record)
            or record.get("entry") != [entry.tagger, entry.version, entry.param_hash, entry.train_fingerprint]):
        return None
    return inference_cost([record])


def measure_cost(cache: PredictionCache, entry: EntryKey, tagger, fit_docs: Sequence, predict_docs: Sequence) -> float:
    """Fit ``tagger`` on ``fit_docs``, time its prediction of ``predict_docs``
    (CPU seconds of this process), keep the measurement for the entry and
    return the cost per million tokens."""
    tagger.fit([] if tagger.external else list(fit_docs))
    c0, t0 = time.process_time(), time.perf_counter()
    predictions = tagger.predict(list(predict_docs))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    record = {"entry": [entry.tagger, entry.version, entry.param_hash, entry.train_fingerprint],
              "predict_cpu_seconds": round(cpu, 4), "predict_seconds": round(wall, 4),
              "tokens": int(sum(len(p.tags) for p in predictions)), "documents": len(predictions),
              "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    record["record_sha256"] = _record_checksum(record)
    path = _cost_path(cache, entry)
    private_dir(path.parent)
    write_private(path, json.dumps(record, indent=2, sort_keys=True).encode())
    cost = inference_cost([record])
    if cost is None:
        raise ValueError(f"tagger {entry.tagger}: predicted no token while its cost was measured")
    return cost


__all__ = ["PER_TOKENS", "format_cost", "inference_cost", "measure_cost", "part_cpu_seconds", "stored_cost"]
