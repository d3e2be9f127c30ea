"""BIO encoding of annotations over the common tokens, and decoding back.

Tags are ``O``, ``B-CATEGORY:TYPE`` and ``I-CATEGORY:TYPE``: subtype level and
self-describing, so spans decode without a label schema.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .document import Annotation, Document, split_label
from .tokenize import Tokens

OUTSIDE = "O"


def encode(tokens: Tokens, annotations: Iterable[Annotation]) -> list[str]:
    """One tag per token. A token is tagged when it overlaps a span; where gold
    spans overlap, the earlier (then longer) span keeps its tokens."""
    tags = [OUTSIDE] * len(tokens)
    if not len(tokens):
        return tags
    for ann in sorted(annotations, key=lambda a: (a.start, -a.end)):
        first = int(np.searchsorted(tokens.ends, ann.start, side="right"))
        last = int(np.searchsorted(tokens.starts, ann.end, side="left"))
        if first >= last or any(tags[i] != OUTSIDE for i in range(first, last)):
            continue
        label = ann.label
        tags[first] = "B-" + label
        for i in range(first + 1, last):
            tags[i] = "I-" + label
    return tags


def decode(tokens: Tokens, tags: Sequence[str]) -> list[Annotation]:
    """Spans from tags. An ``I-`` after ``O`` or after another label opens a
    new span (the usual repair), so every tag sequence decodes."""
    if len(tags) != len(tokens):
        raise ValueError(
            f"{len(tags)} tags for {len(tokens)} tokens: predictions are not "
            "on the common tokenization"
        )
    spans: list[Annotation] = []
    current: str | None = None
    begin = 0
    for i, tag in enumerate(tags):
        if tag == OUTSIDE:
            label = None
        elif tag[:2] in ("B-", "I-"):
            label = tag[2:]
        else:
            raise ValueError(f"tag {tag!r} at token {i} is not O, B-* or I-*")
        if current is not None and (label != current or tag[0] == "B"):
            spans.append(_span(tokens, begin, i, current))
            current = None
        if label is not None and current is None:
            current, begin = label, i
    if current is not None:
        spans.append(_span(tokens, begin, len(tags), current))
    return spans


def _span(tokens: Tokens, first: int, stop: int, label: str) -> Annotation:
    category, type_ = split_label(label)
    return Annotation(int(tokens.starts[first]), int(tokens.ends[stop - 1]), category, type_)


def gold_tags(document: Document) -> list[str]:
    return encode(document.tokens, document.annotations)


@dataclass(frozen=True)
class AlignmentReport:
    """How many gold spans the tokenization cannot reproduce exactly."""

    spans: int
    misaligned: int
    lost_to_overlap: int

    @property
    def loss(self) -> float:
        return (self.misaligned + self.lost_to_overlap) / self.spans if self.spans else 0.0


def alignment_loss(documents: Sequence[Document]) -> AlignmentReport:
    """Share of gold spans that do not survive encode -> decode unchanged:
    a boundary inside a token, or a span lost to an overlapping one."""
    spans = misaligned = lost = 0
    for doc in documents:
        toks = doc.tokens
        start_set = set(toks.starts.tolist())
        end_set = set(toks.ends.tolist())
        decoded = {a.key for a in decode(toks, encode(toks, doc.annotations))}
        for ann in doc.annotations:
            spans += 1
            if ann.start not in start_set or ann.end not in end_set:
                misaligned += 1
            elif ann.key not in decoded:
                lost += 1
    return AlignmentReport(spans, misaligned, lost)
