"""BRAT standoff: ``NAME.txt`` with ``NAME.ann`` beside it.

Only text-bound annotations (``T`` lines) carry PHI; attributes, relations and
notes are ignored. BRAT gives a subtype only, so the parent category comes
from a known scheme (i2b2, MEDDOCAN) or from a label map.

A discontinuous span (``T1 NAME 9 19;20 31``) becomes one annotation per
fragment (ids ``T1``, ``T1.2``, ...): the gap between fragments is not PHI.
The optional text field is checked against the offsets as BRAT writes it:
fragments joined by a space, a line break either kept (the field then goes
on over the next lines of the ``.ann`` file) or written as a space.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

from ..document import Annotation, Document
from ...errors import ERROR, WARNING, Problem
from .i2b2 import capped, overlap_problems
from .schemes import KNOWN_PARENTS
from .source import MAX_NOTE_BYTES, read_source

# Ids and types are shown in messages only when shaped like one: a malformed
# line may start with note text (a line without tabs is quoted whole otherwise).
_ID_SHAPE = re.compile(r"T\d{1,12}")
_TYPE_SHAPE = re.compile(r"[A-Za-z0-9_:.-]{1,60}")
_LINE_BREAKS = re.compile(r"\r\n|[\r\n\t]")
_FRAGMENT = re.compile(r"(\d+) (\d+)")
# An offset longer than this is out of range of any text (and int() refuses
# strings of over 4,300 digits with a ValueError): refused before converting.
_MAX_OFFSET_DIGITS = 18
_ANN_LINE = re.compile(r"[TRAENM*#]\d*\t")  # a line that starts an annotation, not a text's continuation


def read_brat(
    txt_path: str | Path,
    parents: Mapping[str, str] | None = None,
) -> tuple[Document | None, list[Problem]]:
    txt_path = Path(txt_path)
    ann_path = txt_path.with_suffix(".ann")
    parents = {**KNOWN_PARENTS, **(parents or {})}
    raw, problems = read_source(txt_path, MAX_NOTE_BYTES, "note")
    if raw is None:
        return None, problems
    try:
        # newline="" semantics: BRAT offsets count every character, CRs included.
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(ERROR, str(txt_path), f"not valid UTF-8 (bad byte at offset {exc.start})")]
    if not text.strip():
        problems.append(Problem(WARNING, str(txt_path), "text is empty"))
    annotations: list[Annotation] = []
    if not ann_path.exists():
        problems.append(Problem(WARNING, str(ann_path), "no .ann file: document has no annotations"))
    else:
        ann_raw, found = read_source(ann_path)
        if ann_raw is None:
            return None, problems + found
        try:
            # utf-8-sig: a byte order mark (Windows editors write one) would
            # otherwise glue onto the first line's id and drop its annotation.
            ann_text = ann_raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            return None, problems + [Problem(ERROR, str(ann_path), f"not valid UTF-8 (bad byte at offset {exc.start})")]
        ids: set[str] = set()
        keys: set[tuple] = set()
        repeated: list[str] = []  # ids of lines repeating an annotation already read (dropped)
        reused: list[str] = []  # ids given to a second, different annotation (kept)
        # Only "\n" (or "\r\n") ends a line: str.splitlines() would also break
        # at U+2028, U+0085, form feeds... that can sit inside a covered text.
        lines = ann_text.split("\n")
        index = 0
        while index < len(lines):
            lineno, line = index + 1, lines[index].removesuffix("\r")
            index += 1
            if not line.startswith("T"):
                continue
            parsed = _parse_line(line, lineno, text, str(ann_path), parents, problems)
            if parsed is None:
                continue
            fragments, covered = parsed
            if covered is not None:
                index, matched = _check_text(fragments, covered, lines, index, text, lineno, str(ann_path), problems)
                if not matched:
                    continue
            for ann in fragments:
                if ann.key in keys:  # the same span and type again: scored once, reported once
                    repeated.append(ann.id)
                    continue
                if ann.id in ids:
                    reused.append(ann.id)
                ids.add(ann.id)
                keys.add(ann.key)
                annotations.append(ann)
        if repeated:
            problems.append(Problem(WARNING, str(ann_path), f"{len(repeated)} annotation(s) repeating an earlier one "
                                    "(same span and type) dropped", tag=repeated[0], field="id"))
        if reused:
            problems.append(Problem(WARNING, str(ann_path), f"{len(reused)} duplicate annotation id(s)", tag=reused[0], field="id"))
    problems.extend(_unknown_type_problems(annotations, parents, str(ann_path)))
    problems.extend(overlap_problems(annotations, str(ann_path)))
    problems = capped(problems)
    if any(p.severity == ERROR for p in problems):
        return None, problems
    meta = {"source": str(txt_path), "format": "brat"}
    return Document(txt_path.stem, text, annotations, meta), problems


def _parse_line(line, lineno, text, file, parents, problems) -> tuple[list[Annotation], str | None] | None:
    """The fragments of one ``T`` line and its text field (None when absent)."""
    parts = line.split("\t", 2)  # the covered text (third field) may itself hold tabs
    tag_id = parts[0] if _ID_SHAPE.fullmatch(parts[0]) else f"line {lineno}"
    if len(parts) < 2:
        problems.append(Problem(ERROR, file, f"line {lineno}: expected 'ID<TAB>TYPE START END<TAB>TEXT'", tag=tag_id))
        return None
    type_, _, offsets = parts[1].partition(" ")
    if not _TYPE_SHAPE.fullmatch(type_) or not offsets:
        problems.append(Problem(ERROR, file, f"line {lineno}: expected TYPE START END", tag=tag_id, field="offsets"))
        return None
    spans = []
    for fragment in offsets.split(";"):
        match = _FRAGMENT.fullmatch(fragment)
        if match is None:
            message = "offsets are not integers" if len(fragment.split(" ")) == 2 else "expected START END for each fragment"
            problems.append(Problem(ERROR, file, f"line {lineno}: {message}", tag=tag_id, field="offsets"))
            return None
        if max(len(match.group(1)), len(match.group(2))) > _MAX_OFFSET_DIGITS:
            problems.append(Problem(ERROR, file, f"line {lineno}: offset of over {_MAX_OFFSET_DIGITS} digits: out of range",
                                    tag=tag_id, field="offsets"))
            return None
        start, end = int(match.group(1)), int(match.group(2))
        if not (0 <= start < end <= len(text)):
            problems.append(Problem(
                ERROR, file, f"line {lineno}: offsets [{start}, {end}) out of range for a text of {len(text)} characters",
                tag=tag_id, field="offsets",
            ))
            return None
        if spans and start < spans[-1][1]:
            problems.append(Problem(ERROR, file, f"line {lineno}: fragments overlap or are out of order", tag=tag_id, field="offsets"))
            return None
        spans.append((start, end))
    type_ = type_.upper()
    category = parents.get(type_, "OTHER")  # an unknown type: counted and reported by read_brat
    covered = parts[2] if len(parts) > 2 else None
    fragments = [
        Annotation(start, end, category, type_, text[start:end] if covered is not None else None,
                   tag_id if k == 0 else f"{tag_id}.{k + 1}")
        for k, (start, end) in enumerate(spans)
    ]
    return fragments, covered


def _unknown_type_problems(annotations, parents, file) -> list[Problem]:
    """One warning per file for the types no scheme or label map gives a
    parent: counts and the first tag id, never the type names (a word in
    the type column may be PHI typed in the wrong place)."""
    unknown = [a for a in annotations if a.type not in parents]
    if not unknown:
        return []
    types = len({a.type for a in unknown})
    return [Problem(WARNING, file, f"{len(unknown)} annotation(s) of {types} type(s) with no known parent category "
                                   "(names not shown); filed under OTHER (give a label map)",
                    tag=unknown[0].id, field="type")]


def _check_text(fragments, covered, lines, index, text, lineno, file, problems) -> tuple[int, bool]:
    """Check a text field against the fragments' text; a field that stops at a
    line break of the span goes on over the next lines of the .ann file.
    Returns the index of the next line to read and whether the text matched."""
    wanted = _LINE_BREAKS.sub(" ", " ".join(text[a.start:a.end] for a in fragments)).rstrip(" ")
    got = _LINE_BREAKS.sub(" ", covered)
    while (got.rstrip(" ") != wanted and wanted.startswith(got + " ") and index < len(lines)
           and not _ANN_LINE.match(lines[index])):
        got = _LINE_BREAKS.sub(" ", f"{got}\n{lines[index]}")
        index += 1
    if got.rstrip(" ") != wanted:
        problems.append(Problem(ERROR, file, f"line {lineno}: text differs from the document slice at its offsets",
                                tag=fragments[0].id, field="text"))
        return index, False
    return index, True
