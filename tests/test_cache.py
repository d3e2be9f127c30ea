"""The prediction cache: compact round trip, checksums, permissions."""
from __future__ import annotations

import json
import stat

import numpy as np
import pytest

from ensemble_deid.experiment.cache import (
    CorruptPart, EntryKey, PartKey, PredictionCache, decode_predictions, encode_predictions,
)
from ensemble_deid.taggers.prediction import DocumentPrediction

from .tiny_corpus import tiny_corpus


@pytest.fixture
def docs():
    return tiny_corpus(6)


def _gold_predictions(docs, with_conf=True):
    rng = np.random.default_rng(0)
    out = []
    for d in docs:
        p = DocumentPrediction.from_spans(d, d.annotations)
        conf = rng.random(len(p.tags)).astype(np.float32) if with_conf else None
        out.append(DocumentPrediction(p.doc_id, p.tags, conf))
    return out


def _part(tmp_path):
    cache = PredictionCache(tmp_path / "cache")
    entry = EntryKey("memorize", "1", "abc", "trainfp")
    cache.ensure_entry(entry, {"tagger_label": "memorize"})
    return cache, PartKey.fold(entry, "foldsfp", 3)


@pytest.mark.parametrize("with_conf", [True, False])
def test_arrays_round_trip(docs, with_conf):
    preds = _gold_predictions(docs, with_conf)
    arrays = encode_predictions(preds, docs)
    assert arrays["tags"].dtype == np.uint16
    back = decode_predictions(arrays)
    for p in preds:
        assert back[p.doc_id].tags == p.tags
        if with_conf:
            np.testing.assert_array_equal(back[p.doc_id].confidences, p.confidences)
        else:
            assert back[p.doc_id].confidences is None
    # spans are stored too, and match the decoded tags
    n_spans = sum(len(d.annotations) for d in docs)
    assert arrays["spans"].shape == (n_spans, 3)


def test_part_write_read_and_permissions(tmp_path, docs):
    cache, part = _part(tmp_path)
    preds = _gold_predictions(docs)
    cache.write_part(part, preds, docs, {"fit_seconds": 1.5})
    assert cache.part_status(part) == "valid"
    read, record = cache.read_part(part)
    assert [read[p.doc_id].tags for p in preds] == [p.tags for p in preds]
    assert record["fit_seconds"] == 1.5 and record["documents"] == len(docs)
    base = cache.root / part.relpath
    for path in (base.with_suffix(".npz"), base.with_suffix(".json")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for folder in [base.parent, *base.parent.parents]:
        if folder == cache.root:
            break
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert cache.verify() == []


def test_flipped_byte_in_npz_is_detected(tmp_path, docs):
    cache, part = _part(tmp_path)
    cache.write_part(part, _gold_predictions(docs), docs, {})
    npz = (cache.root / part.relpath).with_suffix(".npz")
    data = bytearray(npz.read_bytes())
    data[len(data) // 2] ^= 0x01
    npz.write_bytes(bytes(data))
    assert cache.part_status(part).startswith("corrupt")
    with pytest.raises(CorruptPart, match="checksum mismatch"):
        cache.read_part(part)
    problems = cache.verify()
    assert len(problems) == 1 and problems[0][0] == npz


def test_edited_record_is_detected(tmp_path, docs):
    cache, part = _part(tmp_path)
    cache.write_part(part, _gold_predictions(docs), docs, {"fit_seconds": 1.0})
    rec_path = (cache.root / part.relpath).with_suffix(".json")
    record = json.loads(rec_path.read_text())
    record["fit_seconds"] = 2.0
    rec_path.write_text(json.dumps(record))
    with pytest.raises(CorruptPart, match="record checksum"):
        cache.read_part(part)


def test_npz_without_record_is_incomplete(tmp_path, docs):
    cache, part = _part(tmp_path)
    cache.write_part(part, _gold_predictions(docs), docs, {})
    (cache.root / part.relpath).with_suffix(".json").unlink()
    assert cache.part_status(part) == "missing"
    assert "incomplete" in cache.verify()[0][1]


def test_pickled_npz_is_refused(tmp_path, docs):
    """Object arrays (pickle) never load, even with a matching checksum."""
    import hashlib
    import io

    cache, part = _part(tmp_path)
    cache.write_part(part, _gold_predictions(docs), docs, {})
    base = cache.root / part.relpath
    buf = io.BytesIO()
    np.savez(buf, doc_ids=np.array([object()], dtype=object))
    base.with_suffix(".npz").write_bytes(buf.getvalue())
    record = json.loads(base.with_suffix(".json").read_text())
    record["npz_sha256"] = hashlib.sha256(buf.getvalue()).hexdigest()
    from ensemble_deid.experiment.cache import _record_checksum

    record["record_sha256"] = _record_checksum(record)
    base.with_suffix(".json").write_text(json.dumps(record))
    with pytest.raises(CorruptPart, match="malformed"):
        cache.read_part(part)
