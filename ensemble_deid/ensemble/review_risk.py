"""Review routing: which text an ensemble releases readable is most likely
PHI, learned from its own out-of-fold data, and how much of it a reviewer
must see to reach a recall target.

**Items.** After an ensemble has decided, every run of consecutive tokens it
left readable (``O``) that a member tagged, or that looks like an identifier
(a digit, a word outside the training notes' ordinary vocabulary, or a
word they use as PHI), is one *review item* (a run stops at a line break).
Its kind: ``disagreement`` when it touches a span the ensemble masked (members
disagree on the extent), ``near-threshold`` when the learner's score on it
is in the top quarter of the out-of-fold dropped items' scores, else
``dropped-span``; ``lexical`` when no member tagged it.

**Features** (:data:`BASE_FEATURES`, then one per category of the suggested
label and one per member): the members' vote share on its tokens (max and
mean), whether it touches a masked span, the learner's score relative to its
decision threshold (per token: the highest score of a candidate span
covering it, or a token-level learner's posterior; none for learners without
a score), the lexical shape (digits, capitalised words outside the
vocabulary, sentence start, length), how often the training notes' gold
makes a token PHI given its word, the words around it and the word pair it
ends (:class:`PhiRates`: "cuñado", "a los 14 meses", "trabajaba como ..."
are PHI by their role and context, which no shape shows), the label and
which members proposed it.

**Risk** is a logistic model over these features (each twice: for items a
member proposed and for the others, :func:`design`), fitted on the items of the
ensemble's out-of-fold outputs over the training set with the gold answer
"reviewing it uncovers a PHI token the ensemble left readable"; its
regularisation ``C`` is chosen on the held-out curve (:data:`RISK_C_GRID`).
A training item's rate features leave its own fold's notes out (otherwise a
note's own gold would vouch for its words and the model would trust the
rates more than they deserve on new notes). Reviewing an
item is simulated from gold (:func:`review_curve`): the reviewer sees the
item in context and masks every gold PHI span it overlaps, whole (editing
the extent); its binary-token keys (the official ``[a-zA-Z0-9]+`` tokens of
the gold spans) count as found.

**Budget.** ``recall>=R``: the highest risk threshold whose items, reviewed,
bring the pooled held-out binary-token recall to R (the risk model fitted on
the other folds' items: cross-validated like every other choice);
``items<=N``: each note's N riskiest items. The bundle keeps the model, the
vocabulary, the chosen threshold and the held-out curve, so another target
is read off the curve without refitting; :meth:`ReviewModel.from_dict`
checks all of it as untrusted input.
"""
from __future__ import annotations

import math
import re
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ..corpus.bio import OUTSIDE
from ..corpus.document import Document
from ..taggers.gazetteers import normalize, read_list
from ..taggers.prediction import DocumentPrediction
from .base import ordered_members
from .objective import token_keys
from .splits import fitted_folds

KINDS = ("dropped-span", "near-threshold", "disagreement", "lexical")
CATEGORIES = ("NAME", "DATE", "LOCATION", "ID", "CONTACT", "AGE", "PROFESSION", "OTHER")
BASE_FEATURES = ("proposed", "vote_share_max", "vote_share_mean", "touches_phi", "has_score", "score_gap",
                 "has_digit", "all_digits", "log_digits", "capitalised_oov", "oov_share", "sentence_start",
                 "log_tokens", "log_chars", "masked_elsewhere", "gazetteer_name", "gazetteer_place",
                 "gazetteer_profession", "after_cue", "phi_word", "word_rate_max", "word_rate_mean", "before_rate",
                 "after_rate", "before2_rate", "pair_rate_max", "context_rate_max")
SCORE_CLIP = 10.0  # score gaps beyond this say nothing more (and keep the features bounded)
VOCABULARY_MIN_DOCUMENTS = 5
RATES_MIN_PATIENTS = 2  # a context's counts are kept once two patients' notes show it (chosen by CV on MEDDOCAN train)
MAX_VOCABULARY = 1_000_000
MAX_ITEMS_PER_NOTE = 1_000_000
MAX_COUNT = 10**12
CURVE_POINTS = 200
RISK_C_GRID = (0.1, 1.0, 10.0)  # the risk model's regularisation, chosen on the held-out curve
CONTEXTS = ("word", "before", "after", "before2", "pair")
RATE_PSEUDO = 2.0  # pseudo-occurrences at the prior: a word seen twice says little
RATE_FLOOR = 1e-4  # rates enter as log(rate + floor)
VERSION = 2  # of the stored review model (1: before the context rates)
_DIGIT = re.compile(r"\d")
_ALPHA = re.compile(r"^[^\W\d_]+$")


# --- the ordinary vocabulary ----------------------------------------------------------

@dataclass(frozen=True)
class Lexicon:
    """Lower-cased words of the training notes found in at least
    ``min_documents`` of them (so no single note's word): ``ordinary``,
    outside every gold span; ``phi``, inside gold spans (professions,
    relatives, common places: words that are PHI by their role)."""

    ordinary: frozenset = frozenset()
    phi: frozenset = frozenset()


def _inside_gold(doc: Document) -> np.ndarray:
    """(n,) bool: the token overlaps a gold span (one that starts before the
    token ends reaches past its start)."""
    tokens = doc.tokens
    spans = sorted((a.start, a.end) for a in doc.annotations)
    if not spans or not len(tokens):
        return np.zeros(len(tokens), dtype=bool)
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    reach = np.maximum.accumulate(np.array([e for _, e in spans], dtype=np.int64))
    before = np.searchsorted(starts, tokens.ends, side="left")  # spans starting before each token ends
    return (before > 0) & (reach[np.maximum(before - 1, 0)] > tokens.starts)


def learn_lexicon(documents: Sequence[Document], min_documents: int = VOCABULARY_MIN_DOCUMENTS) -> Lexicon:
    counts: tuple[dict[str, int], dict[str, int]] = ({}, {})
    for doc in documents:
        seen: tuple[set, set] = (set(), set())
        for word, inside in zip(doc.tokens.words, _inside_gold(doc).tolist()):
            if len(word) < 2 or not _ALPHA.match(word):
                continue
            seen[int(inside)].add(word.lower())
        for which in (0, 1):
            for w in seen[which]:
                counts[which][w] = counts[which].get(w, 0) + 1
    keep = [frozenset(w for w, n in c.items() if n >= min_documents) for c in counts]
    return Lexicon(keep[0], keep[1])


