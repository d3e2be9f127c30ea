"""Corpus fingerprints: change with any id, text or annotation, not with order."""
from __future__ import annotations

import ensemble_deid.corpus.fingerprint as fingerprint_module
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.corpus.fingerprint import corpus_fingerprint, document_fingerprint

from .tiny_corpus import tiny_corpus


def _corpus():
    return tiny_corpus(6, seed=3)


def _replace(docs, i, doc):
    return docs[:i] + [doc] + docs[i + 1:]


def test_stable_and_short():
    a, b = corpus_fingerprint(_corpus()), corpus_fingerprint(_corpus())
    assert a == b
    assert len(a) == 16 and int(a, 16) >= 0


def test_unchanged_by_document_order():
    docs = _corpus()
    assert corpus_fingerprint(docs) == corpus_fingerprint(list(reversed(docs)))
    assert corpus_fingerprint(docs) == corpus_fingerprint(docs[3:] + docs[:3])


def test_changes_when_a_text_changes():
    docs = _corpus()
    d = docs[2]
    changed = Document(d.id, d.text[:-1] + "!", d.annotations, d.metadata)
    assert corpus_fingerprint(_replace(docs, 2, changed)) != corpus_fingerprint(docs)


def test_changes_when_an_annotation_changes():
    docs = _corpus()
    d = docs[1]
    base = corpus_fingerprint(docs)
    first = d.annotations[0]
    variants = [
        d.annotations[1:],  # removed
        (Annotation(first.start, first.end + 1, first.category, first.type),) + d.annotations[1:],  # offsets
        (Annotation(first.start, first.end, first.category, "OTHERTYPE"),) + d.annotations[1:],  # type
        (Annotation(first.start, first.end, "OTHER", first.type),) + d.annotations[1:],  # category
        d.annotations + (Annotation(0, 1, "NAME", "PATIENT"),),  # added
    ]
    prints = {corpus_fingerprint(_replace(docs, 1, d.with_annotations(v))) for v in variants}
    assert base not in prints and len(prints) == len(variants)


def test_changes_when_an_id_changes_or_a_document_goes():
    docs = _corpus()
    d = docs[0]
    renamed = Document(d.id + "x", d.text, d.annotations, d.metadata)
    assert corpus_fingerprint(_replace(docs, 0, renamed)) != corpus_fingerprint(docs)
    assert corpus_fingerprint(docs[1:]) != corpus_fingerprint(docs)
    assert corpus_fingerprint(docs + docs[:1]) != corpus_fingerprint(docs)


def test_ignores_metadata_and_annotation_text():
    d = _corpus()[0]
    same = Document(d.id, d.text, [Annotation(a.start, a.end, a.category, a.type) for a in d.annotations],
                    {"source": "/elsewhere", "group": "zzz"})
    assert document_fingerprint(same) == document_fingerprint(d)


def test_id_and_text_boundary_is_unambiguous():
    assert document_fingerprint(Document("ab", "c")) != document_fingerprint(Document("a", "bc"))


def test_extra_parts_and_tokenizer_version_count(monkeypatch):
    docs = _corpus()
    base = corpus_fingerprint(docs)
    assert corpus_fingerprint(docs, extra=["labelmap:x"]) != base
    assert corpus_fingerprint(docs, extra=["labelmap:x"]) != corpus_fingerprint(docs, extra=["labelmap:y"])
    monkeypatch.setattr(fingerprint_module, "TOKENIZER_VERSION", "some-other-tokenizer")
    assert corpus_fingerprint(docs) != base


def test_empty_corpus_has_a_fingerprint():
    assert corpus_fingerprint([]) == corpus_fingerprint([])
    assert corpus_fingerprint([]) != corpus_fingerprint(_corpus()[:1])
