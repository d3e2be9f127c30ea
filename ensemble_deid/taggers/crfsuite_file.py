"""Structural check of a CRFsuite model file before the C library opens it.

CRFsuite trusts its model file: it follows every offset and index in it
without a bounds check, so a truncated or bit-flipped file (a damaged or
edited model bundle) crashes the whole process, or loops for ever in a hash
table with no free bucket. :func:`check_crfsuite_model` reads the same
structures the library reads (CRFsuite 0.12 ``crf1d_model.c`` and
``cqdb.c``, little-endian) and refuses a file in which any offset, count,
index or string would take the library outside the file. Weights are not
checked: any value of them is safe to compute with.

Layout: a 48-byte header (``lCRF``, size, ``FOMC``, version, the numbers of
features, labels and attributes, then the offsets of the feature chunk, the
label and attribute string databases and the label and attribute feature
references); a feature chunk (``FEAT``, size, count, then per feature its
type, source, destination and a double weight); two CQDB string databases
(``CQDB`` header, 256 hash tables of (hash, record offset) buckets, records
of (id, size, NUL-terminated string), a backward id -> record array); two
reference chunks (``LFRF``/``AFRF``, size, count, offsets of (count, feature
ids) lists).
"""
from __future__ import annotations

import numpy as np

from ..errors import EnsembleDeidError

HEADER = np.dtype([("magic", "S4"), ("size", "<u4"), ("type", "S4"), ("version", "<u4"),
                   ("num_features", "<u4"), ("num_labels", "<u4"), ("num_attrs", "<u4"),
                   ("off_features", "<u4"), ("off_labels", "<u4"), ("off_attrs", "<u4"),
                   ("off_labelrefs", "<u4"), ("off_attrrefs", "<u4")])
FEATURE = np.dtype([("type", "<u4"), ("src", "<u4"), ("dst", "<u4"), ("weight", "<f8")])
CQDB_HEADER = 24  # chunk id, size, flag, byte order, backward-array size and offset
CQDB_TABLES = 256
CHUNK = 12  # chunk id, size, count
MAX_LABELS = 100_000  # the library allocates labels x labels matrices


class CRFsuiteModelError(EnsembleDeidError, ValueError):
    """A CRFsuite model file the library must not open (names the file, never a string of it)."""