# --- what the training notes' gold says about a word in its context -------------------------------

@dataclass(frozen=True)
class PhiRates:
    """How often the training notes' gold makes a token PHI, by context:
    ``word`` (its own lower-cased word), ``before`` (the word just before
    it), ``after`` (just after), ``before2`` (two before) and ``pair`` (the
    word before and its own, joined by a space). Each table maps a key to
    (occurrences, PHI occurrences), kept only for keys found in the notes
    of at least ``min_patients`` patients (no single patient's word: a
    patient's name recurs in their own notes, not in another's);
    ``tokens``/``phi`` give the prior. Counts, not rates, so that a fold's
    own notes can be taken out (:func:`context_rates`)."""

    tables: Mapping[str, Mapping[str, tuple[int, int]]] = field(default_factory=lambda: {c: {} for c in CONTEXTS})
    tokens: int = 0
    phi: int = 0

    @property
    def prior(self) -> float:
        """The training notes' share of PHI tokens (the rate of a context never seen)."""
        return self.phi / self.tokens if self.tokens else 0.0

    def rate(self, context: str, key: str) -> float:
        n, p = self.tables[context].get(key, (0, 0))
        return (p + RATE_PSEUDO * self.prior) / (n + RATE_PSEUDO)

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "phi": self.phi,
                **{c: [[k, n, p] for k, (n, p) in sorted(self.tables[c].items())] for c in CONTEXTS}}


def _context_keys(words: Sequence[str], i: int) -> tuple[tuple[str, str], ...]:
    """(context, key) of token ``i`` of lower-cased ``words``."""
    keys = [("word", words[i])]
    if i > 0:
        keys += [("before", words[i - 1]), ("pair", f"{words[i - 1]} {words[i]}")]
    if i > 1:
        keys.append(("before2", words[i - 2]))
    if i + 1 < len(words):
        keys.append(("after", words[i + 1]))
    return tuple(keys)


def context_rates(documents: Sequence[Document], min_patients: int = RATES_MIN_PATIENTS,
                  groups: Sequence[int] | None = None) -> tuple[PhiRates, dict[int, PhiRates]]:
    """The :class:`PhiRates` of ``documents`` and, when ``groups`` (one per
    document, e.g. its fold) is given, per group the rates without that
    group's notes (their keys still those of all the notes). Patients are
    the documents' ``group`` (each note its own when none is given)."""
    per_doc: list[dict[tuple[str, str], list[int]]] = []
    patients: dict[tuple[str, str], set] = {}
    phi: list[int] = []
    for doc in documents:
        words = [w.lower() for w in doc.tokens.words]
        inside = _inside_gold(doc).tolist()
        phi.append(sum(inside))
        counts: dict[tuple[str, str], list[int]] = {}
        for i in range(len(words)):
            for key in _context_keys(words, i):
                c = counts.setdefault(key, [0, 0])
                c[0] += 1
                c[1] += inside[i]
        per_doc.append(counts)
        for key in counts:
            patients.setdefault(key, set()).add(doc.group)
    kept = {k for k, seen in patients.items() if len(seen) >= min_patients}
    tokens = [len(d.tokens) for d in documents]

    def total(rows: Sequence[int]) -> PhiRates:
        tables: dict[str, dict[str, list[int]]] = {c: {} for c in CONTEXTS}
        for r in rows:
            for (context, key), (n, p) in per_doc[r].items():
                if (context, key) in kept:
                    c = tables[context].setdefault(key, [0, 0])
                    c[0] += n
                    c[1] += p
        return PhiRates({c: {k: (n, p) for k, (n, p) in t.items()} for c, t in tables.items()},
                        sum(tokens[r] for r in rows), sum(phi[r] for r in rows))

    everything = total(range(len(documents)))
    by_group = {} if groups is None else {
        g: total([r for r, h in enumerate(groups) if h != g]) for g in sorted(set(int(g) for g in groups))}
    return everything, by_group


def _rate_features(rates: PhiRates, words: Sequence[str], a: int, b: int) -> list[float]:
    """The rate features of tokens [a, b) of lower-cased ``words`` (log)."""
    own = [rates.rate("word", w) for w in words[a:b]]
    pairs = [rates.rate("pair", f"{words[i - 1]} {words[i]}") if i > 0 else rates.prior for i in range(a, b)]
    before = rates.rate("before", words[a - 1]) if a > 0 else rates.prior
    after = rates.rate("after", words[b]) if b < len(words) else rates.prior
    before2 = rates.rate("before2", words[a - 2]) if a > 1 else rates.prior
    values = [max(own), sum(own) / len(own), before, after, before2, max(pairs), max(max(own), before, after)]
    return [math.log(v + RATE_FLOOR) for v in values]


@lru_cache(maxsize=1)
def _gazetteer_words() -> dict[str, frozenset]:
    """Single-word entries of the shipped gazetteers (normalised), by feature."""

    def words(*files):
        return frozenset(normalize(e) for f in files for e in read_list(f) if " " not in e.strip())

    return {"name": words("first_names.txt", "last_names.txt"),
            "place": words("cities.txt", "countries.txt", "states.txt"),
            "profession": words("professions.txt"), "cue": words("titles.txt", "hospital_cues.txt")}


def _capitalised_oov(word: str, lexicon: Lexicon) -> bool:
    return bool(word) and word[0].isupper() and bool(_ALPHA.match(word)) and word.lower() not in lexicon.ordinary


def looks_like_identifier(word: str, lexicon: Lexicon) -> bool:
    """A digit, a word of 3 letters or more outside the ordinary vocabulary
    (a lower-case one too), or a word the training notes use as PHI."""
    if _DIGIT.search(word):
        return True
    if not _ALPHA.match(word):
        return False
    low = word.lower()
    return (len(word) >= 3 and low not in lexicon.ordinary) or low in lexicon.phi


