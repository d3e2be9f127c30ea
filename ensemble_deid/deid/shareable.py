"""Shareable models: trained without the words of few training notes.

A trained model keeps words of its training notes (CRFsuite and Vowpal
Wabbit feature strings, vocabularies), and the words seen in one or two notes
are where a patient's name, street or record number sits. ``fit --shareable
K`` trains on copies of the notes in which every token found in the notes
of fewer than K patients (the ``group`` of a document, else the document
itself) is replaced by its shape (letters ``x``/``X``, digits ``0``: same
length, same tokens, same offsets, so the annotations still fit), and stores
the words kept, so that ``deidentify`` masks new notes the same way before
the model sees them. The model then holds no word of fewer than K patients'
notes; shape, case, length and every frequent neighbour still count.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable, Sequence

from ..corpus.document import Document
from ..corpus.tokenize import Tokens

_LETTER = re.compile(r"[^\W\d_]")


def vocabulary(documents: Iterable[Document], min_documents: int) -> frozenset[str]:
    """The lower-cased tokens found in at least ``min_documents`` documents
    of different patients (a patient's name recurs in all their notes: the
    notes of one patient group count once)."""
    by_patient: dict[str, set[str]] = {}
    for doc in documents:
        by_patient.setdefault(doc.group, set()).update(t.lower() for t in doc.tokens.words)
    counts = Counter(w for words in by_patient.values() for w in words)
    return frozenset(w for w, n in counts.items() if n >= min_documents)


def shape(word: str) -> str:
    return "".join("0" if c.isdigit() else ("X" if c.isupper() else "x") if _LETTER.match(c) else c for c in word)


def masked(doc: Document, words: frozenset[str]) -> Document:
    """``doc`` with every token outside ``words`` replaced by its shape."""
    tokens = doc.tokens
    text = list(doc.text)
    new_words = []
    for word, start, end in zip(tokens.words, tokens.starts, tokens.ends):
        if word.lower() not in words:
            word = shape(word)
            text[start:end] = word
        new_words.append(word)
    copy = Document(doc.id, "".join(text), doc.annotations, doc.metadata)
    copy.__dict__["tokens"] = Tokens(tuple(new_words), tokens.starts, tokens.ends, tokens.sentence_ids)
    return copy


def masked_all(documents: Sequence[Document], words: frozenset[str]) -> list[Document]:
    return [masked(d, words) for d in documents]


def shareable_training(documents: Sequence[Document], min_documents: int) -> tuple[list[Document], dict]:
    """(the training documents masked, the manifest entry that makes
    ``Deidentifier`` mask new notes alike)."""
    words = vocabulary(documents, min_documents)
    return masked_all(documents, words), {"min_documents": min_documents, "words": sorted(words)}


def masker(manifest: dict):
    """The function a bundle's predictions go through first: identity, or the
    masking of a shareable bundle."""
    entry = manifest.get("shareable")
    if not entry:
        return list
    if not (isinstance(entry, dict) and isinstance(entry.get("words"), list)
            and all(isinstance(w, str) for w in entry["words"])):
        from .bundle import BundleError

        raise BundleError("the bundle manifest is malformed (field 'shareable')")
    words = frozenset(entry["words"])
    return lambda documents: masked_all(documents, words)
