"""Per-label member trust: a member precise on a label may veto ``O``.

A vote-based ensemble drops a span that only one member found, however
reliable that member is on its label: the rule tagger finds social security
numbers, e-mail addresses and phone numbers with no false positive, and the
learned members, which miss most of them, outvote it. With ``trust=p`` a
span-level method learns, on the documents it is fitted on (the members'
out-of-fold predictions), which (member, label) pairs have earned trust:

    trusted  <=>  tp / (n + 1) >= p

where n is the number of spans of that label the member predicted and tp how
many of them are strict gold matches. The ``+ 1`` counts one false positive
not seen yet, so that a handful of lucky spans never earn trust (p = 0.95
needs at least 19 spans, all correct).

Rare labels back off to their category (the part before ``:``, as
``objective.category_of_labels`` names it: i2b2, N-GRID and MEDDOCAN labels
are all ``CATEGORY:TYPE``). A training corpus may hold 4 e-mail addresses:
4 / 5 = 0.8 can never earn 0.9, although the rule tagger found each one and
is precise on the whole CONTACT category. So a pair is also trusted when

    tp_c / (n_c + 1) >= p   and   tp = n

with tp_c, n_c the member's counts pooled over every label of the category:
the category earns the trust, and the member was never wrong on the label
itself. The second condition keeps the back-off from lending a category's
trust to a label the member is imprecise on (one wrong span of the label
withholds it, however many correct spans the category holds). A label the
member never predicted in training (n = 0), or that the training notes never
held at all (a corpus without social security numbers: in a category whose
labels are all i2b2 ones, every subtype of it in ``corpus.document.I2B2_SCHEME``
is a label of it),
is trusted by its category alone: the category's evidence is all there is,
and without trust no member could ever keep it against the others, who
cannot have learned it either. When
predicting, a trusted member's span of its trusted label is kept where the
method's own output leaves every token of it ``O``, and also where every span
the method kept inside its tokens lies strictly within it: the trusted span
then replaces them. An ensemble that tags two tokens of a four-token social
security number as a date leaves the other two readable after masking; the
trusted span covers all four (for mask and surrogate output, what is covered
is what counts). A trusted span never replaces a kept span of the same
extent, nor one that reaches outside it, so trust never uncovers a token the
method covered. Of two overlapping trusted spans, one that strictly contains
the other (and every kept or trusted span it overlaps) wins for the same
reason; otherwise the one with more votes, then the better member, as in
voting.

``trust=None`` (the default of a method) is the method's own rule, unchanged.
Which p, if any, is chosen by cross-validation like any other parameter
(``GridSearch`` over the method's default grid, ``None`` first so that a tie
keeps the method's own rule).
"""
from __future__ import annotations

from typing import Callable, Collection, Sequence

import numpy as np

from .candidates import CandidateTable, best_voter_rank, resolve_overlaps, voting_priority
from .objective import category_of_labels
from .splits import fold_indices, make_folds
from ..corpus.document import I2B2_SCHEME
from ..taggers.constraints import Interval

# The values cross-validation chooses from (None first: ties keep the method's own rule).
TRUST_GRID = (None, 0.99, 0.95, 0.9, 0.8)
TRUST = [None, Interval(float, 0, 1, closed="right")]  # the parameter's declared constraint
TRUST_FOLDS = 10  # folds of choose_trust (fewer when there are fewer patients)
# Which rule trusted_pairs applies, in the cache key of every search that may trust
# (run.key_settings): bump it when the rule changes, so no ensemble fitted under an
# earlier rule is reused; methods that never trust keep their key. 2: category back-off;
# 3: a trusted span replaces the kept spans strictly inside it, 0.8 is in the grid, and a
# category's trust covers the labels its member never predicted.
TRUST_RULE = 3


def trusted_pairs(table: CandidateTable, trust: float, allowed: Collection[str] | None = None) -> list[list]:
    """[member name, label] pairs trusted at level ``trust`` on ``table``: by
    the label's own spans, tp / (n + 1) >= ``trust``, or by its category's,
    where the member was never wrong on the label (module docstring; the
    labels are the table's and, in its i2b2-scheme categories, the scheme's
    other subtypes); in member
    then label order; ``allowed``: only these members (None: all)."""
    pairs = []
    if not len(table):
        return pairs
    # (labels, members) counts: spans predicted and spans equal to a gold span; labels the
    # table never holds (a subtype of one of its categories) have none.
    labels = list(table.labels)
    held = category_of_labels(table.labels)
    for cat in dict.fromkeys(held):
        scheme = [f"{cat}:{sub}" for sub in I2B2_SCHEME.get(cat, ())]
        if all(lab.upper() in scheme for lab, c in zip(table.labels, held) if c == cat):  # an i2b2-scheme category
            labels += [lab for lab in scheme if lab not in table.labels]
    n = np.zeros((len(labels), table.n_members), dtype=np.int64)
    tp = np.zeros_like(n)
    np.add.at(n, table.label, table.votes.astype(np.int64))
    np.add.at(tp, table.label, (table.votes & table.gold[:, None]).astype(np.int64))
    # The category's evidence counts a span of the right extent and category as correct
    # whatever its subtype (an account number the annotators called IDNUM is still an ID).
    in_category = np.zeros_like(n)
    np.add.at(in_category, table.label, (table.votes & table.gold_category[:, None]).astype(np.int64))
    categories = np.array(category_of_labels(labels), dtype=object)
    n_cat, tp_cat = np.zeros_like(n), np.zeros_like(tp)
    for cat in set(categories.tolist()):
        rows = categories == cat
        n_cat[rows], tp_cat[rows] = n[rows].sum(axis=0), in_category[rows].sum(axis=0)
    by_label = tp >= trust * (n + 1)
    by_category = (tp == n) & (tp_cat >= trust * (n_cat + 1))
    for lab_id, j in zip(*np.nonzero(by_label | by_category)):
        if allowed is None or table.member_names[j] in allowed:
            pairs.append([table.member_names[j], labels[lab_id]])
    return sorted(pairs, key=lambda p: (table.member_names.index(p[0]), p[1]))


