"""Spans to and from the formats other NLP tools read: CoNLL (BIO per token),
JSONL (character offsets) and spaCy ``DocBin``.

* CoNLL: ``-DOCSTART- DOC_ID`` opens each document; then one ``TOKEN<TAB>TAG``
  line per token (tags ``O``, ``B-CATEGORY:TYPE``, ``I-CATEGORY:TYPE``, as
  ``corpus/bio.py`` writes them), a blank line after each sentence. Token
  level: a span edge inside a token moves to the token's edge (``corpus
  show`` reports how many gold spans that changes).
* JSONL: one document a line, ``{"id", "text", "spans": [{"start", "end",
  "category", "type"}]}``: exact offsets, and the text.
* DocBin (spaCy, optional): one ``Doc`` per document, spans as entities
  labelled ``CATEGORY:TYPE`` (snapped out to spaCy's tokens, ``alignment_mode=
  "expand"``; a span that then overlaps an earlier one is left out), the
  document id in ``doc.user_data["id"]``. For exact offsets use JSONL.

Importing CoNLL needs the documents' texts: each token is found in the text
after the previous one, so any tokenization whose tokens are substrings of
the text in order imports; a tag with a category alone (``B-NAME``) gets the
category as its type (``NAME:NAME``). Errors name the file, the document and the token
number, never a token or the text.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ...errors import CorpusError
from ..bio import decode, encode
from ..document import Annotation, Document
from ..tokenize import Tokens

DOCSTART = "-DOCSTART-"
EXPORT_FORMATS = ("conll", "jsonl", "docbin")


def to_conll(documents: Iterable[Document]) -> str:
    out: list[str] = []
    for doc in documents:
        if any(c.isspace() for c in doc.id):
            raise CorpusError(f"document {doc.id!r}: an id with white space cannot be written to CoNLL")
        toks = doc.tokens
        tags = encode(toks, doc.annotations)
        out.append(f"{DOCSTART} {doc.id}\n")
        for first, stop in toks.sentences():
            out += [f"{toks.words[i]}\t{tags[i]}" for i in range(first, stop)]
            out.append("")
    return "\n".join(out) + ("\n" if out else "")


def read_conll(path: str | Path) -> dict[str, list[tuple[str, str]]]:
    """Document id -> its (token, tag) pairs, from a CoNLL file as written by
    ``to_conll`` (or any two-or-more-column file with the tag last and a
    ``-DOCSTART- ID`` line per document)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({type(exc).__name__})") from None
    docs: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for number, line in enumerate(lines, 1):
        if line.startswith(DOCSTART):
            parts = line.split()
            if len(parts) < 2:
                raise CorpusError(f"{path}, line {number}: {DOCSTART} without a document id")
            if parts[1] in docs:
                raise CorpusError(f"{path}, line {number}: document {parts[1]!r} appears twice")
            current = docs[parts[1]] = []
            continue
        if not line.strip():
            continue
        if current is None:
            raise CorpusError(f"{path}, line {number}: a token before the first {DOCSTART} line")
        cells = line.split("\t") if "\t" in line else line.split()
        if len(cells) < 2:
            raise CorpusError(f"{path}, line {number}: expected a token and a tag")
        current.append((cells[0], cells[-1]))
    return docs


def conll_spans(path: str | Path, documents: Sequence[Document]) -> dict[str, list[Annotation]]:
    """The spans of a CoNLL file on the given documents (matched by id)."""
    path = Path(path)
    by_id = {d.id: d for d in documents}
    found = read_conll(path)
    unknown = sorted(set(found) - set(by_id))
    if unknown:
        raise CorpusError(f"{path}: {len(unknown)} document(s) not in the corpus split, e.g. {unknown[0]!r}")
    spans = {}
    for doc_id, pairs in found.items():
        text = by_id[doc_id].text
        starts, ends, cursor = [], [], 0
        for k, (token, _) in enumerate(pairs):
            at = text.find(token, cursor)
            if at < 0 or text[cursor:at].strip():
                raise CorpusError(f"{path}: document {doc_id!r}, token {k + 1}: not found in the text after "
                                  "the previous token (is this the corpus the file was made on?)")
            starts.append(at)
            ends.append(at + len(token))
            cursor = at + len(token)
        tokens = Tokens(tuple(t for t, _ in pairs), np.asarray(starts, dtype=np.int32),
                        np.asarray(ends, dtype=np.int32), np.zeros(len(pairs), dtype=np.int32))
        try:
            spans[doc_id] = decode(tokens, [_typed(tag) for _, tag in pairs])
        except ValueError as exc:
            raise CorpusError(f"{path}: document {doc_id!r}: {exc}") from None
    return spans


