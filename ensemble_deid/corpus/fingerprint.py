"""Content fingerprints (in the spirit of Hugging Face datasets' fingerprints).

A corpus fingerprint covers document ids, texts, annotations and the tokenizer
version: it changes when any of them changes, and every cache entry is keyed
by it.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

from .document import Document
from .tokenize import TOKENIZER_VERSION


def document_fingerprint(doc: Document) -> str:
    h = hashlib.sha256()
    h.update(doc.id.encode())
    h.update(b"\0")
    h.update(doc.text.encode("utf-8", "surrogatepass"))
    h.update(b"\0")
    for a in doc.annotations:
        h.update(f"{a.start},{a.end},{a.category},{a.type};".encode())
    return h.hexdigest()


def corpus_fingerprint(documents: Sequence[Document], extra: Iterable[str] = ()) -> str:
    h = hashlib.sha256(TOKENIZER_VERSION.encode())
    for part in extra:
        h.update(b"\1" + part.encode())
    for fp in sorted(document_fingerprint(d) for d in documents):
        h.update(fp.encode())
    return h.hexdigest()[:16]