# --- items ------------------------------------------------------------------------------

@dataclass
class DocumentView:
    """What review needs of one document: the output's masked tokens, each
    member's tags and the learner's score gap per token (NaN: none)."""

    document: Document
    masked: np.ndarray  # (n,) bool
    member_tags: list[tuple[str, ...]]  # one per member
    score_gap: np.ndarray | None  # (n,) float or None
    output: DocumentPrediction


def document_views(documents: Sequence[Document], outputs: Sequence[DocumentPrediction],
                   members: Sequence[Mapping[str, DocumentPrediction]],
                   score_gaps: Sequence[np.ndarray] | None = None) -> list[DocumentView]:
    by_id = {p.doc_id: p for p in outputs}
    views = []
    for i, doc in enumerate(documents):
        out = by_id[doc.id]
        views.append(DocumentView(doc, np.array([t != OUTSIDE for t in out.tags], dtype=bool),
                                  [m[doc.id].tags for m in members],
                                  None if score_gaps is None else np.asarray(score_gaps[i], dtype=np.float64), out))
    return views


@dataclass
class Items:
    """Review items of some documents (rows), with their features and, when
    the documents carry gold, what reviewing each one uncovers."""

    feature_names: tuple[str, ...]
    doc: np.ndarray  # (n,) index into the documents
    first: np.ndarray  # (n,) first token (within its document)
    stop: np.ndarray  # (n,) end token (exclusive)
    start_char: np.ndarray
    end_char: np.ndarray
    kind: list[str]
    label: list[str]
    proposed_by: list[tuple[str, ...]]
    features: np.ndarray  # (n, f)
    n_tokens: np.ndarray  # (n,) tokens of the item
    recovers: list[tuple[int, ...]] = field(default_factory=list)  # gold key ids it uncovers
    score_gap: np.ndarray | None = None  # (n,) the raw gap (for the near-threshold kind)

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def useful(self) -> np.ndarray:
        """(n,) bool: reviewing the item uncovers a PHI token (the risk model's answer)."""
        return np.array([bool(r) for r in self.recovers], dtype=bool)

    def take(self, rows: np.ndarray) -> "Items":
        rows = np.asarray(rows, dtype=np.int64)
        pick = lambda xs: [xs[i] for i in rows.tolist()]  # noqa: E731
        return Items(self.feature_names, self.doc[rows], self.first[rows], self.stop[rows], self.start_char[rows],
                     self.end_char[rows], pick(self.kind), pick(self.label), pick(self.proposed_by),
                     self.features[rows], self.n_tokens[rows], pick(self.recovers) if self.recovers else [],
                     None if self.score_gap is None else self.score_gap[rows])


def feature_names(member_names: Sequence[str]) -> tuple[str, ...]:
    return BASE_FEATURES + tuple(f"category:{c}" for c in CATEGORIES) + tuple(f"member:{m}" for m in member_names)


def _runs(candidate: np.ndarray, doc: Document) -> list[tuple[int, int]]:
    """Maximal runs of candidate tokens, cut at line breaks."""
    idx = np.flatnonzero(candidate)
    if not len(idx):
        return []
    text, starts, ends = doc.text, doc.tokens.starts, doc.tokens.ends
    runs, a = [], int(idx[0])
    prev = a
    for i in idx[1:].tolist():
        if i != prev + 1 or "\n" in text[int(ends[prev]):int(starts[i])]:
            runs.append((a, prev + 1))
            a = i
        prev = i
    runs.append((a, prev + 1))
    return runs


def _category(label: str) -> str:
    cat = label.split(":", 1)[0].upper()
    return cat if cat in CATEGORIES else "OTHER"


