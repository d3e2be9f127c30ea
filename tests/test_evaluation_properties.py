"""Property tests of the evaluation module, and the vectorised engine checked
against the straightforward reimplementation (reference.py) on random data."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.evaluation import ALL, CRITERIA, EvalOptions, Scorer, evaluate
from ensemble_deid.evaluation import reference

WORDS = ["Zoë", "O'Brien", "--", "2014-05-06", "Lopez", "Mass", "General", "age", "95", "45",
         "MR-123", "(555)", "Muñoz", "de", "la", "x", "##", "Hospital", "nurse", "12/03"]
LABELS = [
    ("NAME", "PATIENT"), ("NAME", "DOCTOR"), ("DATE", "DATE"), ("AGE", "AGE"), ("ID", "IDNUM"),
    ("ID", "MEDICALRECORD"), ("LOCATION", "CITY"), ("LOCATION", "HOSPITAL"), ("PROFESSION", "PROFESSION"),
    ("CONTACT", "PHONE"), ("name", "patient"), ("OTHER", "OTHER"),
]
OPTIONS = [EvalOptions(), EvalOptions.no_quirks(),
           EvalOptions(hipaa_all_ages=False, relaxed_many_to_one=True, ascii_token_regex=False)]


def random_corpus(seed: int, n_docs: int = 4, must_have_date: bool = False):
    rng = random.Random(seed)
    gold, system = [], {}
    for d in range(n_docs):
        words = [rng.choice(WORDS) for _ in range(rng.randint(3, 25))]
        text = " ".join(words)
        bounds, pos = [], 0
        for w in words:
            bounds.append((pos, pos + len(w)))
            pos += len(w) + 1
        tags = []
        for _ in range(rng.randint(0, 6)):
            i = rng.randrange(len(bounds))
            j = min(len(bounds) - 1, i + rng.choice([0, 0, 0, 1, 2]))
            s, e = bounds[i][0], bounds[j][1]
            if rng.random() < 0.15:  # cut inside a word
                e = max(s + 1, e - rng.randint(1, 2))
            tags.append(Annotation(s, e, *rng.choice(LABELS)))
        if must_have_date:
            s, e = bounds[0]
            tags.append(Annotation(s, e, "DATE", "DATE"))
        sys_tags = []
        for t in tags:
            r = rng.random()
            if r < 0.45:
                sys_tags.append(t)
            elif r < 0.6:  # move the end a little
                e = min(len(text), max(t.start + 1, t.end + rng.randint(-3, 3)))
                sys_tags.append(Annotation(t.start, e, t.category, t.type))
            elif r < 0.7:
                sys_tags.append(Annotation(t.start, t.end, *rng.choice(LABELS)))
            elif r < 0.8:  # several ends at once: set collapse and absorption
                for k in rng.sample([-2, -1, 1, 2, 3], 2):
                    e = min(len(text), max(t.start + 1, t.end + k))
                    sys_tags.append(Annotation(t.start, e, t.category, t.type))
            elif r < 0.9:
                s = min(t.end - 1, t.start + 1)
                sys_tags.append(Annotation(s, t.end, t.category, t.type))
        for _ in range(rng.randint(0, 2)):  # spurious
            s = rng.randrange(len(text) - 1)
            sys_tags.append(Annotation(s, rng.randint(s + 1, min(len(text), s + 8)), *rng.choice(LABELS)))
        gold.append(Document(f"doc{d:02d}", text, tags))
        system[f"doc{d:02d}"] = sys_tags
    return gold, system


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), which=st.sampled_from(range(len(OPTIONS))))
def test_engine_matches_reference_on_every_criterion(seed, which):
    options = OPTIONS[which]
    gold, system = random_corpus(seed)
    report = evaluate(gold, system, criteria=list(CRITERIA), options=options)
    for name, crit in CRITERIA.items():
        rows = reference.corpus_counts(gold, system, crit, options)
        got = report[name].documents
        assert list(zip(got.tp.tolist(), got.fp.tolist(), got.fn.tolist())) == rows, name
        ref = reference.micro_macro(rows)
        assert report[name].micro.precision == pytest.approx(ref["micro"][0]), name
        assert report[name].micro.f1 == pytest.approx(ref["micro"][2]), name
        assert report[name].macro.precision == pytest.approx(ref["macro_p"][0]), name
        assert report[name].macro.recall_sd == pytest.approx(ref["macro_r"][1]), name
    leak = report.leak.overall
    assert (leak.tokens, leak.leaked_tokens, leak.chars, leak.leaked_chars) == reference.leak_counts(
        gold, system, options.ascii_token_regex)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_breakdowns_equal_filtering_before_matching(seed):
    """A category's figures are those of scoring only that category's tags."""
    gold, system = random_corpus(seed)
    report = evaluate(gold, system, criteria=["strict", "relaxed", "token", "hipaa_token"])
    for category in ("NAME", "DATE", "LOCATION", "name"):
        g = [d.with_annotations([a for a in d.annotations if a.category.upper() == category.upper()]) for d in gold]
        s = {k: [a for a in v if a.category.upper() == category.upper()] for k, v in system.items()}
        for name in ("strict", "relaxed"):
            if category == "name":
                continue
            rows = reference.corpus_counts(g, s, name)
            got = report[name].by_category[category]
            assert (got.tp, got.fp, got.fn) == tuple(map(sum, zip(*rows))), (name, category)
    # token keys are case-sensitive: lower-case "name" is its own category there
    for category in ("NAME", "name"):
        g = [d.with_annotations([a for a in d.annotations if a.category == category]) for d in gold]
        s = {k: [a for a in v if a.category == category] for k, v in system.items()}
        rows = reference.corpus_counts(g, s, "token")
        got = report["token"].by_category.get(category)
        total = tuple(map(sum, zip(*rows)))
        assert ((got.tp, got.fp, got.fn) if got else (0, 0, 0)) == total, category


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), which=st.sampled_from(range(len(OPTIONS))))
def test_system_equal_to_gold_scores_one_everywhere(seed, which):
    gold, _ = random_corpus(seed, must_have_date=True)  # every document has something in scope
    report = evaluate(gold, {d.id: d.annotations for d in gold}, options=OPTIONS[which])
    for name in ALL:
        r = report[name]
        assert (r.micro.precision, r.micro.recall, r.micro.f1, r.micro.f2) == (1.0, 1.0, 1.0, 1.0), name
        assert (r.macro.precision, r.macro.recall, r.macro.f1) == (1.0, 1.0, 1.0), name
        for group in list(r.by_category.values()) + list(r.by_subtype.values()):
            assert group.fp == group.fn == 0
    assert report.leak.overall.leaked_tokens == report.leak.overall.leaked_chars == 0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_empty_system_has_recall_zero(seed):
    gold, _ = random_corpus(seed, must_have_date=True)
    report = evaluate(gold, {d.id: [] for d in gold})
    for name in ALL:
        assert report[name].micro.recall == 0.0 and report[name].macro.recall == 0.0, name
        assert report[name].micro.tp == 0 and report[name].micro.fn > 0, name
    assert report.leak.overall.token_rate == 1.0 and report.leak.overall.char_rate == 1.0


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), shuffle_seed=st.integers(0, 1000))
def test_shuffling_documents_changes_nothing(seed, shuffle_seed):
    gold, system = random_corpus(seed, n_docs=6)
    order = list(range(len(gold)))
    random.Random(shuffle_seed).shuffle(order)
    shuffled_gold = [gold[i] for i in order]
    shuffled_system = dict(random.Random(shuffle_seed + 1).sample(sorted(system.items()), len(system)))
    a = evaluate(gold, system)
    b = evaluate(shuffled_gold, shuffled_system)
    for name in ALL:
        assert a[name].micro == b[name].micro, name
        assert a[name].macro.precision == pytest.approx(b[name].macro.precision), name
        assert a[name].macro.recall_sd == pytest.approx(b[name].macro.recall_sd), name
        assert a[name].by_category == b[name].by_category
        assert a[name].documents.tp[order].tolist() == b[name].documents.tp.tolist()
    assert a.leak == b.leak


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_scorer_equals_evaluate(seed):
    gold, system = random_corpus(seed, n_docs=5)
    report = evaluate(gold, system, criteria=list(CRITERIA))
    for name in CRITERIA:
        scorer = Scorer(gold, name)
        got = scorer.counts(system)
        want = report[name].documents
        assert got.doc_ids == want.doc_ids
        assert np.array_equal(got.tp, want.tp) and np.array_equal(got.fn, want.fn) and np.array_equal(got.fp, want.fp), name
        # per-document lists in gold order are accepted too
        as_list = scorer.prf([system[d.id] for d in gold])
        assert as_list == pytest.approx((want.micro().precision, want.micro().recall, want.micro().f1))


def test_scorer_grows_for_labels_gold_never_had():
    gold, system = random_corpus(7, n_docs=3)
    scorer = Scorer(gold, "strict")
    before = scorer.counts(system)
    extra = {k: list(v) + [Annotation(0, 2, f"NEW{i}", "THING") for i in range(40)] for k, v in system.items()}
    after = scorer.counts(extra)
    # 40 new labels on one span: 40 distinct keys, all false positives
    assert (after.fp - before.fp).tolist() == [40, 40, 40]
    assert after.tp.tolist() == before.tp.tolist()
    assert scorer.counts(system).fp.tolist() == before.fp.tolist()


def test_real_corpus_matches_reference(meddocan_dir):
    """MEDDOCAN dev (Spanish: non-ASCII letters exercise the token regex),
    XML gold against a perturbed system, engine against the reference loop."""
    from ensemble_deid.corpus.formats import load_directory

    gold = load_directory(meddocan_dir / "dev" / "xml")[:60]
    rng = random.Random(3)
    labels = sorted({(a.category, a.type) for d in gold for a in d.annotations})
    system = {}
    for d in gold:
        tags = []
        for a in d.annotations:
            r = rng.random()
            if r < 0.7:
                tags.append(a)
            elif r < 0.85:
                end = min(len(d.text), max(a.start + 1, a.end + rng.choice([-2, -1, 1, 3])))
                tags.append(Annotation(a.start, end, a.category, a.type))
            elif r < 0.95:
                tags.append(Annotation(a.start, a.end, *rng.choice(labels)))
        system[d.id] = tags
    for options in (EvalOptions(), EvalOptions.no_quirks()):
        report = evaluate(gold, system, criteria=["token", "strict", "relaxed", "binary_token", "semeval_partial"], options=options)
        for name in report.criteria:
            rows = reference.corpus_counts(gold, system, name, options)
            got = report[name].documents
            assert list(zip(got.tp.tolist(), got.fp.tolist(), got.fn.tolist())) == rows, name
        assert report["strict"].micro.f1 < 1.0 < report["token"].micro.tp
    # the ASCII quirk matters on Spanish text: Unicode tokens are fewer
    ascii_tokens = evaluate(gold, system, criteria=["token"]).leak.overall.tokens
    unicode_tokens = evaluate(gold, system, criteria=["token"], options=EvalOptions(ascii_token_regex=False)).leak.overall.tokens
    assert unicode_tokens < ascii_tokens


def test_scorer_table_subsets_equal_rescoring_the_subset():
    gold, system = random_corpus(11, n_docs=6)
    for name in ("strict", "relaxed", "hipaa_token", "semeval_type"):
        scorer = Scorer(gold, name)
        table = scorer.table(system)
        assert scorer.prf(table) == scorer.prf(system)
        keep = np.arange(len(table)) % 3 != 0  # any subset of the tags
        flat = [(d.id, a) for d in gold for a in system[d.id]]
        subset = {d.id: [] for d in gold}
        for (doc_id, a), k in zip(flat, keep.tolist()):
            if k:
                subset[doc_id].append(a)
        want = scorer.counts(subset)
        got = scorer.counts(table.select(keep))
        assert (got.tp.tolist(), got.fp.tolist(), got.fn.tolist()) == (want.tp.tolist(), want.fp.tolist(), want.fn.tolist()), name
