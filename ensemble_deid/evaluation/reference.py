"""A straightforward reimplementation, one Python loop per criterion.

Written directly from the specification, with Python sets the way the
official program uses them (relaxed matching included: tags whose equality
ignores up to 2 characters of end difference). Slow; it exists as the oracle
the vectorised engine is tested against and as the baseline of the benchmark.
"""
from __future__ import annotations

import re
from typing import Mapping, Sequence

from ..corpus.document import Annotation, Document
from .criteria import Criterion, get_criterion
from .hipaa import age_only, age_over_limit, pair_passes
from .options import EvalOptions

ASCII_TOKEN = re.compile(r"[a-zA-Z0-9]+")
UNICODE_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str, start: int, end: int, ascii_only: bool = True) -> list[tuple[int, int]]:
    regex = ASCII_TOKEN if ascii_only else UNICODE_TOKEN
    covered = text[start:end]
    found = [(start + m.start(), start + m.end()) for m in regex.finditer(covered)]
    # no letter or digit: one empty token after the covered text (the official split)
    return found or [(start + len(covered), start + len(covered))]


def hipaa_keeps(ann: Annotation, text: str, options: EvalOptions) -> bool:
    if not pair_passes(ann.category, ann.type, options):
        return False
    if not options.hipaa_all_ages and age_only(ann.category, ann.type, options):
        return age_over_limit(text[ann.start:ann.end])
    return True


class FuzzyTag:
    """A tag whose equality tolerates 2 characters of end difference; its hash
    ignores the end (as the official relaxed mode does)."""

    __slots__ = ("head", "end")

    def __init__(self, head: tuple, end: int):
        self.head, self.end = head, end

    def __hash__(self) -> int:
        return hash(self.head)

    def __eq__(self, other) -> bool:
        return self.head == other.head and abs(self.end - other.end) <= 2


def _scope(anns, text, criterion: Criterion, options: EvalOptions):
    return [a for a in anns if not criterion.hipaa or hipaa_keeps(a, text, options)]


def key_set(anns: Sequence[Annotation], text: str, criterion: Criterion, options: EvalOptions) -> set:
    keys = set()
    for a in _scope(anns, text, criterion, options):
        if criterion.match == "token":
            for ts, te in tokens(text, a.start, a.end, options.ascii_token_regex):
                keys.add((ts, te) if criterion.binary else (a.category, a.type, ts, te))
        else:
            labelled = (a.category.upper(), a.start, a.end, a.type.upper())
            # binary: (start, end), but a <PHI> tag keeps its name and TYPE
            keys.add(labelled if not criterion.binary or labelled[0] == "PHI" else (a.start, a.end))
    return keys


def _relaxed_tags(anns, text, criterion, options):
    out = []
    for a in _scope(anns, text, criterion, options):  # given order: set building depends on it
        head = (a.category.upper(), a.start, a.type.upper())
        if criterion.binary and head[0] != "PHI":
            head = (a.start,)
        out.append(FuzzyTag(head, a.end))
    return out