def build_items(views: Sequence[DocumentView], member_names: Sequence[str], lexicon: Lexicon,
                lexical_labels: Mapping[str, str] | None = None, near_gap: float | None = None,
                gold: "GoldCoverage | None" = None, rates: "PhiRates | Sequence[PhiRates] | None" = None) -> Items:
    """The review items of ``views`` (module docstring). ``gold``: record what
    each one uncovers. ``near_gap``: score gaps at or above it are
    ``near-threshold``. ``rates``: one :class:`PhiRates` for every view, or
    one per view (a training note's without its own fold); None: no counts
    (every rate feature at the floor)."""

    gaz = _gazetteer_words()
    lexical_labels = dict(lexical_labels or {})
    names = feature_names(member_names)
    m = len(member_names)
    cat_at = {c: len(BASE_FEATURES) + i for i, c in enumerate(CATEGORIES)}
    mem_at = len(BASE_FEATURES) + len(CATEGORIES)
    rows: dict[str, list] = {k: [] for k in ("doc", "first", "stop", "sc", "ec", "kind", "label", "by", "nt", "rec", "gap")}
    feats = []
    rate_at = BASE_FEATURES.index("word_rate_max")
    rates = PhiRates() if rates is None else rates
    for d, view in enumerate(views):
        doc, tokens = view.document, view.document.tokens
        n = len(tokens)
        if not n:
            continue
        doc_rates = rates if isinstance(rates, PhiRates) else rates[d]
        lower = [w.lower() for w in tokens.words]
        tagged = np.zeros((n, m), dtype=bool)
        for j, tags in enumerate(view.member_tags):
            tagged[:, j] = np.fromiter((t != OUTSIDE for t in tags), dtype=bool, count=n)
        votes = tagged.sum(axis=1)
        lexical = np.fromiter((looks_like_identifier(w, lexicon) for w in tokens.words), dtype=bool, count=n)
        candidate = ~view.masked & ((votes > 0) | lexical)
        masked_words = {w.lower() for w, hit in zip(tokens.words, view.masked.tolist()) if hit}
        sentence_first = np.ones(n, dtype=bool)
        sentence_first[1:] = tokens.sentence_ids[1:] != tokens.sentence_ids[:-1]
        for a, b in _runs(candidate, doc):
            words = tokens.words[a:b]
            v = votes[a:b]
            proposed = bool(v.any())
            by = tuple(member_names[j] for j in range(m) if tagged[a:b, j].any())
            f = np.zeros(len(names), dtype=np.float64)
            f[0] = proposed
            f[1] = v.max() / m if m else 0.0
            f[2] = v.mean() / m if m else 0.0
            touches = (a > 0 and view.masked[a - 1]) or (b < n and view.masked[b])
            f[3] = touches
            gap = np.nan
            if view.score_gap is not None:
                g = view.score_gap[a:b]
                g = g[np.isfinite(g)]
                if len(g):
                    gap = float(np.clip(g.max(), -SCORE_CLIP, SCORE_CLIP))
                    f[4], f[5] = 1.0, gap
            alnum = "".join(ch for w in words for ch in w if ch.isalnum())
            digits = sum(ch.isdigit() for ch in alnum)
            f[6] = digits > 0
            f[7] = bool(alnum) and alnum.isdigit()
            f[8] = math.log1p(digits)
            alpha = [w for w in words if _ALPHA.match(w)]
            f[9] = any(_capitalised_oov(w, lexicon) for w in words)
            f[10] = sum(w.lower() not in lexicon.ordinary for w in alpha) / len(alpha) if alpha else 0.0
            f[11] = sentence_first[a]
            f[12] = math.log1p(b - a)
            sc, ec = int(tokens.starts[a]), int(tokens.ends[b - 1])
            f[13] = math.log1p(ec - sc)
            f[14] = any(w.lower() in masked_words for w in words if len(w) > 1 and w.isalnum())
            normal = [normalize(w) for w in alpha]
            f[15] = any(w in gaz["name"] for w in normal)
            f[16] = any(w in gaz["place"] for w in normal)
            f[17] = any(w in gaz["profession"] for w in normal)
            f[18] = a > 0 and normalize(tokens.words[a - 1]) in gaz["cue"]
            f[19] = any(w.lower() in lexicon.phi for w in alpha)
            f[rate_at:rate_at + 7] = _rate_features(doc_rates, lower, a, b)
            if proposed:
                labels: dict[str, int] = {}
                for j in range(m):
                    for t in view.member_tags[j][a:b]:
                        if t != OUTSIDE:
                            labels[t[2:]] = labels.get(t[2:], 0) + 1
                label = max(sorted(labels), key=labels.__getitem__)
                f[cat_at[_category(label)]] = 1.0
                for j in range(m):
                    f[mem_at + j] = tagged[a:b, j].any()
                if touches:
                    kind = "disagreement"
                elif near_gap is not None and np.isfinite(gap) and gap >= near_gap:
                    kind = "near-threshold"
                else:
                    kind = "dropped-span"
            else:
                label = lexical_labels.get("digit" if f[6] else "word", "OTHER:OTHER")
                kind = "lexical"
            for key, value in (("doc", d), ("first", a), ("stop", b), ("sc", sc), ("ec", ec), ("kind", kind),
                               ("label", label), ("by", by), ("nt", b - a), ("gap", gap)):
                rows[key].append(value)
            if gold is not None:
                rows["rec"].append(gold.uncovered_by(d, sc, ec))
            feats.append(f)
    as_int = lambda k: np.array(rows[k], dtype=np.int64)  # noqa: E731
    return Items(names, as_int("doc"), as_int("first"), as_int("stop"), as_int("sc"), as_int("ec"), rows["kind"],
                 rows["label"], rows["by"], np.array(feats, dtype=np.float64).reshape(-1, len(names)), as_int("nt"),
                 rows["rec"], np.array(rows["gap"], dtype=np.float64))


# --- gold: what the output covers, what a reviewer would uncover ---------------------------

class GoldCoverage:
    """The binary-token gold keys of some documents (``objective.token_keys``
    of every gold span), which of them an output covers, and the keys a
    reviewer uncovers by masking the gold spans an item overlaps."""

    def __init__(self, documents: Sequence[Document], outputs: Sequence[DocumentPrediction]):
        by_id = {p.doc_id: p for p in outputs}
        self.key_ids: list[dict[tuple[int, int], int]] = []
        self.spans: list[list[tuple[int, int, tuple[int, ...]]]] = []
        covered: list[bool] = []
        self.n_sys = 0
        self.n_tokens = 0
        for doc in documents:
            ids: dict[tuple[int, int], int] = {}
            spans = []
            for a in sorted(doc.annotations, key=lambda a: (a.start, a.end)):
                own = []
                for key in token_keys(doc.text, a.start, a.end):
                    if key not in ids:
                        ids[key] = len(covered)
                        covered.append(False)
                    own.append(ids[key])
                spans.append((a.start, a.end, tuple(own)))
            sys_keys = set()
            for s in by_id[doc.id].spans(doc):
                sys_keys.update(token_keys(doc.text, s.start, s.end))
            for key in sys_keys:
                if key in ids:
                    covered[ids[key]] = True
            self.n_sys += len(sys_keys)
            self.n_tokens += len(doc.tokens)
            self.key_ids.append(ids)
            self.spans.append(spans)
        self.covered = np.array(covered, dtype=bool)

    @property
    def n_gold(self) -> int:
        return len(self.covered)

    def uncovered_by(self, d: int, start: int, end: int) -> tuple[int, ...]:
        """Gold keys of document ``d`` left readable that a review of
        [start, end) uncovers (every gold span it overlaps, whole)."""
        out = []
        for s, e, keys in self.spans[d]:
            if s < end and e > start:
                out.extend(k for k in keys if not self.covered[k])
        return tuple(sorted(set(out)))


@dataclass
class CurvePoint:
    """After reviewing the items ranked first, down to ``threshold``."""

    threshold: float
    items: int
    items_per_note: float
    tokens_share: float
    recall: float
    precision: float

    def to_dict(self) -> dict:
        return {"threshold": None if math.isinf(self.threshold) else self.threshold, "items": self.items, "items_per_note": self.items_per_note,
                "tokens_share": self.tokens_share, "recall": self.recall, "precision": self.precision}


