"""A note's text with its PHI spans replaced: ``tag``, ``mask`` or ``surrogate``.

In surrogate mode a reader cannot tell a real name the tagger missed from a
surrogate, so a run can also keep a reviewable copy (``marked``) where
every replaced span stands between ``[[`` and ``]]``, and the offsets of the
replacements in the de-identified text (``redact_spans``)."""
from __future__ import annotations

from typing import Sequence

from ..corpus.document import Annotation, Document

MODES = ("tag", "mask", "surrogate")
MARK_OPEN, MARK_CLOSE = "[[", "]]"


def tag_for(span: Annotation) -> str:
    """``[DATE]`` when the type repeats the category, else ``[NAME:PATIENT]``."""
    return f"[{span.category}]" if span.type == span.category else f"[{span.category}:{span.type}]"


def redact(document: Document, spans: Sequence[Annotation], mode: str = "tag", surrogates=None) -> str:
    """``tag``: the label in brackets; ``mask``: every non-space character
    becomes ``*`` (line breaks and lengths kept); ``surrogate``: realistic
    replacements from ``surrogates`` (a :class:`~.surrogate.Surrogator`)."""
    return redact_spans(document, spans, mode, surrogates)[0]


def redact_spans(document: Document, spans: Sequence[Annotation], mode: str = "tag",
                 surrogates=None) -> tuple[str, list[Annotation]]:
    """The redacted text and, for each span (in text order), where its
    replacement lies in that text (same label)."""
    out, placed, length = [], [], 0
    for start, end, new, span in _pieces(document, spans, mode, surrogates):
        if span is not None:
            placed.append(Annotation(length, length + len(new), span.category, span.type))
        out.append(new)
        length += len(new)
    return "".join(out), placed


def pieces(document: Document, spans: Sequence[Annotation], mode: str = "tag",
           surrogates=None) -> list[tuple[int, int, str]]:
    """:func:`redact`'s output as ``(start, end, output)`` pieces covering the
    note in order: the text between spans (output = that text) and each span
    with its replacement, so a part of the output can be shown beside the
    part of the note it comes from (the review page)."""
    return [(start, end, new) for start, end, new, _ in _pieces(document, spans, mode, surrogates)]


def _pieces(document: Document, spans: Sequence[Annotation], mode: str, surrogates):
    """``(start, end, output, span or None)`` covering the note in order."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "surrogate" and surrogates is None:
        from .surrogate import Surrogator

        surrogates = Surrogator()
    text = document.text
    spans = sorted(spans, key=lambda a: (a.start, a.end))
    for before, span in zip(spans, spans[1:]):
        if span.start < before.end:
            raise ValueError(f"document {document.id!r}: overlapping spans at offset {span.start}")
    if mode == "surrogate":  # all at once: one surrogate per string of the note
        replacements = surrogates.replace_spans(document, spans)
    out, pos = [], 0
    for i, span in enumerate(spans):
        if span.start > pos:
            out.append((pos, span.start, text[pos:span.start], None))
        if mode == "tag":
            new = tag_for(span)
        elif mode == "mask":
            new = "".join(c if c.isspace() else "*" for c in text[span.start:span.end])
        else:
            new = replacements[i]
        out.append((span.start, span.end, new, span))
        pos = span.end
    if pos < len(text) or not out:
        out.append((pos, len(text), text[pos:], None))
    return out


def marked(text: str, placed: Sequence[Annotation]) -> str:
    """``text`` with each of the ``placed`` spans between ``[[`` and ``]]``."""
    out, pos = [], 0
    for span in sorted(placed, key=lambda a: a.start):
        out += [text[pos:span.start], MARK_OPEN, text[span.start:span.end], MARK_CLOSE]
        pos = span.end
    out.append(text[pos:])
    return "".join(out)