def check_crfsuite_model(data: bytes, where: str) -> None:
    """Raise :class:`CRFsuiteModelError` (naming ``where``) unless every
    structure of the CRFsuite model ``data`` lies inside it."""
    buf = np.frombuffer(data, dtype=np.uint8)
    size = len(buf)

    def fail(what: str):
        raise CRFsuiteModelError(f"{where}: not a valid CRFsuite model ({what}; the file is damaged or was edited)")

    def u32(offset, count=1) -> np.ndarray:
        offset = np.asarray(offset, dtype=np.int64)
        if np.any(offset < 0) or np.any(offset + 4 * count > size):
            fail("an offset past the end of the file")
        if offset.ndim == 0:
            return np.frombuffer(data, dtype="<u4", count=count, offset=int(offset)).astype(np.int64)
        return (buf[offset] | buf[offset + 1].astype(np.int64) << 8 | buf[offset + 2].astype(np.int64) << 16
                | buf[offset + 3].astype(np.int64) << 24)

    if size < HEADER.itemsize:
        fail("shorter than its header")
    h = np.frombuffer(data, dtype=HEADER, count=1)[0]
    if h["magic"] != b"lCRF" or h["type"] != b"FOMC":
        fail("wrong magic")
    n_labels, n_attrs = int(h["num_labels"]), int(h["num_attrs"])
    if not 0 < n_labels <= MAX_LABELS or n_attrs > size // 9:
        fail("impossible counts")

    off = int(h["off_features"])  # the header's own feature count is left 0 by CRFsuite: the chunk's counts
    if data[off:off + 4] != b"FEAT" or off + CHUNK > size:
        fail("feature chunk")
    n_feat = int(u32(off + 8)[0])
    if off + CHUNK + n_feat * FEATURE.itemsize > size:
        fail("feature chunk")
    feats = np.frombuffer(data, dtype=FEATURE, count=n_feat, offset=off + CHUNK)
    state, trans = feats["type"] == 0, feats["type"] == 1
    if (not np.all(state | trans) or np.any(feats["dst"] >= n_labels) or np.any(feats["src"][trans] >= n_labels)
            or np.any(feats["src"][state] >= n_attrs)):
        fail("a feature out of range")

    for name, off, count in (("label", int(h["off_labels"]), n_labels), ("attribute", int(h["off_attrs"]), n_attrs)):
        _check_cqdb(data, buf, off, count, u32, fail, name)
    for name, off, count, chunk in (("label", int(h["off_labelrefs"]), n_labels, b"LFRF"),
                                    ("attribute", int(h["off_attrrefs"]), n_attrs, b"AFRF")):
        if data[off:off + 4] != chunk:
            fail(f"{name} reference chunk")
        starts = u32(off + CHUNK, count) if count else np.zeros(0, np.int64)
        counts = u32(starts)
        if np.any(starts + 4 + 4 * counts > size) or counts.sum() > size // 4:
            fail(f"{name} references past the end of the file")
        if counts.sum():
            ids = np.repeat(starts + 4 - 4 * np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
            ids += 4 * np.arange(int(counts.sum()))
            if np.any(u32(ids) >= n_feat):
                fail(f"{name} references a missing feature")


def _check_cqdb(data: bytes, buf: np.ndarray, base: int, count: int, u32, fail, name: str) -> None:
    """The string database at ``base``: its buckets, records and backward
    array inside the file, every string NUL-terminated, every id below
    ``count`` (offsets in a CQDB count from its own start)."""
    size = len(buf)
    if base + CQDB_HEADER + 8 * CQDB_TABLES > size or data[base:base + 4] != b"CQDB" or u32(base + 12)[0] != 0x62445371:
        fail(f"{name} string database header")
    bwd_size, bwd_offset = (int(v) for v in u32(base + 16, 2))
    tables = u32(base + CQDB_HEADER, 2 * CQDB_TABLES).reshape(-1, 2)
    if tables[:, 1].sum() * 8 > size:
        fail(f"{name} hash tables larger than the file")
    used = tables[tables[:, 0] != 0]
    t_off, t_num = used[:, 0], used[:, 1]
    if np.any(t_num == 0):
        fail(f"{name} hash table without a free bucket")
    # every bucket's record offset (the second word of each (hash, offset) pair), all tables at once
    first = np.repeat(base + t_off + 4 - 8 * np.concatenate(([0], np.cumsum(t_num)[:-1])), t_num)
    buckets = u32(first + 8 * np.arange(int(t_num.sum()))) if len(first) else np.zeros(0, np.int64)
    free = np.zeros(len(t_num), np.int64)
    np.add.at(free, np.repeat(np.arange(len(t_num)), t_num), buckets == 0)
    if np.any(free == 0):  # a lookup of a missing string would never stop
        fail(f"{name} hash table without a free bucket")
    records = [buckets[buckets != 0]]
    if count and (bwd_offset == 0 or bwd_size < count):
        fail(f"{name} strings missing")
    backward = u32(base + bwd_offset, bwd_size) if bwd_size and bwd_offset else np.zeros(0, np.int64)
    if np.any(backward[:count] == 0):
        fail(f"{name} strings missing")
    records.append(backward[backward != 0])
    offsets = base + np.concatenate(records)
    ids, lengths = u32(offsets), u32(offsets + 4)
    ends = offsets + 8 + lengths
    if np.any(ids >= count) or np.any(lengths == 0) or np.any(ends > size):
        fail(f"a {name} string out of range")
    if np.any(buf[ends - 1] != 0):
        fail(f"a {name} string not terminated")