def _max_matching(gold: list, system: list) -> int:
    """Size of a maximum one-to-one matching (augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set) -> bool:
        for j, s in enumerate(system):
            if j not in seen and gold[i] == s:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    return sum(augment(i, set()) for i in range(len(gold)))


def document_counts(gold_doc: Document, system_anns: Sequence[Annotation], criterion, options: EvalOptions):
    """(TP, FP, FN) of one document for a token, strict or relaxed criterion."""
    criterion = get_criterion(criterion)
    text = gold_doc.text
    if criterion.match == "relaxed":
        g_list = _relaxed_tags(gold_doc.annotations, text, criterion, options)
        s_list = _relaxed_tags(system_anns, text, criterion, options)
        if options.relaxed_many_to_one:
            g, s = set(g_list), set(s_list)
            # gold.intersection(system) walks the smaller set, as in Python 2.7
            # (the official program's) and 3. The differences are spelt out:
            # Python 3's set difference copies and discards instead when one
            # set is over 4 times the other, which 2.7 never does.
            return len(g.intersection(s)), sum(x not in g for x in s), sum(x not in s for x in g)
        # exact duplicates still collapse
        g_list = list({(t.head, t.end): t for t in g_list}.values())
        s_list = list({(t.head, t.end): t for t in s_list}.values())
        tp = _max_matching(g_list, s_list)
        return tp, len(s_list) - tp, len(g_list) - tp
    if criterion.match == "semeval":
        return semeval_document(gold_doc.annotations, system_anns, criterion.scheme)
    g = key_set(gold_doc.annotations, text, criterion, options)
    s = key_set(system_anns, text, criterion, options)
    return len(g & s), len(s - g), len(g - s)


def semeval_document(gold: Sequence[Annotation], system: Sequence[Annotation], scheme: str):
    """nervaluate-style outcomes of one document -> (TP, FP, FN) equivalents."""
    def label(a):
        return (a.category.upper(), a.type.upper())

    G = sorted({(a.start, a.end, label(a)) for a in gold})
    S = sorted({(a.start, a.end, label(a)) for a in system})
    cor = inc = par = spu = 0
    matched = set()
    for p in S:
        if p in G:
            cor += 1
            matched.add(p)
            continue
        for t in G:
            if t[0] == p[0] and t[1] == p[1]:
                matched.add(t)
                if scheme in ("exact", "partial"):
                    cor += 1
                else:
                    inc += 1
                break
            if t[0] < p[1] and p[0] < t[1]:
                matched.add(t)
                if scheme == "partial":
                    par += 1
                elif scheme == "type" and t[2] == p[2]:
                    cor += 1
                else:
                    inc += 1
                break
        else:
            spu += 1
    mis = len(G) - len(matched)
    tp = cor + 0.5 * par if scheme == "partial" else cor
    return tp, cor + inc + par + spu - tp, cor + inc + par + mis - tp


def corpus_counts(gold: Sequence[Document], system: Mapping[str, Sequence[Annotation]], criterion, options=EvalOptions()):
    """Per-document (TP, FP, FN) for gold documents (missing system = empty)."""
    return [document_counts(d, system.get(d.id, ()), criterion, options) for d in gold]


def micro_macro(rows):
    """Official micro P/R/F1 and macro P/R (means, population SDs)."""
    tp = sum(r[0] for r in rows)
    fp = sum(r[1] for r in rows)
    fn = sum(r[2] for r in rows)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    ps = [(a / (a + b) if a + b else 0.0) for a, b, _ in rows]
    rs = [(a / (a + c) if a + c else 0.0) for a, _, c in rows]

    def mean_sd(xs):
        if not xs:
            return 0.0, 0.0
        m = sum(xs) / len(xs)
        return m, (sum((x - m) ** 2 for x in xs) / len(xs)) ** 0.5

    return {"micro": (p, r, f), "macro_p": mean_sd(ps), "macro_r": mean_sd(rs)}


def leak_counts(gold: Sequence[Document], system: Mapping[str, Sequence[Annotation]], ascii_only: bool = True):
    """(tokens, leaked tokens, chars, leaked chars) over all gold PHI."""
    n_tok = n_tok_leak = n_chr = n_chr_leak = 0
    for d in gold:
        covered = set()
        for a in system.get(d.id, ()):
            covered.update(range(a.start, a.end))
        phi_chars, toks = set(), set()
        for a in d.annotations:
            phi_chars.update(i for i in range(a.start, a.end) if not d.text[i].isspace())
            toks.update(t for t in tokens(d.text, a.start, a.end, ascii_only) if t[1] > t[0])
        n_chr += len(phi_chars)
        n_chr_leak += len(phi_chars - covered)
        n_tok += len(toks)
        n_tok_leak += sum(1 for ts, te in toks if not all(i in covered for i in range(ts, te)))
    return n_tok, n_tok_leak, n_chr, n_chr_leak
