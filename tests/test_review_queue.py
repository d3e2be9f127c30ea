"""The review queue file: written owner-only and atomically, read back as
written, and refused (file, line and field named; never a value read) when
edited into anything else."""
from __future__ import annotations

import json
import os
import random
import stat

import pytest

from ensemble_deid.deid.review import KINDS, QUEUE_VERSION, ReviewError, ReviewItem, read_queue, write_queue

NOTE = "Seen by Dr. Smith on 2012-03-04 at Mercy."
# Hand-placed spans of NOTE: "Smith" [12, 17), "2012-03-04" [21, 31), "Mercy" [35, 40).
ITEMS = [
    ReviewItem("0-1", "note-a", 12, 17, "NAME:DOCTOR", 0.9, "dropped-span", "text", ("crf", "memm")),
    ReviewItem("0-2", "note-a", 21, 31, "DATE:DATE", 0.2, "near-threshold", "phi", ("crf",)),
    ReviewItem("0-3", "note-a", 35, 40, "LOCATION:HOSPITAL", 0.5, "lexical", "text", ()),
]
BUNDLE = "ab" * 32
SECRET = "Smith"  # a value of the note: must never appear in a message


def _write(tmp_path, items=ITEMS, **header):
    path = tmp_path / "review" / "queue.jsonl"
    write_queue(path, items, {"bundle": BUNDLE, "budget": {"items_per_note": 3}, **header})
    return path


def test_round_trip_and_header(tmp_path):
    path = _write(tmp_path)
    queue = read_queue(path, {"note-a": NOTE}, labels=["NAME:DOCTOR", "DATE:DATE", "LOCATION:HOSPITAL"])
    assert queue.items == tuple(ITEMS)
    assert queue.header == {"queue": QUEUE_VERSION, "bundle": BUNDLE, "budget": {"items_per_note": 3}, "items": 3}
    lines = path.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["items"] == 3
    assert json.loads(lines[1]) == {"item": "0-1", "doc": "note-a", "start": 12, "end": 17, "label": "NAME:DOCTOR",
                                    "risk": 0.9, "kind": "dropped-span", "current": "text", "members": ["crf", "memm"]}


