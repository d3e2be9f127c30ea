"""Paired significance tests between two systems scored on the same documents.

Every test works on per-document counts (true positives, false positives,
false negatives of one criterion, strict by default) of systems A and B over
the same test documents, in the same order:

- ``paired_t_test``: the test of [KIM20]. What is paired: each document's F1
  under A with its F1 under B (a document with no gold and no predicted span
  counts as F1 = 1; with gold or predictions but no true positive, F1 = 0).
  Two-sided ``scipy.stats.ttest_rel``; identical scores give p = 1.
- ``approximate_randomization``: the statistic is |micro F1(A) - micro F1(B)|;
  each trial swaps the two systems' counts on a random half of the documents
  (document-level swaps). p = (hits + 1) / (trials + 1). ``exact=True``
  enumerates all 2^n swaps (small n only).
- ``paired_bootstrap``: documents resampled with replacement; the confidence
  interval of micro F1(A) - micro F1(B) from percentiles, and a two-sided
  p-value from the share of resamples on either side of zero.
- ``paired_degradation``: does A lose more F1 than B between two versions of
  the same documents (original and shifted)? The statistic is
  drop(A) - drop(B), drop = micro F1 on the original minus on the shifted
  copy; each trial swaps A and B on a random half of the documents, in both
  versions at once (approximate randomization of the interaction).
- ``holm``: Holm-Bonferroni adjustment of the p-values of one table.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class PairedCounts:
    """Per-document (tp, fp, fn) of two systems on the same documents."""

    a: np.ndarray  # shape (n_docs, 3)
    b: np.ndarray

    def __post_init__(self):
        a, b = np.asarray(self.a, dtype=np.int64), np.asarray(self.b, dtype=np.int64)
        if a.shape != b.shape or a.ndim != 2 or a.shape[1] != 3:
            raise ValueError(f"counts must both be (n_docs, 3); got {a.shape} and {b.shape}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)

    @classmethod
    def from_document_counts(cls, a, b) -> "PairedCounts":
        """From two objects with per-document ``tp``, ``fp``, ``fn`` arrays."""
        return cls(np.column_stack([a.tp, a.fp, a.fn]), np.column_stack([b.tp, b.fp, b.fn]))

    @property
    def n(self) -> int:
        return self.a.shape[0]


@dataclass(frozen=True)
class TestResult:
    test: str
    statistic: float  # F1(A) - F1(B) (micro, or mean per-document for the t-test)
    p_value: float
    ci_low: float | None = None
    ci_high: float | None = None
    trials: int | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def micro_f1(counts: np.ndarray) -> np.ndarray:
    """Micro F1 from summed counts; ``counts`` (..., 3) summed over documents already."""
    tp, fp, fn = counts[..., 0], counts[..., 1], counts[..., 2]
    denom = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 1.0)


def document_f1(counts: np.ndarray) -> np.ndarray:
    return micro_f1(counts)  # per row: the same formula on one document's counts


def paired_t_test(pc: PairedCounts) -> TestResult:
    from scipy import stats

    fa, fb = document_f1(pc.a), document_f1(pc.b)
    diff = fa - fb
    if pc.n < 2 or np.allclose(diff, diff[0]) and np.isclose(diff[0], 0.0):
        return TestResult("paired t-test", float(diff.mean()) if pc.n else 0.0, 1.0)
    if np.allclose(diff, diff[0]):  # constant non-zero difference: no variance, certain
        return TestResult("paired t-test", float(diff.mean()), 0.0)
    res = stats.ttest_rel(fa, fb)
    return TestResult("paired t-test", float(diff.mean()), float(res.pvalue))


def approximate_randomization(
    pc: PairedCounts, trials: int = 10_000, seed: int = 0, exact: bool = False, batch: int = 2_000,
) -> TestResult:
    observed = float(micro_f1(pc.a.sum(0)) - micro_f1(pc.b.sum(0)))
    target = abs(observed) - 1e-12  # tolerate float noise in ties
    delta = pc.b - pc.a  # what swapping a document changes in A's totals
    sum_a, sum_b = pc.a.sum(0), pc.b.sum(0)
    hits = 0
    if exact:
        if pc.n > 20:
            raise ValueError(f"exact enumeration of 2^{pc.n} swaps is too many; use trials")
        swaps = np.array(list(product((0, 1), repeat=pc.n)), dtype=np.int64)
        hits = int(_hits(swaps, delta, sum_a, sum_b, target))
        return TestResult("randomization (exact)", observed, hits / len(swaps), trials=len(swaps))
    rng = np.random.default_rng(seed)
    done = 0
    while done < trials:
        m = min(batch, trials - done)
        swaps = rng.integers(0, 2, size=(m, pc.n), dtype=np.int64)
        hits += int(_hits(swaps, delta, sum_a, sum_b, target))
        done += m
    return TestResult("approximate randomization", observed, (hits + 1) / (trials + 1), trials=trials)


def _hits(swaps: np.ndarray, delta: np.ndarray, sum_a: np.ndarray, sum_b: np.ndarray, target: float) -> int:
    moved = swaps @ delta  # (m, 3): change of A's totals (and minus that of B's)
    stat = np.abs(micro_f1(sum_a + moved) - micro_f1(sum_b - moved))
    return int(np.count_nonzero(stat >= target))


def paired_bootstrap(
    pc: PairedCounts, samples: int = 10_000, seed: int = 0, confidence: float = 0.95, batch: int = 2_000,
) -> TestResult:
    observed = float(micro_f1(pc.a.sum(0)) - micro_f1(pc.b.sum(0)))
    rng = np.random.default_rng(seed)
    diffs = []
    done = 0
    while done < samples:
        m = min(batch, samples - done)
        # Multinomial weights = how often each document is drawn.
        weights = rng.multinomial(pc.n, np.full(pc.n, 1.0 / pc.n), size=m)
        diffs.append(micro_f1(weights @ pc.a) - micro_f1(weights @ pc.b))
        done += m
    d = np.concatenate(diffs)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(d, [alpha / 2, 1 - alpha / 2])
    if np.all(d == 0):
        p = 1.0
    else:
        p = min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0)))
    return TestResult("paired bootstrap", observed, float(p), float(lo), float(hi), trials=samples)


def paired_degradation(original: PairedCounts, shifted: PairedCounts, trials: int = 10_000, seed: int = 0,
                       batch: int = 2_000) -> TestResult:
    """drop(A) - drop(B) and its approximate-randomization p-value (see the
    module docstring); ``original`` and ``shifted`` pair A and B on the same
    documents in the same order."""
    if original.a.shape != shifted.a.shape:
        raise ValueError(f"original and shifted counts differ in shape: {original.a.shape} and {shifted.a.shape}")

    def drops(ao, as_, bo, bs):
        return (micro_f1(ao) - micro_f1(as_)) - (micro_f1(bo) - micro_f1(bs))

    sums = [original.a.sum(0), shifted.a.sum(0), original.b.sum(0), shifted.b.sum(0)]
    observed = float(drops(*sums))
    target = abs(observed) - 1e-12
    delta_o, delta_s = original.b - original.a, shifted.b - shifted.a
    rng = np.random.default_rng(seed)
    hits = done = 0
    while done < trials:
        m = min(batch, trials - done)
        swaps = rng.integers(0, 2, size=(m, original.n), dtype=np.int64)
        mo, ms = swaps @ delta_o, swaps @ delta_s
        stat = drops(sums[0] + mo, sums[1] + ms, sums[2] - mo, sums[3] - ms)
        hits += int(np.count_nonzero(np.abs(stat) >= target))
        done += m
    return TestResult("approximate randomization (degradation)", observed, (hits + 1) / (trials + 1), trials=trials)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (same order as given)."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        adjusted[idx] = running
    return adjusted.tolist()


TESTS = {
    "t-test": paired_t_test,
    "randomization": approximate_randomization,
    "bootstrap": paired_bootstrap,
}
