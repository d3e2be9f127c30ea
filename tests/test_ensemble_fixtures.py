"""Hand-made fixtures for the ensemble tests, and checks that the candidate
table agrees with bio.decode and the strict scorer.

A fixture document is ``n`` one-letter words ("x x x ..."): token i covers
characters [2i, 2i + 1). Spans are written as (first token, end token, label).
"""
from __future__ import annotations

import random

import numpy as np

from ensemble_deid.corpus.bio import decode
from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.ensemble.candidates import build_candidates, decode_ids, TagVocab
from ensemble_deid.evaluation import Scorer
from ensemble_deid.taggers.prediction import DocumentPrediction

NAME, DATE, CITY = "NAME:PATIENT", "DATE:DATE", "LOCATION:CITY"


def ann(first: int, stop: int, label: str) -> Annotation:
    cat, typ = label.split(":")
    return Annotation(2 * first, 2 * stop - 1, cat, typ)


def doc(doc_id: str, n: int, gold=(), group: str | None = None) -> Document:
    d = Document(doc_id, " ".join(["x"] * n), [ann(*g) for g in gold], {"group": group or doc_id})
    assert len(d.tokens) == n
    return d


def pred(document: Document, spans) -> DocumentPrediction:
    return DocumentPrediction.from_spans(document, [ann(*s) for s in spans])


def members_of(docs, spans_by_member: dict[str, dict[str, list]]):
    """{member: {doc_id: DocumentPrediction}} from {member: {doc_id: spans}}."""
    return {m: {d.id: pred(d, by_doc.get(d.id, [])) for d in docs} for m, by_doc in spans_by_member.items()}