def test_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0)
    try:
        path = _write(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_an_empty_queue_is_valid(tmp_path):
    assert read_queue(_write(tmp_path, items=[])).items == ()


def test_writer_refuses_what_the_reader_would(tmp_path):
    with pytest.raises(ReviewError, match="field 'item': duplicate"):
        _write(tmp_path, items=[ITEMS[0], ITEMS[0]])
    with pytest.raises(ReviewError, match="field 'end'"):
        _write(tmp_path, items=[ReviewItem("0-1", "d", 5, 5, "DATE:DATE", 0.5, "lexical", "text")])
    assert not (tmp_path / "review" / "queue.jsonl").exists()


def _edit(tmp_path, line, **changes):
    path = _write(tmp_path)
    lines = path.read_text().splitlines()
    record = json.loads(lines[line - 1])
    for key, value in changes.items():
        if value is ...:
            record.pop(key)
        else:
            record[key] = value
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("line, changes, field", [
    (1, {"queue": 2}, "queue"),
    (1, {"queue": True}, "queue"),
    (1, {"bundle": "not a checksum"}, "bundle"),
    (1, {"budget": [1]}, "budget"),
    (1, {"items": 4}, "items"),
    (1, {"items": -1}, "items"),
    (2, {"item": "Smith"}, "item"),
    (3, {"item": "0-1"}, "item"),
    (2, {"doc": 7}, "doc"),
    (2, {"doc": ...}, "doc"),
    (2, {"start": -1}, "start"),
    (2, {"start": "12"}, "start"),
    (2, {"start": 12.0}, "start"),
    (2, {"end": 12}, "end"),
    (2, {"end": True}, "end"),
    (2, {"label": "Smith"}, "label"),
    (2, {"label": "NAME:DOCTOR:Smith"}, "label"),
    (2, {"risk": 1.5}, "risk"),
    (2, {"risk": -0.1}, "risk"),
    (2, {"risk": "0.5"}, "risk"),
    (2, {"risk": True}, "risk"),
    (2, {"kind": "Smith"}, "kind"),
    (2, {"kind": ["lexical"]}, "kind"),
    (2, {"current": "masked"}, "current"),
    (2, {"members": "crf"}, "members"),
    (2, {"members": ["crf", 3]}, "members"),
])
def test_each_field_is_checked(tmp_path, line, changes, field):
    path = _edit(tmp_path, line, **changes)
    with pytest.raises(ReviewError) as err:
        read_queue(path)
    message = str(err.value)
    assert f"line {line}: field {field!r}" in message
    assert str(path) in message and SECRET not in message


def test_nan_risk_is_refused(tmp_path):
    path = _write(tmp_path)
    path.write_text(path.read_text().replace('"risk": 0.9', '"risk": NaN'))
    with pytest.raises(ReviewError, match="line 2: field 'risk'"):
        read_queue(path)


def test_offsets_are_checked_against_the_notes(tmp_path):
    path = _write(tmp_path)
    with pytest.raises(ReviewError, match=r"line 4: field 'end': item 0-3: beyond the end of its note \(39"):
        read_queue(path, {"note-a": NOTE[:-2]})
    with pytest.raises(ReviewError, match="line 2: field 'doc': item 0-1: no such note"):
        read_queue(path, {"note-b": NOTE})
    with pytest.raises(ReviewError, match="line 4: field 'label': item 0-3: not one of the bundle's labels"):
        read_queue(path, labels=["NAME:DOCTOR", "DATE:DATE"])


def test_unknown_fields_are_ignored(tmp_path):
    path = _edit(tmp_path, 2, tokens=3)
    assert read_queue(path).items[0] == ITEMS[0]


@pytest.mark.parametrize("content, what", [
    (b"", "empty"), (b"\xff\xfe", "not valid UTF-8"), (b'{"queue": 1', "line 1: not valid JSON"),
    (b"[1]\n", "line 1: not a JSON object"), (b"[" * 100000 + b"\n", "line 1"),
])
def test_unreadable_files(tmp_path, content, what):
    path = tmp_path / "queue.jsonl"
    path.write_bytes(content)
    with pytest.raises(ReviewError, match=what):
        read_queue(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ReviewError, match="queue.jsonl: cannot read"):
        read_queue(tmp_path / "queue.jsonl")


def test_fuzz_random_edits_give_a_review_error_or_a_valid_queue(tmp_path):
    """Random byte and value edits: every outcome is a queue whose items pass
    the checks, or a ReviewError without a note's words; never another exception."""
    rng = random.Random(49)
    original = _write(tmp_path).read_bytes()
    values = [SECRET, -1, 0, 10 ** 12, 1.5, None, True, [], {}, "0-1", "x" * 2000, "NAME:DOCTOR", KINDS[1], "phi"]
    path = tmp_path / "fuzz.jsonl"
    outcomes = {"ok": 0, "error": 0}
    for _ in range(400):
        data = bytearray(original)
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 4)):
                op, pos = rng.random(), rng.randrange(len(data))
                if op < 0.4:
                    data[pos] = rng.randrange(256)
                elif op < 0.7:
                    del data[pos:pos + rng.randint(1, 20)]
                else:
                    data[pos:pos] = rng.choice([b"Smith", b"\n", b"{", b"\x00", b'"', b"\xc3"])
        else:
            lines = data.decode().splitlines()
            n = rng.randrange(len(lines))
            record = json.loads(lines[n])
            key = rng.choice(sorted(record) + ["extra"])
            record[key] = rng.choice(values)
            lines[n] = json.dumps(record)
            data = bytearray(("\n".join(lines) + "\n").encode())
        path.write_bytes(bytes(data))
        try:
            queue = read_queue(path, {"note-a": NOTE})
        except ReviewError as exc:
            assert SECRET not in str(exc) and "x" * 50 not in str(exc)
            outcomes["error"] += 1
        else:
            for item in queue.items:
                assert 0 <= item.start < item.end <= len(NOTE) and 0 <= item.risk <= 1
            outcomes["ok"] += 1
    assert outcomes["error"] > 100 and outcomes["ok"] > 10
