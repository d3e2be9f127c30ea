"""Decision templates [KIM20, after Kuncheva 2001], in two variants.

``variant="paper"`` (the default) follows the paper's text:

1. Every candidate span (see ``candidates``) has a decision profile: one row
   per member, ``[1, 0]`` if the member produced the span (label included),
   else ``[0, 1]``.
2. Fitting: the template of each class (True span = matches gold under the
   strict criterion; False span) is the mean profile over the training
   candidates of that class. A class with no training candidate has no
   template and is never chosen.
3. A candidate is classified by the nearest template under the Hamming
   (city-block) distance between its binary profile and the real-valued
   template, ``sum_j |p_j - T_j|`` over both columns of every row. A tie
   goes to False (the span is dropped).
4. Overlapping True candidates are resolved as in voting: more votes wins, a
   tie goes to the better cross-validated member.

``variant="authors"`` follows the [KIM20] authors' DTM.java (weighted run):

1. The unit is a distinct span (document, start, end), whatever the labels
   the members gave it. Its profile has the binary features "member i
   predicted exactly this span with subtype S" and "... with category C".
2. Classes: every gold subtype (``CATEGORY:TYPE``) plus NONE. Training
   instances: each gold span (its class is its label; its profile is empty if
   no member found it) and each member span whose boundaries match no gold
   span (NONE). A class's template is the mean of its instances' profiles,
   member i's features weighted 1 / (i + 1) by the order the members are
   given in (list them best first, as the authors did).
3. A span takes the class of the highest cosine similarity between its
   (unweighted) profile and the templates; equal similarities go to NONE,
   then to the first label in sorted order; a template without features is
   never chosen. The span is kept when that similarity exceeds
   ``min_similarity`` (chosen by cross-validation; 0.5-0.6 in their runs)
   and the class is not NONE, and it is relabelled to that class.
4. Overlapping kept spans: higher similarity wins, a tie goes to the span
   whose best voter has the better cross-validated F1.

Both variants resolve overlaps with voting's rule named by ``overlap``
(``"greedy"``, or the authors' ``"chain"`` sweep; see ``voting``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import OPERATING_POINT
from .spans import SpanMetaLearner
from .candidates import CandidateTable, best_voter_rank, gold_keys, voting_priority
from .trust import TRUST, TRUST_GRID
from .voting import resolve, select_kept_by_votes
from ..taggers.constraints import Interval, Options

VARIANTS = ("paper", "authors")
NONE = "NONE"  # the authors' class of spans that are no PHI (labels always hold a ':')


def profiles(votes: np.ndarray) -> np.ndarray:
    """(n, m, 2) decision profiles of candidates."""
    v = votes.astype(np.float64)
    return np.stack([v, 1.0 - v], axis=2)


def hamming(profile: np.ndarray, template: np.ndarray) -> np.ndarray:
    """City-block distance of each (m, 2) profile to a template."""
    return np.abs(profile - template[None]).sum(axis=(1, 2))


def split_label(label: str) -> tuple[str, str]:
    """(CATEGORY, TYPE) of a label, upper-cased as the strict scorer compares them."""
    cat, _, typ = label.upper().partition(":")
    return cat, typ


@dataclass
class Spans:
    """The distinct spans (document, start, end) of a candidate table, with
    each member's label for them (-1: the member did not predict the span)."""

    doc: np.ndarray  # (s,)
    first: np.ndarray  # (s,) global first token
    stop: np.ndarray  # (s,)
    char_start: np.ndarray  # (s,) within the document
    char_end: np.ndarray  # (s,)
    member_label: np.ndarray  # (s, m) label id of table.labels, or -1

    @classmethod
    def of(cls, table: CandidateTable) -> "Spans":
        n, m = len(table), table.n_members
        # Rows are sorted by (first, length, label): one span's rows are consecutive.
        new = np.ones(n, dtype=bool)
        if n:
            new[1:] = (table.first[1:] != table.first[:-1]) | (table.stop[1:] != table.stop[:-1])
        span_of_row = np.cumsum(new) - 1
        heads = np.flatnonzero(new)
        member_label = np.full((len(heads), m), -1, dtype=np.int64)
        rows, cols = np.nonzero(table.votes)
        member_label[span_of_row[rows], cols] = table.label[rows]  # a member gives one span one label
        starts, ends = table.char_offsets()
        return cls(table.doc[heads], table.first[heads], table.stop[heads], starts[heads], ends[heads], member_label)

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def voters(self) -> np.ndarray:
        return self.member_label >= 0


