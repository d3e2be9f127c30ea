"""Declared parameter constraints (after scikit-learn's ``_parameter_constraints``).

A tagger or meta-learner lists, per parameter, the values it accepts; any one
constraint passing accepts the value:

    _parameter_constraints = {
        "c1": [Interval(float, 0, None)],                  # a number >= 0, not NaN
        "max_iterations": [Interval(int, 1, MAX_COUNT)],
        "sequence": [Options("document", "sentence")],
        "features": [None, FEATURES],                      # None, or feature settings within bounds
        "label_map": [None, Check(resolvable, "a label map file or shipped name")],
    }

:func:`validate_params` checks them when a tagger is made from a spec, before
any fold runs, so a bad value is one error naming the tagger, the parameter
and the value instead of a traceback mid-run (and an empty cache entry).

A value that passes must also be one the run can live with: no number is
infinite or NaN, and every number is bounded on both sides by a range that
means something (``MAX_COUNT``, ``MAX_SIZE``, ``SEED``, ``MAX_RATE``,
``MAX_PENALTY``, ``MAX_COST``, ...), so that ``epochs=10**20`` or
``c1=1e308`` is refused here instead of running for ever, exhausting memory
or overflowing the library's own number types later (Vowpal Wabbit's weights
and rates are 32-bit floats, CRFsuite's doubles, counts C ints). The
contract test (tests/test_params.py) checks that every numeric parameter of
every tagger and meta-learner declares finite bounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any, Callable, Mapping


class InvalidParameter(ValueError):
    """A parameter value outside its declared constraints."""


# Ceilings of the absurd: above them a value is a typo (1e20) that would run
# for ever or exhaust memory, never a setting anyone means.
MAX_COUNT = 1_000_000  # epochs, iterations, passes, patience, lengths, thresholds
MAX_SIZE = 10_000  # a layer, embedding or feature dimension (word vectors have <= 1,000)
MAX_BUCKETS = 1 << 22  # hashed feature buckets: each holds a weight per tag (4M x 43 tags: 720 MB)
MAX_SEED = 2**32 - 1  # numpy, torch and Vowpal Wabbit take seeds in [0, 2**32)
# Real-valued settings, each far above any useful value and far below what a
# 32-bit float holds (3.4e38: Vowpal Wabbit's learning rate and weights).
MAX_RATE = 10.0  # learning rates: SGD, Adam and VW's -l all diverge long before 10
MAX_PENALTY = 1e4  # regularisation strengths and decays (c1, c2, l2, weight decay, lr decay)
MAX_COST = 1e6  # SVM/MIRA C, misclassification costs and class weights (1e6: no regularisation left)
MAX_NORM = 1e4  # gradient-norm clipping
MAX_TOLERANCE = 1.0  # stopping tolerances (relative changes)
MAX_SECONDS = 30 * 86_400.0  # a time limit: 30 days
MAX_CPU_COST = 1e9  # CPU seconds per million tokens (the slowest member measured: ~1e4)


@dataclass(frozen=True)
class Interval:
    """A number of ``kind`` (int or float; an int is a float, a bool is
    neither, NaN and infinities never pass) within [low, high] (None: unbounded); ``closed``
    says which ends are included: "both", "left", "right" or "neither"."""

    kind: type
    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def accepts(self, value: Any) -> bool:
        if isinstance(value, bool):
            return False
        if self.kind is int:
            if not isinstance(value, Integral):
                return False
        elif not isinstance(value, Real) or math.isnan(value) or math.isinf(value):
            return False  # an unbounded end is open: (0, inf) holds no inf (C=inf would fit nothing)
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        word = "an integer" if self.kind is int else "a number"
        if self.low is None and self.high is None:
            return word
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        number = (lambda x: f"{x:,}") if self.kind is int else (lambda x: f"{x:g}")
        low = "-inf" if self.low is None else number(self.low)
        high = "inf" if self.high is None else number(self.high)
        return f"{word} in {left}{low}, {high}{right}"


@dataclass(frozen=True, init=False)
class Options:
    """One of a fixed set of values."""

    values: tuple

    def __init__(self, *values: Any):
        object.__setattr__(self, "values", tuple(values))

    def accepts(self, value: Any) -> bool:
        return any(value == v and type(value) is type(v) for v in self.values)

    def __str__(self) -> str:
        if len(self.values) == 1:
            return repr(self.values[0])
        return "one of " + ", ".join(repr(v) for v in self.values)


@dataclass(frozen=True)
class Check:
    """A predicate with the words that describe what it accepts (for values
    whose validity is not a range or a list: a file, a label-map name)."""

    predicate: Callable[[Any], bool]
    description: str

    def accepts(self, value: Any) -> bool:
        try:
            return bool(self.predicate(value))
        except Exception:  # a predicate that cannot even read the value refuses it
            return False

    def __str__(self) -> str:
        return self.description


SEED = Interval(int, 0, MAX_SEED)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the count)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


# Threads of one process: more than the machine's CPUs only makes it slower,
# and an absurd count exhausts memory in the thread library (libgomp).
# Bounded by this machine's CPUs, as a device is by this machine's devices:
# both are the loading machine's settings, never a bundle's (Tagger.machine_params).
THREADS = Interval(int, 1, usable_cpus())


def existing_file(value: Any) -> bool:
    """Whether ``value`` names a readable regular file (an embeddings file...)."""
    import os

    return isinstance(value, str) and os.path.isfile(value) and os.access(value, os.R_OK)


def device_usable(value: Any) -> bool:
    """Whether torch can run on ``value`` here: "auto" and "cpu" always;
    "cuda", "cuda:N" and "mps" only when this machine has that device."""
    if value in ("auto", "cpu"):
        return True
    if not isinstance(value, str) or not (value in ("cuda", "mps") or value.startswith("cuda:") and value[5:].isdigit()):
        return False
    import torch  # only asked about a GPU when one is named

    if value == "mps":
        return bool(getattr(torch.backends, "mps", None) and torch.backends.mps.is_available())
    index = int(value[5:]) if ":" in value else 0
    return torch.cuda.is_available() and index < torch.cuda.device_count()


# The feature set's settings (``features=``, passed to FeatureExtractor): a
# window of 50 words each side is already far past any context the features use.
MAX_WINDOW = 50
_FEATURE_SETTINGS = {"window": [Interval(int, 0, MAX_WINDOW)], "ngrams": [Interval(int, 1, MAX_WINDOW)],
                     "shapes": [bool], "orthography": [bool], "sentence": [bool], "sections": [bool],
                     "regexes": [bool], "conjunctions": [bool]}


def feature_settings_usable(value: Any) -> bool:
    """Whether ``value`` is a table of FeatureExtractor settings, each within
    its bounds (affix lengths 1..50, at most 50 of them)."""
    if not isinstance(value, dict):
        return False
    for key, setting in value.items():
        if key == "affixes":
            if not (isinstance(setting, (list, tuple)) and len(setting) <= MAX_WINDOW
                    and all(Interval(int, 1, MAX_WINDOW).accepts(k) for k in setting)):
                return False
        elif key == "gazetteers":
            if not (isinstance(setting, bool) or type(setting).__name__ == "Gazetteers"):
                return False
        elif key not in _FEATURE_SETTINGS or not accepts(_FEATURE_SETTINGS[key], setting):
            return False
    return True


FEATURES = Check(feature_settings_usable, f"a table of feature settings (window in [0, {MAX_WINDOW}], ngrams in "
                                          f"[1, {MAX_WINDOW}], affixes: up to {MAX_WINDOW} lengths in [1, "
                                          f"{MAX_WINDOW}], true/false for shapes, orthography, sentence, sections, "
                                          f"gazetteers, regexes, conjunctions)")
DEVICE = Check(device_usable, "'auto', 'cpu', or a device this machine has ('cuda', 'cuda:N', 'mps')")
EXISTING_FILE = Check(existing_file, "an existing, readable file")


def _accepts(constraint: Any, value: Any) -> bool:
    if constraint is None:
        return value is None
    if isinstance(constraint, type):
        if constraint is int or constraint is float:
            return Interval(constraint).accepts(value)
        return isinstance(value, constraint) and not (constraint is not bool and isinstance(value, bool))
    return constraint.accepts(value)


def accepts(constraints: list, value: Any) -> bool:
    """Whether any of a parameter's constraints accepts ``value``."""
    return any(_accepts(c, value) for c in constraints)


