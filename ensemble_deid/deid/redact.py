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
        out.append(text[pos:span.start])
        if mode == "tag":
            out.append(tag_for(span))
        elif mode == "mask":
            out.append("".join(c if c.isspace() else "*" for c in text[span.start:span.end]))
        else:
            out.append(replacements[i])
        pos = span.end
    out.append(text[pos:])
    return "".join(out)
