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
    out, placed, pos, length = [], [], 0, 0
    for i, span in enumerate(spans):
        out.append(text[pos:span.start])
        length += span.start - pos
        if mode == "tag":
            new = tag_for(span)
        elif mode == "mask":
            new = "".join(c if c.isspace() else "*" for c in text[span.start:span.end])
        else:
            new = replacements[i]
        out.append(new)
        placed.append(Annotation(length, length + len(new), span.category, span.type))
        length += len(new)
        pos = span.end
    out.append(text[pos:])
    return "".join(out), placed


def marked(text: str, placed: Sequence[Annotation]) -> str:
    """``text`` with each of the ``placed`` spans between ``[[`` and ``]]``."""
    out, pos = [], 0
    for span in sorted(placed, key=lambda a: a.start):
        out += [text[pos:span.start], MARK_OPEN, text[span.start:span.end], MARK_CLOSE]
        pos = span.end
    out.append(text[pos:])
    return "".join(out)