def review_curve(items: Items, gold: GoldCoverage, order: np.ndarray, cut_values: np.ndarray | None = None,
                 n_notes: int = 1) -> list[CurvePoint]:
    """Binary-token recall and precision after the simulated review of the
    items in ``order``, one point after every prefix (``cut_values[i]``, the
    value the i-th item is ranked by: a point only where it changes, so ties
    are reviewed together). The first point is before any review."""
    found = np.zeros(gold.n_gold, dtype=bool)
    covered = int(gold.covered.sum())
    total = max(gold.n_gold, 1)
    gained = tokens = 0
    pts = [CurvePoint(math.inf, 0, 0.0, 0.0, covered / total, covered / gold.n_sys if gold.n_sys else 0.0)]
    order = np.asarray(order, dtype=np.int64)
    for k, i in enumerate(order.tolist()):
        for key in items.recovers[i]:
            if not found[key]:
                found[key] = True
                gained += 1
        tokens += int(items.n_tokens[i])
        last = k == len(order) - 1
        if cut_values is not None and not last and cut_values[k + 1] == cut_values[k]:
            continue
        n_sys = gold.n_sys + gained
        pts.append(CurvePoint(float(cut_values[k]) if cut_values is not None else float(k + 1), k + 1,
                              (k + 1) / max(n_notes, 1), tokens / max(gold.n_tokens, 1), (covered + gained) / total,
                              (covered + gained) / n_sys if n_sys else 0.0))
    return pts


