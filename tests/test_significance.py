"""Significance tests on constructed cases."""
from __future__ import annotations

import numpy as np
import pytest

from ensemble_deid.studies.significance import (
    PairedCounts, approximate_randomization, holm, micro_f1, paired_bootstrap, paired_degradation, paired_t_test,
)


def _random_counts(n, seed):
    rng = np.random.default_rng(seed)
    gold = rng.integers(1, 12, size=n)
    tp = rng.binomial(gold, 0.8)
    fp = rng.integers(0, 3, size=n)
    return np.column_stack([tp, fp, gold - tp])


@pytest.mark.parametrize("test", [paired_t_test, approximate_randomization, paired_bootstrap])
def test_identical_systems_give_p_one(test):
    c = _random_counts(40, 0)
    assert test(PairedCounts(c, c.copy())).p_value == 1.0


@pytest.mark.parametrize("test", [paired_t_test, approximate_randomization, paired_bootstrap])
def test_better_on_every_document_is_significant(test):
    b = _random_counts(60, 1)
    a = b.copy()
    # A finds one more gold span than B in every document (B missed it).
    a[:, 0] += 1
    b[:, 2] += 1
    res = test(PairedCounts(a, b))
    assert res.statistic > 0
    assert res.p_value < 0.01


def test_micro_f1_hand_computed():
    # tp 3, fp 1, fn 2 -> P 3/4, R 3/5, F1 = 6 / (6 + 3) = 2/3
    assert micro_f1(np.array([3, 1, 2])) == pytest.approx(2 / 3)
    assert micro_f1(np.array([0, 0, 0])) == 1.0


def test_randomization_agrees_with_exact_enumeration():
    a = np.array([[3, 1, 0], [2, 0, 1], [5, 2, 1], [1, 1, 1], [4, 0, 0], [0, 1, 2], [2, 2, 0], [3, 0, 1]])
    b = np.array([[2, 1, 1], [2, 1, 1], [4, 2, 2], [1, 0, 1], [3, 1, 1], [0, 2, 2], [2, 1, 0], [2, 0, 2]])
    pc = PairedCounts(a, b)
    exact = approximate_randomization(pc, exact=True)
    assert exact.trials == 2 ** 8
    approx = approximate_randomization(pc, trials=20_000, seed=3)
    # Monte Carlo error of a p-value near 0.1 with 20,000 trials is ~0.002.
    assert approx.p_value == pytest.approx(exact.p_value, abs=0.01)


def test_exact_randomization_by_hand():
    """Two documents: A = (1,0,0),(1,0,0); B = (0,0,1),(0,0,1).
    Swaps: none -> |1 - 0| = 1; one of the two -> |0.5 - 0.5| = 0 (twice);
    both -> |0 - 1| = 1. Two of four reach the observed 1: p = 0.5."""
    pc = PairedCounts(np.array([[1, 0, 0], [1, 0, 0]]), np.array([[0, 0, 1], [0, 0, 1]]))
    assert approximate_randomization(pc, exact=True).p_value == 0.5


def test_bootstrap_interval_contains_observed_difference():
    a, b = _random_counts(80, 4), _random_counts(80, 5)
    res = paired_bootstrap(PairedCounts(a, b), samples=4000)
    assert res.ci_low <= res.statistic <= res.ci_high


def test_holm_hand_computed():
    # sorted p: 0.01 (x3 = 0.03), 0.02 (x2 = 0.04), 0.04 (x1 = 0.04, monotone)
    assert holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_mismatched_shapes_are_rejected():
    with pytest.raises(ValueError, match="n_docs, 3"):
        PairedCounts(np.zeros((3, 3)), np.zeros((4, 3)))


def test_degradation_hand_computed_statistic():
    # Two documents. A: original tp 4 fp 0 fn 0 (F1 1), shifted tp 2 fp 0 fn 2 (F1 2/3): drop 1/3.
    # B: original tp 2 fp 0 fn 2 (F1 2/3), shifted the same: drop 0. drop(A) - drop(B) = 1/3.
    a_orig, a_shift = np.array([[2, 0, 0], [2, 0, 0]]), np.array([[1, 0, 1], [1, 0, 1]])
    b_orig = b_shift = np.array([[1, 0, 1], [1, 0, 1]])
    res = paired_degradation(PairedCounts(a_orig, b_orig), PairedCounts(a_shift, b_shift), trials=200)
    assert res.statistic == pytest.approx(1 / 3)


def test_degradation_same_drop_is_not_significant_and_larger_drop_is():
    orig = _random_counts(80, 2)
    worse = orig.copy()
    worse[:, 0] -= np.minimum(worse[:, 0], 2)  # two found spans per document lost under the shift
    worse[:, 2] += orig[:, 0] - worse[:, 0]
    # A and B identical: both lose the same, p = 1.
    same = paired_degradation(PairedCounts(orig, orig.copy()), PairedCounts(worse, worse.copy()), trials=500)
    assert same.statistic == 0 and same.p_value == 1.0
    # A loses the spans, B keeps them: A degrades more, and every document says so.
    res = paired_degradation(PairedCounts(orig, orig.copy()), PairedCounts(worse, orig.copy()), trials=2000, seed=1)
    assert res.statistic > 0.05
    assert res.p_value < 0.01


def test_degradation_rejects_mismatched_versions():
    c = _random_counts(5, 0)
    with pytest.raises(ValueError, match="differ in shape"):
        paired_degradation(PairedCounts(c, c), PairedCounts(c[:4], c[:4]))
