"""What model selection maximises: one objective for every meta-learner.

An objective is written as a string (``--objective``, a study's
``objective``, ``GridSearch(objective=...)``)::

    objective := clause ("," CATEGORIES "=" clause)*
    clause    := [criterion ":"] target
    criterion := strict | token | binary-token          (default strict)
    target    := f1 | f2 | f<beta>                      F-beta (f0.5, f3, ...)
               | recall                                 recall alone (today's "recall")
               | recall>=R   (or recall@R)              the highest precision with recall >= R
               | precision>=P (or precision@P)          the highest recall with precision >= P
    CATEGORIES := NAME+ID+CONTACT ...                   parent categories, joined by "+"

Examples: ``f1`` (the default: strict micro F1, the [KIM20] choice),
``binary-token:recall>=0.99`` (leak first: at most 1% of PHI tokens missed,
then as precise as possible), ``f1,NAME+ID+CONTACT=token:recall>=0.99``
(the whole ensemble chosen for strict F1, then a decision threshold per named
category chosen for its own target).

A constrained target that no setting reaches on the data it is evaluated on
is not an error: the setting closest to it (highest recall for ``recall>=``,
highest precision for ``precision>=``) wins, and :attr:`Choice.reached` says
so. Scores are tuples compared lexicographically: feasible settings beat
infeasible ones, then the target's own figure, then the other one.

Counts (:class:`Tally`): for each criterion, ``(tp_sys, n_sys, tp_gold,
n_gold)``: precision is tp_sys / n_sys and recall tp_gold / n_gold. They
differ only for the binary criterion per category (a system token of one
category may match a gold token of another).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from ..errors import EnsembleDeidError
from ..evaluation.metrics import f_beta

CRITERIA = ("strict", "token", "binary-token")
DEFAULT = "f1"
_TARGET = re.compile(r"^(?:f(?P<beta>\d+(?:\.\d+)?)|(?P<plain>recall)|(?P<bound>recall|precision)\s*(?:>=|@)\s*(?P<value>\d*\.?\d+))$")


class ObjectiveError(EnsembleDeidError, ValueError):
    """An objective string that cannot be read (the message names it)."""


@dataclass(frozen=True)
class Target:
    """One clause: a criterion and what to maximise on it."""

    criterion: str = "strict"
    kind: str = "f"  # f | recall | recall>= | precision>=
    beta: float = 1.0
    bound: float = 0.0

    def __str__(self) -> str:
        if self.kind == "f":
            beta = f"{self.beta:g}"
            body = f"f{beta}"
        elif self.kind == "recall":
            body = "recall"
        else:
            body = f"{self.kind}{self.bound:g}"
        return body if self.criterion == "strict" else f"{self.criterion}:{body}"

    @property
    def constrained(self) -> bool:
        return self.kind in ("recall>=", "precision>=")

    def score(self, counts: tuple) -> tuple:
        """A sortable score of ``(tp_sys, n_sys, tp_gold, n_gold)`` (higher is better)."""
        tp_sys, n_sys, tp_gold, n_gold = counts
        p = tp_sys / n_sys if n_sys else 0.0
        r = tp_gold / n_gold if n_gold else 0.0
        if self.kind == "f":
            if tp_sys == tp_gold:  # the strict micro formula of today's metric, to the last bit
                b2 = self.beta * self.beta
                tp, fp, fn = tp_sys, n_sys - tp_sys, n_gold - tp_gold
                denom = (1 + b2) * tp + b2 * fn + fp
                return ((1 + b2) * tp / denom if denom else 0.0,)
            return (f_beta(p, r, self.beta),)
        if self.kind == "recall":
            return (r,)
        if self.kind == "recall>=":
            return (1, p, r) if r >= self.bound else (0, r, p)
        return (1, r, p) if p >= self.bound else (0, p, r)

    def reached(self, counts: tuple) -> bool:
        return self.is_reached(self.score(counts))

    def is_reached(self, score: tuple) -> bool:
        return not self.constrained or score[0] == 1

    def figure(self, score: tuple) -> float:
        """The figure a score maximises: F-beta or recall; for a constrained
        target the one it trades (precision for recall>=, recall for precision>=)."""
        if not self.constrained:
            return float(score[0])
        return float(score[1] if score[0] == 1 else score[2])


@dataclass(frozen=True)
class Objective:
    """The base clause, and per-category clauses (parent category -> Target)."""

    base: Target = Target()
    categories: Mapping[str, Target] = field(default_factory=dict)

    def __str__(self) -> str:
        parts = [str(self.base)]
        grouped: dict[Target, list[str]] = {}
        for cat, target in sorted(self.categories.items()):
            grouped.setdefault(target, []).append(cat)
        parts += [f"{'+'.join(cats)}={target}" for target, cats in grouped.items()]
        return ",".join(parts)

    def __hash__(self) -> int:
        return hash(str(self))

    def __eq__(self, other) -> bool:
        return isinstance(other, Objective) and str(self) == str(other)

    @property
    def is_default(self) -> bool:
        """Plain strict F1 (today's choice: no decision threshold is searched)."""
        return self.base == Target() and not self.categories

    @property
    def criteria(self) -> tuple[str, ...]:
        used = {self.base.criterion, *(t.criterion for t in self.categories.values())}
        return tuple(c for c in CRITERIA if c in used)

    def score(self, tally: "Counts") -> tuple:
        return self.base.score(tally.overall[self.base.criterion])

    def category_score(self, category: str, tally: "Counts") -> tuple:
        target = self.categories[category]
        return target.score(tally.by_category[target.criterion].get(category, (0, 0, 0, 0)))


def best_index(scores: Sequence[tuple]) -> int:
    """The index of the highest score; ties: the earliest."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def _target(text: str, whole: str) -> Target:
    criterion = "strict"
    body = text.strip()
    if ":" in body:
        criterion, body = (x.strip() for x in body.split(":", 1))
        criterion = criterion.lower().replace("_", "-")
        if criterion not in CRITERIA:
            raise ObjectiveError(f"objective {whole!r}: unknown criterion {criterion!r}; expected one of "
                                 f"{', '.join(CRITERIA)}")
    match = _TARGET.match(body.lower())
    if not match:
        raise ObjectiveError(f"objective {whole!r}: cannot read {body!r}; expected f1, f2, f<beta>, recall, "
                             "recall>=R or precision>=P (R, P in (0, 1]), optionally after strict:, token: or "
                             "binary-token:")
    if match["beta"] is not None:
        beta = float(match["beta"])
        if beta <= 0:
            raise ObjectiveError(f"objective {whole!r}: beta must be positive, not {beta:g}")
        return Target(criterion, "f", beta)
    if match["plain"]:
        return Target(criterion, "recall")
    bound = float(match["value"])
    if not 0 < bound <= 1:
        raise ObjectiveError(f"objective {whole!r}: the bound {bound:g} must be in (0, 1]")
    return Target(criterion, f"{match['bound']}>=", 1.0, bound)


def parse_objective(text) -> Objective:
    """An :class:`Objective` from its string (an Objective is returned as is).
    A bad string is an :class:`ObjectiveError` naming it."""
    if isinstance(text, Objective):
        return text
    if not isinstance(text, str) or not text.strip():
        raise ObjectiveError(f"objective {text!r}: expected a string such as 'f1' or 'binary-token:recall>=0.99'")
    clauses = [c for c in text.split(",")]
    base = _target(clauses[0], text)
    categories: dict[str, Target] = {}
    for clause in clauses[1:]:
        if "=" not in clause.replace(">=", ""):
            raise ObjectiveError(f"objective {text!r}: {clause.strip()!r} names no categories "
                                 "(write e.g. NAME+ID=token:recall>=0.99)")
        at = re.search(r"(?<![<>])=", clause)
        cats, body = clause[:at.start()], clause[at.end():]
        names = [c.strip().upper() for c in cats.split("+") if c.strip()]
        if not names:
            raise ObjectiveError(f"objective {text!r}: {clause.strip()!r} names no categories")
        target = _target(body, text)
        for name in names:
            if name in categories:
                raise ObjectiveError(f"objective {text!r}: category {name} has two targets")
            categories[name] = target
    return Objective(base, categories)


def check_objective(text) -> str:
    """The canonical string of a valid objective (for parameters and cache keys)."""
    return str(parse_objective(text))


# --- counting --------------------------------------------------------------------

_ALNUM = re.compile(r"[a-zA-Z0-9]+")


def token_keys(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The token criterion's tokens of a tag: ``[a-zA-Z0-9]+`` runs of its
    covered text (cut at its edges), or one empty token at its end."""
    out = [(start + m.start(), start + m.end()) for m in _ALNUM.finditer(text[start:end])]
    return out or [(min(end, start + len(text[start:end])),) * 2]


@dataclass
class Counts:
    """Counts of one output: criterion -> (tp_sys, n_sys, tp_gold, n_gold),
    overall and per parent category."""

    overall: dict[str, tuple]
    by_category: dict[str, dict[str, tuple]]


class GoldKeys:
    """The gold keys of some documents under the three criteria."""

    def __init__(self, documents: Sequence):
        self.documents = list(documents)
        self.strict: list[dict[tuple, str]] = []
        self.token: list[dict[tuple, str]] = []
        self.binary: list[dict[tuple, set]] = []
        for doc in self.documents:
            strict, token, binary = {}, {}, {}
            for a in doc.annotations:
                cat = a.category.upper()
                strict[(a.start, a.end, cat, a.type.upper())] = cat
                for s, e in token_keys(doc.text, a.start, a.end):
                    token[(a.category, a.type, s, e)] = cat
                    binary.setdefault((s, e), set()).add(cat)
            self.strict.append(strict)
            self.token.append(token)
            self.binary.append(binary)

    def totals(self) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """Gold counts per criterion, overall and per category."""
        overall = {"strict": 0, "token": 0, "binary-token": 0}
        per: dict[str, dict[str, int]] = {c: {} for c in CRITERIA}
        for strict, token, binary in zip(self.strict, self.token, self.binary):
            for name, keys in (("strict", strict), ("token", token)):
                overall[name] += len(keys)
                for cat in keys.values():
                    per[name][cat] = per[name].get(cat, 0) + 1
            overall["binary-token"] += len(binary)
            for cats in binary.values():
                for cat in cats:
                    per["binary-token"][cat] = per["binary-token"].get(cat, 0) + 1
        return overall, per

    def span_contributions(self, d: int, start: int, end: int, category: str, type_: str):
        """What one system span of document ``d`` adds, per criterion:
        (tp_sys, n_sys, {gold category: tp_gold})."""
        text = self.documents[d].text
        cat = category.upper()
        out = {}
        hit = self.strict[d].get((start, end, cat, type_.upper()))
        out["strict"] = (int(hit is not None), 1, {hit: 1} if hit is not None else {})
        toks = token_keys(text, start, end)
        tok_hits: dict[str, int] = {}
        bin_hits: dict[str, int] = {}
        tp_tok = tp_bin = 0
        for s, e in toks:
            g = self.token[d].get((category, type_, s, e))
            if g is not None:
                tp_tok += 1
                tok_hits[g] = tok_hits.get(g, 0) + 1
            cats = self.binary[d].get((s, e))
            if cats:
                tp_bin += 1
                for c in cats:
                    bin_hits[c] = bin_hits.get(c, 0) + 1
        out["token"] = (tp_tok, len(toks), tok_hits)
        out["binary-token"] = (tp_bin, len(toks), bin_hits)
        return out


def tally_spans(gold: GoldKeys, spans: Sequence[Sequence]) -> Counts:
    """Counts of per-document system spans (objects with start, end,
    category, type; non-overlapping, as every meta-learner outputs them)."""
    g_overall, g_per = gold.totals()
    sys_tp = {c: 0 for c in CRITERIA}
    sys_n = {c: 0 for c in CRITERIA}
    gold_tp = {c: 0 for c in CRITERIA}
    cat_sys: dict[str, dict[str, list]] = {c: {} for c in CRITERIA}
    cat_gold: dict[str, dict[str, int]] = {c: {} for c in CRITERIA}
    for d, doc_spans in enumerate(spans):
        for a in doc_spans:
            cat = a.category.upper()
            for crit, (tp, n, hits) in gold.span_contributions(d, a.start, a.end, a.category, a.type).items():
                sys_tp[crit] += tp
                sys_n[crit] += n
                gold_tp[crit] += tp
                row = cat_sys[crit].setdefault(cat, [0, 0])
                row[0] += tp
                row[1] += n
                for g, k in hits.items():
                    cat_gold[crit][g] = cat_gold[crit].get(g, 0) + k
    overall = {c: (sys_tp[c], sys_n[c], gold_tp[c], g_overall[c]) for c in CRITERIA}
    by_category = {}
    for c in CRITERIA:
        cats = set(g_per[c]) | set(cat_sys[c])
        by_category[c] = {k: (cat_sys[c].get(k, [0, 0])[0], cat_sys[c].get(k, [0, 0])[1],
                              cat_gold[c].get(k, 0), g_per[c].get(k, 0)) for k in cats}
    return Counts(overall, by_category)


@dataclass
class CandidateWeights:
    """Per candidate span, what selecting it adds (a selection of
    non-overlapping candidates adds up: tags on disjoint text have disjoint
    keys), so a selection's counts are dot products.

    ``tp``/``n``: (criteria, n) system-side; ``gold_hits``: (criteria, n,
    categories) gold-side true positives per gold category; ``category``:
    (n,) the candidate's own category index."""

    categories: list[str]
    tp: np.ndarray
    n: np.ndarray
    gold_hits: np.ndarray
    category: np.ndarray
    gold_overall: np.ndarray  # (criteria,)
    gold_per: np.ndarray  # (criteria, categories)

    @classmethod
    def of(cls, table) -> "CandidateWeights":
        gold = GoldKeys(table.documents)
        g_overall, g_per = gold.totals()
        labels = [lab.split(":", 1) for lab in table.labels]
        cats = sorted({c for per in g_per.values() for c in per} | {c.upper() for c, _ in labels})
        index = {c: i for i, c in enumerate(cats)}
        n = len(table)
        k = len(CRITERIA)
        tp = np.zeros((k, n), dtype=np.int64)
        size = np.zeros((k, n), dtype=np.int64)
        hits = np.zeros((k, n, len(cats)), dtype=np.int64)
        starts, ends = table.char_offsets()
        for i, (d, s, e, lab) in enumerate(zip(table.doc.tolist(), starts.tolist(), ends.tolist(),
                                                table.label.tolist())):
            cat, typ = labels[lab]
            for c, (t, m, h) in enumerate(gold.span_contributions(d, s, e, cat, typ).values()):
                tp[c, i], size[c, i] = t, m
                for g, v in h.items():
                    hits[c, i, index[g]] = v
        category = np.array([index[labels[lab][0].upper()] for lab in table.label.tolist()], dtype=np.int64)
        return cls(cats, tp, size, hits, category,
                   np.array([g_overall[c] for c in CRITERIA], dtype=np.int64),
                   np.array([[g_per[c].get(cat, 0) for cat in cats] for c in CRITERIA], dtype=np.int64))

    def subset(self, rows: np.ndarray, gold_overall: np.ndarray, gold_per: np.ndarray) -> "CandidateWeights":
        return CandidateWeights(self.categories, self.tp[:, rows], self.n[:, rows], self.gold_hits[:, rows],
                                self.category[rows], gold_overall, gold_per)

    def counts(self, selected: np.ndarray) -> list[Counts]:
        """Counts of each column of ``selected`` ((n,) or (n, k) boolean)."""
        sel = selected.reshape(len(self.category), -1).astype(np.int64)
        tp = self.tp @ sel  # (criteria, k)
        size = self.n @ sel
        hits = np.einsum("cnj,nk->cjk", self.gold_hits, sel)  # (criteria, categories, k)
        onehot = np.zeros((len(self.category), len(self.categories)), dtype=np.int64)
        onehot[np.arange(len(self.category)), self.category] = 1
        cat_tp = np.einsum("cn,nj,nk->cjk", self.tp, onehot, sel)
        cat_n = np.einsum("cn,nj,nk->cjk", self.n, onehot, sel)
        out = []
        for col in range(sel.shape[1]):
            overall = {c: (int(tp[i, col]), int(size[i, col]), int(tp[i, col]), int(self.gold_overall[i]))
                       for i, c in enumerate(CRITERIA)}
            by_category = {c: {cat: (int(cat_tp[i, j, col]), int(cat_n[i, j, col]), int(hits[i, j, col]),
                                     int(self.gold_per[i, j])) for j, cat in enumerate(self.categories)}
                           for i, c in enumerate(CRITERIA)}
            out.append(Counts(overall, by_category))
        return out


def category_of_labels(labels: Sequence[str]) -> list[str]:
    """The parent category (upper-cased) of each CATEGORY:TYPE label."""
    return [lab.split(":", 1)[0].upper() for lab in labels]


def add_counts(a: Counts | None, b: Counts) -> Counts:
    """Counts of two sets of documents together."""
    if a is None:
        return b
    plus = lambda x, y: tuple(i + j for i, j in zip(x, y))  # noqa: E731
    zero = (0, 0, 0, 0)
    return Counts({c: plus(a.overall[c], b.overall[c]) for c in a.overall},
                  {c: {k: plus(a.by_category[c].get(k, zero), b.by_category[c].get(k, zero))
                       for k in set(a.by_category[c]) | set(b.by_category[c])} for c in a.by_category})


def candidate_weights(table) -> CandidateWeights:
    """The weights of a candidate table, computed once per table (cached on it)."""
    weights = table.__dict__.get("_weights")
    if weights is None:
        weights = table.__dict__["_weights"] = CandidateWeights.of(table)
    return weights


def choose_category_points(objective: Objective, candidates: Sequence, base_point: dict | None, tallies_of):
    """For each category clause of ``objective``, the candidate threshold whose
    counts score best on that category, every other category at
    ``base_point``; ties: the earlier candidate. ``tallies_of(points)`` gives
    the (pooled) counts of a list of operating points. Returns the point and,
    per category, whether its target was reached."""
    point = dict(base_point or {})
    reached = {}
    for cat in sorted(objective.categories):
        points = [{**(base_point or {}), cat: float(t)} for t in candidates]
        scores = [objective.category_score(cat, t) for t in tallies_of(points)]
        best = best_index(scores)
        point[cat] = float(candidates[best])
        reached[cat] = objective.categories[cat].is_reached(scores[best])
    return point, reached