def refused_examples(constraints: list) -> list:
    """Values just outside the constraints (for contract tests and docs): each
    bound crossed, a wrong type, an unknown option."""
    candidates: list = ["no-such-value", {1, 2}]
    for c in constraints:
        if isinstance(c, Interval):
            step = 1 if c.kind is int else 0.5
            if c.low is not None:
                candidates.append(c.low - step)
            if c.high is not None:
                candidates.append(c.high + step)
            if c.kind is int:
                candidates += [1.5, 10**20, -(10**20)]  # absurd counts and sizes
            else:
                candidates += [float("nan"), float("inf"), float("-inf")]
        elif c is int or c is float:
            candidates += [float("nan"), float("inf")]
    return [v for v in candidates if not accepts(constraints, v)]


def describe(constraints: list) -> str:
    """The accepted values in words: "None or an integer in [1, inf)"."""
    words = []
    for c in constraints:
        if c is None:
            words.append("None")
        elif isinstance(c, type):
            words.append({int: "an integer", float: "a number", bool: "true/false", str: "a string",
                          dict: "a table (dict)"}.get(c, f"a {c.__name__}"))
        else:
            words.append(str(c))
    return " or ".join(words)


def validate_params(owner: str, params: Mapping[str, Any], constraints: Mapping[str, list]) -> None:
    """Raise :class:`InvalidParameter` for the first parameter whose value no
    declared constraint accepts, naming the owner, the parameter and the value."""
    for name, value in params.items():
        allowed = constraints.get(name)
        if allowed is None or allowed == "no_validation":
            continue
        if not accepts(allowed, value):
            shown = repr(value) if len(repr(value)) <= 200 else repr(value)[:200] + "..."  # a bundle's value can be huge
            raise InvalidParameter(f"{owner}: invalid value {name}={shown}; expected {describe(allowed)}")