def per_note_order(items: Items, risk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Items ordered by their rank within their note (each note's riskiest
    first, then every note's second, ...), and that rank (1-based): reviewing
    the prefix with rank <= N is "at most N items per note"."""
    rank = np.zeros(len(items), dtype=np.int64)
    for d in np.unique(items.doc).tolist():
        rows = np.flatnonzero(items.doc == d)
        ranked = rows[np.argsort(-risk[rows], kind="stable")]
        rank[ranked] = np.arange(1, len(ranked) + 1)
    order = np.lexsort((-risk, rank))
    return order, rank[order]


# --- the risk model ---------------------------------------------------------------------------

def design(features: np.ndarray) -> np.ndarray:
    """The risk model's inputs: every feature twice, once for the items some
    member proposed and once for the others (``proposed`` is the first
    feature), so the two kinds get their own weights: a digit run means
    little when no member saw it, much beside a member's span."""
    proposed = features[:, :1]
    return np.hstack([features * proposed, features * (1.0 - proposed)])


@dataclass
class RiskModel:
    """Logistic regression over the standardised :func:`design` of the item features."""

    feature_names: tuple[str, ...]
    mean: np.ndarray  # of the design's columns (twice the features)
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    @classmethod
    def fit(cls, items: Items, C: float = 1.0) -> "RiskModel":
        from sklearn.linear_model import LogisticRegression

        x, y = design(items.features), items.useful
        mean = x.mean(axis=0) if len(x) else np.zeros(x.shape[1])
        scale = x.std(axis=0) if len(x) else np.ones(x.shape[1])
        scale = np.where(scale > 1e-12, scale, 1.0)
        if len(np.unique(y)) < 2:  # nothing to separate: every item gets the base rate
            rate = float(y.mean()) if len(y) else 0.0
            rate = min(max(rate, 1e-6), 1 - 1e-6)
            return cls(items.feature_names, mean, scale, np.zeros(x.shape[1]), math.log(rate / (1 - rate)))
        lr = LogisticRegression(C=C, max_iter=5000)
        lr.fit((x - mean) / scale, y)
        return cls(items.feature_names, mean, scale, lr.coef_[0].astype(np.float64), float(lr.intercept_[0]))

    def risk(self, items: Items) -> np.ndarray:
        if tuple(items.feature_names) != tuple(self.feature_names):
            raise ValueError("review items were built for other members than the risk model's")
        z = ((design(items.features) - self.mean) / self.scale) @ self.coef + self.intercept
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))

    def to_dict(self) -> dict:
        return {"features": list(self.feature_names), "design": "by-proposed", "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "coef": self.coef.tolist(), "intercept": self.intercept}


def cross_validated_risk(items: Items, fold_of_doc: np.ndarray, C: float = 1.0) -> np.ndarray:
    """Each item's risk from a model fitted on the other folds' items."""
    risk = np.zeros(len(items))
    fold = fold_of_doc[items.doc] if len(items) else np.zeros(0, np.int64)
    for f in np.unique(fold).tolist():
        held = np.flatnonzero(fold == f)
        rest = np.flatnonzero(fold != f)
        risk[held] = RiskModel.fit(items.take(rest), C).risk(items.take(held))
    return risk


# --- the budget -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Budget:
    """``recall>=R`` (a risk threshold) or ``items<=N`` (per note)."""

    kind: str  # "recall" | "items"
    value: float

    def __str__(self) -> str:
        return f"recall>={self.value:g}" if self.kind == "recall" else f"items<={int(self.value)}"


def parse_budget(text) -> Budget | None:
    """``recall>=0.998``, ``items<=5`` or ``none`` (None). A bad value is a ValueError naming it."""
    if isinstance(text, Budget) or text is None:
        return text
    body = str(text).strip().lower().replace(" ", "")
    if body in ("", "none"):
        return None
    m = re.fullmatch(r"(recall)(?:>=|@)(\d*\.?\d+)|(items)(?:<=|@)(\d+)", body)
    if not m:
        raise ValueError(f"review budget {text!r}: expected recall>=R (R in (0, 1]), items<=N or none")
    if m.group(1):
        r = float(m.group(2))
        if not 0 < r <= 1:
            raise ValueError(f"review budget {text!r}: the recall {r:g} must be in (0, 1]")
        return Budget("recall", r)
    n = int(m.group(4))
    if n > MAX_ITEMS_PER_NOTE:
        raise ValueError(f"review budget {text!r}: at most {MAX_ITEMS_PER_NOTE} items per note")
    return Budget("items", float(n))


def thin(points: Sequence[CurvePoint], n: int = CURVE_POINTS) -> list[CurvePoint]:
    """At most ``n`` points of a curve (the first and last kept)."""
    if len(points) <= n:
        return list(points)
    keep = np.unique(np.linspace(0, len(points) - 1, n).round().astype(int))
    return [points[i] for i in keep.tolist()]


def choose_threshold(curve: Sequence[CurvePoint], recall: float) -> tuple[float, bool]:
    """The highest risk threshold whose review reaches ``recall`` on the
    curve (fewest items); none reaching it: the one with the highest recall
    (ties: fewer items), and False."""
    for p in curve:
        if p.recall >= recall:
            return (1.0 if math.isinf(p.threshold) else p.threshold), True
    best = max(curve, key=lambda p: (p.recall, -p.items))
    return (1.0 if math.isinf(best.threshold) else best.threshold), False


@dataclass
class ReviewModel:
    """What a bundle keeps to route text to review (see the module docstring)."""

    risk: RiskModel
    member_names: tuple[str, ...]
    lexicon: Lexicon
    rates: PhiRates
    lexical_labels: dict[str, str]
    near_gap: float | None
    budget: Budget
    threshold: float  # items with risk >= it are queued (recall budgets)
    reached: bool
    curve: list[CurvePoint]  # held-out, risk-ordered
    note_curve: list[CurvePoint]  # held-out, per-note-rank ordered
    cv: dict = field(default_factory=dict)

    def select(self, items: Items, risk: np.ndarray, budget: Budget | None = None) -> np.ndarray:
        """Rows of ``items`` to queue under ``budget`` (default: the bundle's)."""
        budget = budget or self.budget
        if budget.kind == "items":
            order, rank = per_note_order(items, risk)
            return np.sort(order[rank <= int(budget.value)])
        threshold = self.threshold if budget == self.budget else self.threshold_for(budget.value)
        return np.flatnonzero(risk >= threshold)

    def threshold_for(self, recall: float) -> float:
        """The stored held-out curve's threshold for another recall target."""
        return choose_threshold(self.curve, recall)[0]

    def items(self, views: Sequence[DocumentView], gold: "GoldCoverage | None" = None) -> Items:
        """The review items of ``views`` (``gold``: record what each uncovers, for a simulated review)."""
        return build_items(views, self.member_names, self.lexicon, self.lexical_labels, self.near_gap, gold,
                           self.rates)

    def to_dict(self) -> dict:
        return {"version": VERSION, "risk": self.risk.to_dict(), "members": list(self.member_names),
                "vocabulary": sorted(self.lexicon.ordinary), "phi_words": sorted(self.lexicon.phi),
                "rates": self.rates.to_dict(), "lexical_labels": dict(self.lexical_labels),
                "near_gap": self.near_gap, "budget": str(self.budget), "threshold": self.threshold,
                "reached": self.reached, "curve": [p.to_dict() for p in self.curve],
                "note_curve": [p.to_dict() for p in self.note_curve], "cv": self.cv}

    @classmethod
    def from_dict(cls, data: Any, member_names: Sequence[str]) -> "ReviewModel":
        """A stored review model, checked as untrusted input: every number
        finite and in range, the features those of ``member_names``. A bad
        field is a ValueError naming it."""
        def bad(name: str, why: str) -> ValueError:
            return ValueError(f"review settings: field {name!r} {why}")

        if not isinstance(data, dict) or data.get("version") != VERSION:
            raise bad("version", f"is not {VERSION} (a review model of another version of ensemble-deid: "
                                 "refit the bundle with fit --review)")
        members = data.get("members")
        if not isinstance(members, list) or list(members) != list(member_names):
            raise bad("members", "does not name the bundle's members in order")
        risk = data.get("risk")
        names = feature_names(member_names)
        if not isinstance(risk, dict) or risk.get("features") != list(names):
            raise bad("risk.features", "is not the feature list of this version and these members")
        if risk.get("design") != "by-proposed":
            raise bad("risk.design", "is not 'by-proposed'")
        arrays = {}
        for key in ("mean", "scale", "coef"):
            arrays[key] = _finite_vector(risk.get(key), 2 * len(names), f"risk.{key}", bad)
        if np.any(arrays["scale"] <= 0):
            raise bad("risk.scale", "holds a value that is not positive")
        intercept = _finite(risk.get("intercept"), "risk.intercept", bad)
        words = {}
        for key in ("vocabulary", "phi_words"):
            value = data.get(key)
            if not isinstance(value, list) or len(value) > MAX_VOCABULARY or \
                    not all(isinstance(w, str) and 0 < len(w) <= 100 for w in value):
                raise bad(key, "is not a list of words")
            words[key] = frozenset(value)
        rates = _rates(data.get("rates"), bad)
        labels = data.get("lexical_labels")
        if not isinstance(labels, dict) or not all(k in ("digit", "word") and isinstance(v, str) and
                                                   re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}:[A-Za-z0-9_.\-]{1,64}", v)
                                                   for k, v in labels.items()):
            raise bad("lexical_labels", "is not {digit|word: CATEGORY:TYPE}")
        near = data.get("near_gap")
        if near is not None:
            near = _finite(near, "near_gap", bad)
        try:
            budget = parse_budget(data.get("budget"))
        except ValueError:
            budget = None
        if budget is None:
            raise bad("budget", "is not recall>=R or items<=N")
        threshold = _finite(data.get("threshold"), "threshold", bad)
        if not 0 <= threshold <= 1:
            raise bad("threshold", "is not in [0, 1]")
        if not isinstance(data.get("reached"), bool):
            raise bad("reached", "is not true or false")
        curves = {k: [_point(p, f"{k}[{i}]", bad) for i, p in enumerate(_list(data.get(k), k, bad))]
                  for k in ("curve", "note_curve")}
        if not curves["curve"]:
            raise bad("curve", "is empty")
        cv = data.get("cv", {})
        if not isinstance(cv, dict):
            raise bad("cv", "is not an object")
        model = RiskModel(names, arrays["mean"], arrays["scale"], arrays["coef"], intercept)
        return cls(model, tuple(member_names), Lexicon(words["vocabulary"], words["phi_words"]), rates, dict(labels),
                   near, budget, threshold,
                   data["reached"], curves["curve"], curves["note_curve"], cv)


