"""A note's text with its PHI spans replaced: ``tag``, ``mask`` or ``surrogate``."""
from __future__ import annotations

from typing import Sequence

from ..corpus.document import Annotation, Document

MODES = ("tag", "mask", "surrogate")


def tag_for(span: Annotation) -> str:
    """``[DATE]`` when the type repeats the category, else ``[NAME:PATIENT]``."""
    return f"[{span.category}]" if span.type == span.category else f"[{span.category}:{span.type}]"


def redact(document: Document, spans: Sequence[Annotation], mode: str = "tag", surrogates=None) -> str:
    """``tag``: the label in brackets; ``mask``: every non-space character
    becomes ``*`` (line breaks and lengths kept); ``surrogate``: realistic
    replacements from ``surrogates`` (a :class:`~.surrogate.Surrogator`)."""
    return "".join(out for _, _, out in pieces(document, spans, mode, surrogates))


def pieces(document: Document, spans: Sequence[Annotation], mode: str = "tag",
           surrogates=None) -> list[tuple[int, int, str]]:
    """:func:`redact`'s output as ``(start, end, output)`` pieces covering the
    note in order: the text between spans (output = that text) and each span
    with its replacement, so a part of the output can be shown beside the
    part of the note it comes from (the review page)."""
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
            out.append((pos, span.start, text[pos:span.start]))
        if mode == "tag":
            out.append((span.start, span.end, tag_for(span)))
        elif mode == "mask":
            out.append((span.start, span.end, "".join(c if c.isspace() else "*" for c in text[span.start:span.end])))
        else:
            out.append((span.start, span.end, replacements[i]))
        pos = span.end
    if pos < len(text) or not out:
        out.append((pos, len(text), text[pos:]))
    return out