def _typed(tag: str) -> str:
    """``B-NAME`` (a category alone, as most tools write) -> ``B-NAME:NAME``:
    the type repeats the category, as i2b2's DATE/DATE and AGE/AGE do."""
    if tag[:2] in ("B-", "I-") and ":" not in tag:
        return f"{tag}:{tag[2:]}"
    return tag


def to_jsonl(documents: Iterable[Document]) -> str:
    return "".join(json.dumps({"id": d.id, "text": d.text, "spans": [
        {"start": a.start, "end": a.end, "category": a.category, "type": a.type} for a in d.annotations]},
        ensure_ascii=False) + "\n" for d in documents)


def jsonl_spans(path: str | Path, documents: Sequence[Document]) -> dict[str, list[Annotation]]:
    """The spans of a JSONL file (as ``to_jsonl`` writes it) on the given
    documents; a line's text must equal its document's."""
    path = Path(path)
    by_id = {d.id: d for d in documents}
    spans: dict[str, list[Annotation]] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot read ({type(exc).__name__})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            doc_id = str(record["id"])
            items = [(int(s["start"]), int(s["end"]), str(s["category"]), str(s["type"])) for s in record["spans"]]
        except (ValueError, KeyError, TypeError):
            raise CorpusError(f"{path}, line {number}: expected id, text and spans with start, end, category, type") from None
        doc = by_id.get(doc_id)
        if doc is None:
            raise CorpusError(f"{path}, line {number}: document {doc_id!r} is not in the corpus split")
        if "text" in record and record["text"] != doc.text:
            raise CorpusError(f"{path}, line {number}: the text of document {doc_id!r} differs from the corpus's")
        if doc_id in spans:
            raise CorpusError(f"{path}, line {number}: document {doc_id!r} appears twice")
        if any(not 0 <= s < e <= len(doc.text) for s, e, _, _ in items):
            raise CorpusError(f"{path}, line {number}: document {doc_id!r} has a span off its text")
        spans[doc_id] = [Annotation(s, e, c, t) for s, e, c, t in items]
    return spans


def to_docbin(documents: Iterable[Document]) -> bytes:
    """A spaCy DocBin (needs spaCy: ``pip install spacy``)."""
    try:
        import spacy
        from spacy.tokens import DocBin
    except ImportError:
        raise CorpusError("the docbin format needs spaCy (pip install spacy)") from None
    nlp = spacy.blank("xx")
    bin_ = DocBin(store_user_data=True)
    for d in documents:
        doc = nlp.make_doc(d.text)
        ents = []
        for a in sorted(d.annotations, key=lambda a: (a.start, -a.end)):
            span = doc.char_span(a.start, a.end, label=a.label, alignment_mode="expand")
            if span is not None and all(span.start >= e.end or span.end <= e.start for e in ents):
                ents.append(span)
        doc.ents = ents
        doc.user_data["id"] = d.id
        bin_.add(doc)
    return bin_.to_bytes()


def export_documents(documents: Sequence[Document], fmt: str, path: str | Path) -> None:
    """Write documents (their annotations: gold, or predictions set with
    ``with_annotations``) as ``fmt`` to ``path``, owner-only."""
    from ...files import write_private

    writers = {"conll": lambda: to_conll(documents), "jsonl": lambda: to_jsonl(documents),
               "docbin": lambda: to_docbin(documents)}
    if fmt not in writers:
        raise CorpusError(f"unknown format {fmt!r}; expected one of {', '.join(EXPORT_FORMATS)}")
    write_private(path, writers[fmt]())


def import_spans(path: str | Path, documents: Sequence[Document]) -> dict[str, list[Annotation]]:
    """Spans from a CoNLL (``.conll``, ``.txt``) or JSONL (``.jsonl``) file."""
    path = Path(path)
    return jsonl_spans(path, documents) if path.suffix == ".jsonl" else conll_spans(path, documents)