def _count(value, name, bad) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise bad(name, "is not a count")
    return value


def _rates(data, bad) -> PhiRates:
    """Stored :class:`PhiRates`, checked: every table a list of [key, occurrences, PHI occurrences]."""
    if not isinstance(data, dict):
        raise bad("rates", "is not an object")
    tokens, phi = _count(data.get("tokens"), "rates.tokens", bad), _count(data.get("phi"), "rates.phi", bad)
    if phi > tokens:
        raise bad("rates.phi", "exceeds rates.tokens")
    tables = {}
    for context in CONTEXTS:
        rows = data.get(context)
        if not isinstance(rows, list) or len(rows) > MAX_VOCABULARY:
            raise bad(f"rates.{context}", "is not a list of [key, occurrences, PHI occurrences]")
        table = {}
        for row in rows:
            if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and 0 < len(row[0]) <= 201):
                raise bad(f"rates.{context}", "is not a list of [key, occurrences, PHI occurrences]")
            n, p = _count(row[1], f"rates.{context}", bad), _count(row[2], f"rates.{context}", bad)
            if p > n:
                raise bad(f"rates.{context}", "holds more PHI occurrences than occurrences")
            table[row[0]] = (n, p)
        tables[context] = table
    return PhiRates(tables, tokens, phi)


def _finite(value, name, bad) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise bad(name, "is not a finite number")
    return float(value)


def _finite_vector(value, n, name, bad) -> np.ndarray:
    if not isinstance(value, list) or len(value) != n:
        raise bad(name, f"is not a list of {n} numbers")
    return np.array([_finite(v, name, bad) for v in value], dtype=np.float64)


def _list(value, name, bad) -> list:
    if not isinstance(value, list) or len(value) > 10 * CURVE_POINTS:
        raise bad(name, "is not a list of curve points")
    return value


def _point(p, name, bad) -> CurvePoint:
    if not isinstance(p, dict):
        raise bad(name, "is not a curve point")
    t = p.get("threshold")
    threshold = math.inf if t is None else _finite(t, f"{name}.threshold", bad)
    values = {k: _finite(p.get(k), f"{name}.{k}", bad) for k in ("items_per_note", "tokens_share", "recall", "precision")}
    items = p.get("items")
    if isinstance(items, bool) or not isinstance(items, int) or items < 0:
        raise bad(f"{name}.items", "is not a count")
    if values["items_per_note"] < 0 or not all(0 <= values[k] <= 1 for k in ("tokens_share", "recall", "precision")):
        raise bad(name, "holds a figure out of range")
    return CurvePoint(threshold, items, values["items_per_note"], values["tokens_share"], values["recall"],
                      values["precision"])


def lexical_labels_of(documents: Sequence[Document], allowed: Sequence[str] | None = None) -> dict[str, str]:
    """The commonest gold label of gold tokens with a digit and of capitalised
    gold words: what a lexical item is suggested as. ``allowed``: only these
    labels (a bundle keeps only its scheme's labels: another type name is a
    corpus's data)."""
    allowed = None if allowed is None else set(allowed)
    counts: dict[str, dict[str, int]] = {"digit": {}, "word": {}}
    for doc in documents:
        for a in doc.annotations:
            text = doc.text[a.start:a.end]
            shape = "digit" if _DIGIT.search(text) else "word" if text[:1].isupper() else None
            if shape:
                label = f"{a.category}:{a.type}"
                if allowed is None or label in allowed:
                    counts[shape][label] = counts[shape].get(label, 0) + 1
    return {k: max(sorted(v), key=v.__getitem__) for k, v in counts.items() if v}


# --- the learner's score per token -------------------------------------------------------------

def decision_threshold(model) -> float:
    """The learner's own decision threshold on its score: the operating
    point's ``"*"`` when set, else its rule's (the vote threshold, 0 for a
    margin, 0.5 for a token posterior)."""
    point = getattr(model, "operating_point_", None) or getattr(model, "operating_point", None) or {}
    if isinstance(point, dict) and "*" in point:
        return float(point["*"])
    for attr in ("threshold_", "threshold"):
        value = getattr(model, attr, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return 0.5 if getattr(model, "level", "span") == "token" else 0.0


def token_score_gaps(model, prepared) -> list[np.ndarray] | None:
    """Per document, each token's score minus the decision threshold: a
    token-level learner's posterior of PHI, a span-level learner's highest
    score among the candidate spans covering the token (-inf where none);
    None for a learner without a score."""
    if not getattr(model, "scored", False):
        return None
    tau = decision_threshold(model)
    if model.level == "token":
        return [np.asarray(phi, dtype=np.float64) - tau for phi, _, _ in model._scores(prepared)]
    scores = np.asarray(model._scores(prepared), dtype=np.float64) - tau
    total = int(prepared.tok_base[-1])
    flat = np.full(total, -np.inf)
    lengths = prepared.stop - prepared.first
    if len(lengths):
        tok = np.repeat(prepared.first, lengths) + (np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths,
                                                                                         lengths))
        np.maximum.at(flat, tok, np.repeat(scores, lengths))
    return [flat[int(prepared.tok_base[d]):int(prepared.tok_base[d + 1])] for d in range(len(prepared.documents))]


def predict_for_review(model, members: Mapping[str, Mapping[str, DocumentPrediction]], names: Sequence[str],
                       documents: Sequence[Document]) -> tuple[list[DocumentPrediction], list[np.ndarray] | None]:
    """A fitted meta-learner's predictions and per-token score gaps, from one preparation."""
    prepared = model._prepare(ordered_members(members, tuple(names), documents, model.name), tuple(names), documents)
    preds = model._raw_to_predictions(prepared, model._predict_raw(prepared))
    return preds, token_score_gaps(model, prepared)