class DecisionTemplates(SpanMetaLearner):
    """Decision templates on the members' span profiles.

    Parameters
    ----------
    variant : {"paper", "authors"}
        The paper's two-class Hamming rule, or the authors' DTM.java (a class
        per gold subtype plus NONE, cosine similarity, relabelling).
    min_similarity : float
        ``variant="authors"`` only: a span is kept when its best cosine
        similarity exceeds this. Chosen by cross-validation through
        ``GridSearch`` (default grid 0.3-0.8).
    overlap : {"greedy", "chain"}
        Overlap resolution of the kept spans (see ``Voting``).
    operating_point : None or dict
        ``variant="paper"``: thresholds on the score "distance to the False
        template minus distance to the True template" (None: keep when > 0),
        ``{"*": t}`` and/or per category. (The authors' variant moves along
        ``min_similarity``.)
    trust : None or float in (0, 1]
        ``variant="paper"``: let a member keep its spans of a label it has
        earned trust on (tp / (n + 1) >= trust on the fitting documents, or its
        category's) where the templates leave their tokens O or kept only
        spans inside them (``ensemble.trust``); None: the templates' own rule.
        Chosen by cross-validation (default grid: ``ensemble.trust.TRUST_GRID``).
    """

    reads_member_confidences = False  # spans (votes) only

    name = "decision-templates"
    description = "nearest decision template per candidate span (paper: Hamming; authors: cosine, relabelled)"

    _parameter_constraints = {"variant": [Options(*VARIANTS)], "overlap": [Options("greedy", "chain")],
                              "min_similarity": [Interval(float, 0, 1, closed="left")],
                              "operating_point": [OPERATING_POINT], "trust": TRUST}

    def __init__(self, variant="paper", min_similarity=0.5, overlap="greedy", operating_point=None, trust=None):
        self._store_params(locals())

    @property
    def scored(self) -> bool:  # the authors' variant moves along its min_similarity parameter instead
        return self.variant == "paper"

    sweeps_base = True

    def check_params(self) -> None:
        if self.operating_point and self.variant != "paper":
            raise ValueError("decision-templates: operating_point needs variant='paper' "
                             "(the authors' variant moves along min_similarity)")
        if self.trust is not None and self.variant != "paper":
            raise ValueError("decision-templates: trust needs variant='paper' (the authors' variant relabels spans)")

    def default_grid(self, n_members: int) -> dict[str, list]:
        if self.variant == "authors":
            return {"min_similarity": [0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.8]}
        return {"trust": list(TRUST_GRID)}

    def _fit_prepared(self, table: CandidateTable) -> None:
        self._member_ranks(table)
        if self.variant == "authors":
            self._fit_authors(table)
            return
        self._learn_trust(table)
        prof = profiles(table.votes)
        self.template_true_ = prof[table.gold].mean(axis=0) if table.gold.any() else None
        self.template_false_ = prof[~table.gold].mean(axis=0) if (~table.gold).any() else None

    def _predict_raw(self, table: CandidateTable):
        if self.variant == "authors":
            return self._predict_authors(table)
        d_true, d_false = self.distances(table)
        if self.operating_point:
            return self._select(table, self._scores(table), [self.operating_point])[0]
        keep = d_true < d_false
        count = table.vote_count
        priority = voting_priority(count, best_voter_rank(table.votes, self.member_rank_), table.n_members)
        return self._trusted(table, resolve(table, keep, priority, self.overlap, count))

    # The score (paper variant): how much nearer the True template is.
    def _scores(self, table: CandidateTable) -> np.ndarray:
        d_true, d_false = self.distances(table)
        with np.errstate(invalid="ignore"):
            score = d_false - d_true
        return np.where(np.isnan(score), -np.inf, score)

    score_meaning = ("the distance to the False template minus the distance to the True one: at most twice the "
                     "number of members either way")

    def score_range(self) -> tuple[float, float]:
        # A profile and a template hold two entries in [0, 1] per member: a city-block distance is at most 2m.
        self.check_fitted()
        m = float(len(self.member_names_))
        return -2 * m, 2 * m

    def _select(self, table, scores, points):
        return self._trusted(table, select_kept_by_votes(table, self._keep(table, scores, points, scores > 0),
                                                         self.member_rank_, self.overlap))

    def _raw_to_predictions(self, table, raw):
        if self.variant == "authors":
            kept, selected, similarity = raw
            return kept.to_predictions(selected, np.clip(similarity, 0.0, 1.0))
        return table.to_predictions(raw)

    def _tally(self, table, raw):
        if self.variant == "authors":
            kept, selected, _ = raw
            return super()._tally(kept, selected)
        return super()._tally(table, raw)

    def _raw_counts(self, table, raw):
        if self.variant == "authors":
            kept, selected, _ = raw
            return kept.counts(selected)
        return table.counts(raw)

    # --- the paper's variant ---------------------------------------------------
    def distances(self, table: CandidateTable) -> tuple[np.ndarray, np.ndarray]:
        """(distance to the True template, distance to the False template); inf
        where a class has no template."""
        self.check_fitted()
        prof = profiles(table.votes)
        inf = np.full(len(table), np.inf)
        d_true = inf if self.template_true_ is None else hamming(prof, self.template_true_)
        d_false = inf if self.template_false_ is None else hamming(prof, self.template_false_)
        return d_true, d_false

    # --- the authors' variant -------------------------------------------------
    def _features(self, table: CandidateTable, spans: Spans) -> np.ndarray:
        """(s, m, F) binary profiles over the fitted features (subtypes, then
        categories); a subtype or category unseen in fit has no column."""
        m = table.n_members
        types, cats = len(self.types_), len(self.categories_)
        type_col = np.array([self.types_.get(split_label(lab)[1], -1) for lab in table.labels] + [-1])
        cat_col = np.array([self.categories_.get(split_label(lab)[0], -1) for lab in table.labels] + [-1])
        feats = np.zeros((len(spans), m, types + cats))
        s_idx, j_idx = np.nonzero(spans.voters)
        labels = spans.member_label[s_idx, j_idx]
        for cols, offset in ((type_col, 0), (cat_col, types)):
            c = cols[labels]
            ok = c >= 0
            feats[s_idx[ok], j_idx[ok], offset + c[ok]] = 1.0
        return feats

    def _fit_authors(self, table: CandidateTable) -> None:
        spans = Spans.of(table)
        gold = [sorted(gold_keys(d)) for d in table.documents]
        class_labels = sorted({f"{cat}:{typ}" for keys in gold for (_, _, cat, typ) in keys})
        # Feature vocabulary: every subtype and category the members or the gold use.
        names = [split_label(lab) for lab in table.labels] + [split_label(lab) for lab in class_labels]
        self.types_ = {t: i for i, t in enumerate(sorted({t for _, t in names}))}
        self.categories_ = {c: i for i, c in enumerate(sorted({c for c, _ in names}))}
        self.classes_ = [NONE, *class_labels]
        feats = self._features(table, spans)
        weights = 1.0 / (np.arange(table.n_members) + 1.0)
        weighted = feats * weights[None, :, None]

        at_span = {(int(d), int(a), int(b)): s for s, (d, a, b) in
                   enumerate(zip(spans.doc.tolist(), spans.char_start.tolist(), spans.char_end.tolist()))}
        class_index = {lab: i for i, lab in enumerate(self.classes_)}
        sums = np.zeros((len(self.classes_), *feats.shape[1:]))
        counts = np.zeros(len(self.classes_))
        is_gold_span = np.zeros(len(spans), dtype=bool)
        for d, keys in enumerate(gold):
            for start, end, cat, typ in keys:
                c = class_index[f"{cat}:{typ}"]
                counts[c] += 1  # a gold span no member found adds an empty profile
                s = at_span.get((d, start, end))
                if s is not None:
                    sums[c] += weighted[s]
                    is_gold_span[s] = True
        sums[0] = weighted[~is_gold_span].sum(axis=0)
        counts[0] = np.count_nonzero(~is_gold_span)
        self.templates_ = (sums / np.maximum(counts, 1)[:, None, None]).reshape(len(self.classes_), -1)
        self.class_counts_ = counts.astype(np.int64)

    def similarities(self, table: CandidateTable) -> tuple[Spans, np.ndarray]:
        """The distinct spans of ``table`` and their (s, classes) cosine
        similarities to the templates (-1 for a template without features)."""
        self.check_fitted()
        spans = Spans.of(table)
        feats = self._features(table, spans).reshape(len(spans), self.templates_.shape[1])
        norm_profile = np.sqrt(2.0 * spans.voters.sum(axis=1))  # each voter sets a subtype and a category
        norm_template = np.linalg.norm(self.templates_, axis=1)
        dot = feats @ self.templates_.T
        with np.errstate(divide="ignore", invalid="ignore"):
            sim = dot / (norm_profile[:, None] * norm_template[None, :])
        sim[:, norm_template == 0] = -1.0
        return spans, sim

    def _predict_authors(self, table: CandidateTable):
        spans, sim = self.similarities(table)
        best = sim.argmax(axis=1) if len(spans) else np.zeros(0, np.int64)  # first maximum: NONE, then label order
        score = sim[np.arange(len(spans)), best] if len(spans) else np.zeros(0)
        keep = (best != 0) & (score > self.min_similarity)
        kept = self._relabelled(table, spans, keep, best)
        similarity = score[keep]
        # Higher similarity first; equal: the better best voter (rank 0 = best).
        voter_rank = best_voter_rank(spans.voters[keep], self.member_rank_)
        order = np.lexsort((-voter_rank, similarity))
        priority = np.empty(len(order), dtype=np.int64)
        priority[order] = np.arange(len(order))
        selected = resolve(kept, np.ones(len(kept), dtype=bool), priority, self.overlap, similarity)
        return kept, selected, similarity

    def _relabelled(self, table: CandidateTable, spans: Spans, keep: np.ndarray, best: np.ndarray) -> CandidateTable:
        """A candidate table of the kept spans, each with its chosen class."""
        chosen = [self.classes_[c] for c in best[keep].tolist()]
        labels = sorted(set(table.labels) | set(chosen))
        index = {lab: i for i, lab in enumerate(labels)}
        label = np.array([index[lab] for lab in chosen], dtype=np.int64)
        doc = spans.doc[keep]
        keys = [gold_keys(d) for d in table.documents]
        gold = np.array([(a, b, *split_label(lab)) in keys[d] for d, a, b, lab in
                         zip(doc.tolist(), spans.char_start[keep].tolist(), spans.char_end[keep].tolist(), chosen)],
                        dtype=bool)
        return CandidateTable(table.member_names, table.documents, labels, table.tok_base, doc, spans.first[keep],
                              spans.stop[keep], label, spans.voters[keep], gold, table.n_gold)
