"""The order in which the 2014 i2b2 program walks the documents.

It scores ``list(set(system_ids) & set(gold_ids))``, each id a key of a dict
filled in ``os.listdir`` order, under Python 2. Its macro figures are numpy
means over the documents in that order, and numpy sums floats pairwise, so
the order can change the last printed digit. Python 2 does not randomise
string hashes, so the order is fixed; this module replays it: Python 2.7's
string hash (64-bit build), and its dict and set tables (open addressing,
same probing and growth for both, no deletions here).
"""
from __future__ import annotations

import os
import re
from typing import Iterable, Sequence

_MASK64 = (1 << 64) - 1
_MIN_SIZE = 8
_PERTURB_SHIFT = 5
# 2014 evaluate.py: "XXX-YY<anything>.xml" -> id "XXX-YY"; any other name -> "<stem>-"
_ID_PARSER = re.compile(r"^(\d+)-(\d+)(.*)\.xml")


def py2_str_hash(key: str) -> int:
    """``hash(key)`` of a Python 2.7 byte string (64-bit, no -R)."""
    data = key.encode("utf-8")
    if not data:
        return 0
    x = (data[0] << 7) & _MASK64
    for byte in data:
        x = ((1000003 * x) & _MASK64) ^ byte
    x ^= len(data)
    if x >= 1 << 63:
        x -= 1 << 64
    return -2 if x == -1 else x


class _Table:
    """A Python 2.7 dict/set hash table (keys only: the order is all we need)."""

    def __init__(self) -> None:
        self.slots: list[tuple[int, str] | None] = [None] * _MIN_SIZE
        self.used = 0

    def _place(self, slots: list, h: int, key: str) -> bool:
        mask = len(slots) - 1
        perturb = h & _MASK64
        i = perturb & mask
        while slots[i & mask] is not None:
            if slots[i & mask][1] == key:
                return False
            i = ((i << 2) + i + perturb + 1) & _MASK64
            perturb >>= _PERTURB_SHIFT
        slots[i & mask] = (h, key)
        return True

    def add(self, key: str, h: int | None = None) -> None:
        if not self._place(self.slots, py2_str_hash(key) if h is None else h, key):
            return
        self.used += 1
        if self.used * 3 >= len(self.slots) * 2:  # fill == used: nothing is ever deleted here
            self._resize(self.used * 2 if self.used > 50000 else self.used * 4)

    def _resize(self, minused: int) -> None:
        size = _MIN_SIZE
        while size <= minused:
            size <<= 1
        old, self.slots = self.slots, [None] * size
        for entry in old:  # reinserted in table order
            if entry is not None:
                self._place(self.slots, *entry)

    def entries(self) -> list[tuple[int, str]]:
        return [e for e in self.slots if e is not None]

    def __contains__(self, key: str) -> bool:
        return any(e[1] == key for e in self.entries())


def _table(keys: Iterable[str]) -> _Table:
    t = _Table()
    for k in keys:
        t.add(k)
    return t


def py2_intersection_order(system_ids: Sequence[str], gold_ids: Sequence[str]) -> list[str]:
    """``list(set(dict_s.keys()) & set(dict_g.keys()))`` under Python 2.7,
    where each dict got its keys in the given order."""
    s = _table(k for _, k in _table(system_ids).entries())  # dict.keys() is a list in table order
    g = _table(k for _, k in _table(gold_ids).entries())
    big, small = (g, s) if g.used > s.used else (s, g)  # set_intersection walks the smaller set
    result = _Table()
    big_keys = {k for _, k in big.entries()}
    for h, k in small.entries():
        if k in big_keys:
            result.add(k, h)
    return [k for _, k in result.entries()]


def official_id(file_name: str) -> str:
    """The 2014 program's document id of a file name."""
    m = _ID_PARSER.match(file_name)
    return f"{m.group(1)}-{m.group(2)}" if m else os.path.splitext(file_name)[0] + "-"


def official_document_order(gold_dir, system_dir, scored: Sequence[str], name_of) -> list[str]:
    """The scored documents (ids) in the order the 2014 program walks them.

    ``name_of(id)`` is the file name of a scored document. Files are taken in
    ``os.listdir`` order, as the program takes them; a scored document with
    no system file (``--missing-as-empty``, which the program cannot do)
    counts as a system file listed last."""
    scored_names = {name_of(i): i for i in scored}
    gold_names = [n for n in os.listdir(gold_dir) if n in scored_names]
    system_present = set(os.listdir(system_dir))
    system_names = [n for n in os.listdir(system_dir) if n in scored_names]
    system_names += [n for n in gold_names if n not in system_present]
    by_official = {official_id(n): scored_names[n] for n in gold_names}
    if len(by_official) != len(gold_names):  # two files with one official id: the program would merge them
        return list(scored)
    order = py2_intersection_order([official_id(n) for n in system_names], [official_id(n) for n in gold_names])
    return [by_official[k] for k in order]