def trusted_candidates(table: CandidateTable, pairs: Sequence[Sequence[str]]) -> np.ndarray:
    """(n,) candidates predicted by a member on a label it is trusted on.
    Members or labels the table does not hold are ignored."""
    out = np.zeros(len(table), dtype=bool)
    label_index = {lab: i for i, lab in enumerate(table.labels)}
    for member, label in pairs:
        if member in table.member_names and label in label_index:
            out |= table.votes[:, table.member_names.index(member)] & (table.label == label_index[label])
    return out


def veto_outside(table: CandidateTable, selected: np.ndarray, pairs: Sequence[Sequence[str]],
                 rank: np.ndarray) -> np.ndarray:
    """``selected`` (non-overlapping candidates, (n,) or (n, k)) plus every
    trusted candidate that overlaps none of them, or strictly contains each
    selected or trusted one it overlaps (replacing those); other trusted
    candidates that overlap each other are resolved by voting priority
    (``rank``: the members' ranks, 0 = best)."""
    if not pairs or not len(table):
        return selected
    trusted = trusted_candidates(table, pairs)
    if not trusted.any():
        return selected
    flat = selected.ndim == 1
    sel = selected[:, None] if flat else selected
    base = voting_priority(table.vote_count, best_voter_rank(table.votes, rank), table.n_members)
    top = int(base.max()) + 1 if len(base) else 1
    # Trusted spans that enclose the kept ones they overlap first, then the method's own
    # spans (which never overlap each other), then the other trusted ones.
    priority = base[:, None] + sel.astype(np.int64) * top + enclosing(table, trusted, sel) * (2 * top)
    out = resolve_overlaps(table, sel | trusted[:, None], priority)
    return out[:, 0] if flat else out


def enclosing(table: CandidateTable, trusted: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """(n, k) int: 1 where a trusted candidate, not selected in column k,
    overlaps a selected or trusted candidate and strictly contains every
    selected or trusted candidate it overlaps."""
    a, b = table.pairs  # every overlapping (a, b), both ways
    keep = trusted[a]
    a, b = a[keep], b[keep]
    inside = (table.first[b] >= table.first[a]) & (table.stop[b] <= table.stop[a]) \
        & (table.stop[b] - table.first[b] < table.stop[a] - table.first[a])
    hit = selected[b] | trusted[b, None]  # (pairs, k): what a competes with
    competes = np.zeros(selected.shape, dtype=bool)
    escapes = np.zeros(selected.shape, dtype=bool)  # a competitor reaches outside a
    np.logical_or.at(competes, a, hit)
    np.logical_or.at(escapes, a, hit & ~inside[:, None])
    return (trusted[:, None] & competes & ~escapes & ~selected).astype(np.int64)


def choose_trust(table: CandidateTable, own: Callable[[CandidateTable], np.ndarray], rank: np.ndarray,
                 seed: int = 0, allowed: Collection[str] | None = None) -> float | None:
    """The trust level of ``TRUST_GRID`` with the best strict F1 pooled over
    patient-grouped folds of ``table``: each fold's pairs are learned on the
    other folds and applied to it, on top of ``own`` (the method's output,
    fitted once on the whole table: a method whose own fit is too costly to
    repeat per fold and per level). Ties: the earlier value (None first)."""
    try:
        folds = make_folds(table.documents, TRUST_FOLDS, seed)
    except ValueError:  # a single patient: nothing to cross-validate on
        return None
    splits = [(table.subset(a), table.subset(b)) for a, b in fold_indices(table.documents, folds) if len(a) and len(b)]
    held_out = [(fit_on, test, own(test)) for fit_on, test in splits]
    best, best_f1 = None, -1.0
    for trust in TRUST_GRID:
        tp = fp = fn = 0
        for fit_on, test, mine in held_out:
            pairs = trusted_pairs(fit_on, trust, allowed) if trust is not None else []
            a, b, c = test.counts(veto_outside(test, mine, pairs, rank))
            tp, fp, fn = tp + a, fp + b, fn + c
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best_f1:
            best, best_f1 = trust, f1
    return best


def pairs_by_member(pairs: Sequence[Sequence[str]]) -> list[tuple[str, list[str]]]:
    """Trusted pairs grouped by member, in order: [(member, labels)], a
    category whose every i2b2 subtype is trusted shown as CAT:*."""
    by_member: dict[str, list[str]] = {}
    for member, label in pairs:
        by_member.setdefault(member, []).append(label)
    out = []
    for member, labels in by_member.items():
        shown = []
        cats = category_of_labels(labels)
        for cat in dict.fromkeys(cats):
            mine = [lab for lab, c in zip(labels, cats) if c == cat]
            every = {f"{cat}:{sub}" for sub in I2B2_SCHEME.get(cat, ())}
            shown += [f"{cat}:*"] if len(every) > 1 and every <= set(mine) else mine
        out.append((member, shown))
    return out


def describe_pairs(pairs: Sequence[Sequence[str]]) -> str:
    """Trusted pairs for people, in a line: "rules on ID:* and CONTACT:EMAIL;
    svm on DATE:DATE"."""
    return "; ".join(f"{member} on " + (" and ".join(shown) if len(shown) < 3 else ", ".join(shown))
                     for member, shown in pairs_by_member(pairs))


def trusted_members(method) -> set[str]:
    """Members whose spans a fitted method may keep through trust."""
    return {member for member, _ in (getattr(method, "trusted_", None) or [])}
