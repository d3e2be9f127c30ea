"""BRAT standoff: ``NAME.txt`` with ``NAME.ann`` beside it.

Only text-bound annotations (``T`` lines) carry PHI; attributes, relations and
notes are ignored. BRAT gives a subtype only, so the parent category comes
from a known scheme (i2b2, MEDDOCAN) or from a label map.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from ..document import Annotation, Document
from ...errors import ERROR, WARNING, Problem
from .i2b2 import overlap_problems
from .schemes import KNOWN_PARENTS


def read_brat(
    txt_path: str | Path,
    parents: Mapping[str, str] | None = None,
) -> tuple[Document | None, list[Problem]]:
    txt_path = Path(txt_path)
    ann_path = txt_path.with_suffix(".ann")
    parents = {**KNOWN_PARENTS, **(parents or {})}
    problems: list[Problem] = []
    try:
        raw = txt_path.read_bytes()
    except OSError as exc:
        return None, [Problem(ERROR, str(txt_path), f"cannot read file ({exc.strerror})")]
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
        try:
            ann_text = ann_path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, problems + [Problem(ERROR, str(ann_path), f"not valid UTF-8 (bad byte at offset {exc.start})")]
        seen: set[str] = set()
        # Only "\n" (or "\r\n") ends a line: str.splitlines() would also break
        # at U+2028, U+0085, form feeds... that can sit inside a covered text.
        for lineno, line in enumerate(ann_text.split("\n"), 1):
            line = line.removesuffix("\r")
            if not line.startswith("T"):
                continue
            ann = _parse_line(line, lineno, text, str(ann_path), parents, problems)
            if ann is None:
                continue
            if ann.id in seen:
                problems.append(Problem(WARNING, str(ann_path), "duplicate annotation id", tag=ann.id, field="id"))
            seen.add(ann.id)
            annotations.append(ann)
    problems.extend(overlap_problems(annotations, str(ann_path)))
    if any(p.severity == ERROR for p in problems):
        return None, problems
    meta = {"source": str(txt_path), "format": "brat"}
    return Document(txt_path.stem, text, annotations, meta), problems


def _parse_line(line, lineno, text, file, parents, problems) -> Annotation | None:
    parts = line.split("\t", 2)  # the covered text (third field) may itself hold tabs
    tag_id = parts[0] if parts[0] else f"line {lineno}"
    if len(parts) < 2:
        problems.append(Problem(ERROR, file, f"line {lineno}: expected 'ID<TAB>TYPE START END<TAB>TEXT'", tag=tag_id))
        return None
    fields = parts[1].split(" ")
    if ";" in parts[1]:
        problems.append(Problem(ERROR, file, f"line {lineno}: discontinuous spans are not supported", tag=tag_id, field="offsets"))
        return None
    if len(fields) != 3:
        problems.append(Problem(ERROR, file, f"line {lineno}: expected TYPE START END", tag=tag_id, field="offsets"))
        return None
    type_, s, e = fields
    try:
        start, end = int(s), int(e)
    except ValueError:
        problems.append(Problem(ERROR, file, f"line {lineno}: offsets are not integers", tag=tag_id, field="offsets"))
        return None
    if not (0 <= start < end <= len(text)):
        problems.append(Problem(
            ERROR, file, f"line {lineno}: offsets [{start}, {end}) out of range for a text of {len(text)} characters",
            tag=tag_id, field="offsets",
        ))
        return None
    covered = parts[2] if len(parts) > 2 else None
    if covered is not None and covered != text[start:end]:
        problems.append(Problem(ERROR, file, f"line {lineno}: text differs from the document slice at its offsets", tag=tag_id, field="text"))
        return None
    type_ = type_.upper()
    category = parents.get(type_)
    if category is None:
        category = "OTHER"
        problems.append(Problem(WARNING, file, f"line {lineno}: type {type_} has no known parent category; using OTHER (give a label map)", tag=tag_id, field="type"))
    return Annotation(start, end, category, type_, covered, tag_id)