def out_of_fold_outputs(estimator, members: Mapping[str, Mapping[str, DocumentPrediction]],
                        documents: Sequence[Document], folds, step=None):
    """The ensemble's own out-of-fold outputs over ``documents`` with their
    score gaps: per fold, ``estimator`` cloned, fitted on the other folds'
    member predictions and applied to this fold's (``splits.fitted_folds``,
    as ``selection.cross_val_predict``, with the fold models' score gaps kept)."""
    names = tuple(members)
    prepared = estimator._prepare(ordered_members(members, names, documents, estimator.name), names, documents)
    preds: dict[str, DocumentPrediction] = {}
    gaps: dict[str, np.ndarray] | None = {}
    for model, test in fitted_folds(estimator, prepared, names, folds):
        for p in model._raw_to_predictions(test, model._predict_raw(test)):
            preds[p.doc_id] = p
        g = token_score_gaps(model, test)
        if g is None:
            gaps = None
        elif gaps is not None:
            gaps.update((d.id, x) for d, x in zip(test.documents, g))
        if step:
            step()
    docs = list(documents)
    return [preds[d.id] for d in docs], (None if gaps is None else [gaps[d.id] for d in docs])


def fit_review(documents: Sequence[Document], outputs: Sequence[DocumentPrediction],
               score_gaps: Sequence[np.ndarray] | None, members: Mapping[str, Mapping[str, DocumentPrediction]],
               folds, budget: Budget, vocabulary_min_documents: int = VOCABULARY_MIN_DOCUMENTS,
               C: float | Sequence[float] = RISK_C_GRID, labels: Sequence[str] | None = None,
               rates_min_patients: int = RATES_MIN_PATIENTS) -> tuple[ReviewModel, Items, np.ndarray, GoldCoverage]:
    """A :class:`ReviewModel` from the ensemble's out-of-fold ``outputs`` over
    the training ``documents`` (and the members' out-of-fold predictions):
    vocabulary, context rates and lexical labels from the training notes
    (each item's rate features without its own fold's notes), the risk
    model on every item, its ``C`` (one value or a grid) and the budget
    chosen on the held-out risks (the risk model fitted on the other
    ``folds``): the ``C`` whose held-out curve reaches a recall budget with
    the fewest tokens reviewed (or, per note, recovers the most). Returns
    (model, items, held-out risks, gold)."""
    docs = list(documents)
    names = tuple(members)
    lexicon = learn_lexicon(docs, vocabulary_min_documents)
    fold_of_doc = np.array([folds.folds[d.id] for d in docs], dtype=np.int64)
    rates, without_fold = context_rates(docs, rates_min_patients, fold_of_doc.tolist())
    views = document_views(docs, outputs, [members[n] for n in names], score_gaps)
    gold = GoldCoverage(docs, outputs)
    lexical_labels = lexical_labels_of(docs, labels)
    items = build_items(views, names, lexicon, lexical_labels, None, gold,
                        [without_fold[int(f)] for f in fold_of_doc])
    dropped = items.score_gap[np.isfinite(items.score_gap) & items.features[:, 0].astype(bool)] \
        if items.score_gap is not None else np.zeros(0)
    near = float(np.quantile(dropped, 0.75)) if len(dropped) else None
    if near is not None:
        items.kind = [("near-threshold" if k == "dropped-span" and np.isfinite(g) and g >= near else k)
                      for k, g in zip(items.kind, items.score_gap)]
    grid = [float(C)] if isinstance(C, (int, float)) else [float(c) for c in C]
    tried = [_held_out_choice(items, gold, fold_of_doc, c, budget, len(docs)) for c in grid]
    best = min(range(len(grid)), key=lambda i: tried[i]["rank"])
    held, curve, note_curve, threshold, reached, at = (tried[best][k] for k in
                                                         ("held", "curve", "note_curve", "threshold", "reached", "at"))
    cv = {"folds": int(folds.k), "items": len(items), "useful_items": int(items.useful.sum()), "notes": len(docs),
          "recall_before": curve[0].recall, "chosen": at.to_dict(), "C": grid[best],
          "C_grid": [{"C": c, "reached": t["reached"], **{k: t["at"].to_dict()[k] for k in ("recall", "tokens_share",
                                                                                          "items_per_note")}}
                     for c, t in zip(grid, tried)]}
    model = ReviewModel(RiskModel.fit(items, grid[best]), names, lexicon, rates, lexical_labels, near, budget,
                        float(threshold), bool(reached), thin(curve), thin(note_curve), cv)
    return model, items, held, gold


def _held_out_choice(items: Items, gold: GoldCoverage, fold_of_doc: np.ndarray, C: float, budget: Budget,
                     n_notes: int) -> dict:
    """The held-out curves of the risk model with ``C``, the budget's
    threshold and point on them, and a rank (lower is better) to compare ``C``s."""
    held = cross_validated_risk(items, fold_of_doc, C)
    order = np.argsort(-held, kind="stable")
    curve = review_curve(items, gold, order, held[order], n_notes)
    note_order, note_rank = per_note_order(items, held)
    note_curve = review_curve(items, gold, note_order, note_rank.astype(np.float64), n_notes)
    if budget.kind == "recall":
        threshold, reached = choose_threshold(curve, budget.value)
        at = next(p for p in curve if (1.0 if math.isinf(p.threshold) else p.threshold) <= threshold) \
            if reached else max(curve, key=lambda p: (p.recall, -p.items))
        rank = (not reached, at.tokens_share if reached else -at.recall)
    else:
        threshold, reached = 0.0, True
        at = [p for p in note_curve if p.threshold <= budget.value or math.isinf(p.threshold)][-1]
        rank = (False, -at.recall)
    return {"held": held, "curve": curve, "note_curve": note_curve, "threshold": threshold, "reached": reached,
            "at": at, "rank": rank}


__all__ = ["BASE_FEATURES", "Budget", "CATEGORIES", "CurvePoint", "DocumentView", "GoldCoverage", "Items", "KINDS",
           "PhiRates", "RISK_C_GRID", "ReviewModel", "RiskModel", "build_items", "context_rates", "choose_threshold",
           "cross_validated_risk",
           "decision_threshold", "document_views", "feature_names", "fit_review", "Lexicon", "learn_lexicon",
           "lexical_labels_of", "looks_like_identifier", "out_of_fold_outputs", "parse_budget", "per_note_order",
           "predict_for_review", "review_curve", "token_score_gaps"]