def spans_of(document: Document, prediction: DocumentPrediction) -> set[tuple[int, int, str]]:
    return {((a.start) // 2, (a.end + 1) // 2, a.label) for a in prediction.spans(document)}


def random_case(seed: int, n_docs: int = 6, n_members: int = 4, n_tokens: int = 40):
    """Random documents and members (noisy copies of gold) for property checks."""
    rng = random.Random(seed)
    labels = [NAME, DATE, CITY]
    docs, members = [], {f"m{j}": {} for j in range(n_members)}
    for i in range(n_docs):
        gold, pos = [], 0
        while pos < n_tokens - 3:
            pos += rng.randint(1, 5)
            length = rng.randint(1, 3)
            if pos + length <= n_tokens:
                gold.append((pos, pos + length, rng.choice(labels)))
            pos += length
        d = doc(f"d{i}", n_tokens, gold, group=f"p{i // 2}")
        docs.append(d)
        for j in range(n_members):
            spans = []
            for a, b, lab in gold:
                r = rng.random()
                if r < 0.15 + 0.1 * j:
                    continue  # missed
                if r < 0.3 + 0.1 * j:
                    b = min(n_tokens, b + 1)  # boundary error
                elif r < 0.35 + 0.1 * j:
                    lab = rng.choice(labels)  # type error
                spans.append((a, b, lab))
            if rng.random() < 0.5:
                a = rng.randrange(n_tokens - 2)
                spans.append((a, a + 2, rng.choice(labels)))  # spurious (may overlap: from_spans keeps the first)
            members[f"m{j}"][d.id] = pred(d, spans)
    return docs, members


def test_candidates_decode_like_bio_decode():
    docs, members = random_case(1)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    for j, name in enumerate(names):
        got = set()
        for r in np.flatnonzero(table.votes[:, j]).tolist():
            d = int(table.doc[r])
            base = int(table.tok_base[d])
            got.add((docs[d].id, int(table.first[r]) - base, int(table.stop[r]) - base, table.labels[table.label[r]]))
        want = set()
        for d in docs:
            for a in decode(d.tokens, members[name][d.id].tags):
                want.add((d.id, a.start // 2, (a.end + 1) // 2, a.label))
        assert got == want


def test_decode_ids_repairs_like_bio_decode():
    tags = ["I-A:X", "I-A:X", "B-A:X", "I-B:Y", "O", "I-B:Y", "B-B:Y", "I-B:Y", "I-A:X"]
    vocab = TagVocab()
    ids = vocab.encode(tags)
    labels = vocab.labels()
    first, stop, lab = decode_ids(ids, vocab, {l: i for i, l in enumerate(labels)})
    got = [(int(a), int(b), labels[int(c)]) for a, b, c in zip(first, stop, lab)]
    assert got == [(0, 2, "A:X"), (2, 3, "A:X"), (3, 4, "B:Y"), (5, 6, "B:Y"), (6, 8, "B:Y"), (8, 9, "A:X")]
    # A document boundary inside a run of I- tags splits the span.
    first, stop, _ = decode_ids(ids[:2], vocab, {l: i for i, l in enumerate(labels)}, np.array([1]))
    assert list(zip(first.tolist(), stop.tolist())) == [(0, 1), (1, 2)]


def test_candidate_counts_equal_the_strict_scorer():
    docs, members = random_case(2)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    scorer = Scorer(docs, "strict")
    for j, name in enumerate(names):
        counts = scorer.counts({d.id: members[name][d.id].spans(d) for d in docs})
        assert tuple(table.member_counts()[j]) == (counts.tp.sum(), counts.fp.sum(), counts.fn.sum())


def test_subset_keeps_rows_pairs_and_positions():
    docs, members = random_case(3)
    names = tuple(members)
    table = build_candidates([members[n] for n in names], names, docs)
    sub = table.subset([1, 4])
    direct = build_candidates([members[n] for n in names], names, [docs[1], docs[4]])
    assert np.array_equal(sub.first, direct.first) and np.array_equal(sub.stop, direct.stop)
    assert np.array_equal(sub.votes, direct.votes) and np.array_equal(sub.gold, direct.gold)
    assert all(np.array_equal(x, y) for x, y in zip(sub.pairs, direct.pairs))
    assert np.array_equal(sub.contested, direct.contested)
    assert [d.id for d in sub.documents] == ["d1", "d4"]


def greedy_reference(first, stop, keep, priority):
    """Sequential greedy: by decreasing priority (ties: earlier row), accept
    a kept span unless it overlaps one already accepted."""
    order = sorted(np.flatnonzero(keep).tolist(), key=lambda i: (-priority[i], i))
    accepted: list[int] = []
    for i in order:
        if all(stop[i] <= first[j] or stop[j] <= first[i] for j in accepted):
            accepted.append(i)
    out = np.zeros(len(first), dtype=bool)
    out[accepted] = True
    return out


def test_vectorised_resolution_equals_sequential_greedy():
    from ensemble_deid.ensemble.candidates import resolve_overlaps

    rng = np.random.default_rng(0)
    for seed in range(30):
        docs, members = random_case(seed, n_docs=3, n_members=6, n_tokens=30)
        names = tuple(members)
        table = build_candidates([members[n] for n in names], names, docs)
        k = 5
        keep = rng.random((len(table), k)) < 0.7
        priority = rng.integers(0, 4, size=(len(table), k)).astype(float)  # many ties on purpose
        got = resolve_overlaps(table, keep, priority)
        for c in range(k):
            want = greedy_reference(table.first, table.stop, keep[:, c], priority[:, c])
            assert np.array_equal(got[:, c], want), (seed, c)
        assert np.array_equal(resolve_overlaps(table, keep[:, 0], priority[:, 0]), got[:, 0])


def test_tag_ids_follow_first_appearance_whatever_the_hash_seed():
    import subprocess
    import sys

    tags = ["O", "B-DATE:DATE", "I-DATE:DATE", "O", "B-NAME:DOCTOR", "B-AGE:AGE", "B-NAME:PATIENT", "I-NAME:PATIENT"]
    vocab = TagVocab()
    vocab.encode(tags)
    assert vocab.tags == ["O", "B-DATE:DATE", "I-DATE:DATE", "B-NAME:DOCTOR", "B-AGE:AGE", "B-NAME:PATIENT",
                          "I-NAME:PATIENT"]
    code = ("from ensemble_deid.ensemble.candidates import TagVocab; v = TagVocab(); "
            f"v.encode({tags!r}); print(v.tags)")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2", "3")}
    assert len(outs) == 1
