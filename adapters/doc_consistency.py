"""Document-level consistency member: a base tagger, then every further
occurrence of a string it tagged in a note is tagged the same way in that note.

    tagger = DocConsistencyTagger(base="crf").fit(train_docs)
    tagger.predict(test_docs)

A token-level tagger decides each occurrence of "Pérez" or an ID from its own
context; a surname the base model finds in the signature line it may miss in
the history. This member sees the note as a whole: a string the base tagger
tagged once (at least ``min_chars`` characters; with ``proper_only``, holding a
capital letter or a digit, as names and identifiers do, so "mujer" tagged as a
sex is not spread) is tagged wherever it occurs again as whole common tokens
that the base left outside every span. A string tagged with several labels
takes the one it was given most often (ties: the first in the note). The added
tokens carry the mean confidence of the base's tagged occurrences.

``base`` names any registered learning tagger (not an external system) and
``base_params`` its parameters; the fitted base is trained on the same
documents, so the member costs what its base costs.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

import numpy as np

from ensemble_deid.corpus.bio import OUTSIDE
from ensemble_deid.corpus.document import Document
from ensemble_deid.taggers.base import Tagger
from ensemble_deid.taggers.constraints import MAX_COUNT, Interval
from ensemble_deid.taggers.prediction import DocumentPrediction


def tagged_runs(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """(first, stop, label) of each span in BIO ``tags`` (an ``I-`` after another label starts a span)."""
    runs: list[tuple[int, int, str]] = []
    start, label = None, None
    for i, tag in enumerate(list(tags) + [OUTSIDE]):
        inside = tag != OUTSIDE and tag[:2] == "I-" and start is not None and tag[2:] == label
        if inside:
            continue
        if start is not None:
            runs.append((start, i, label))
            start = label = None
        if tag != OUTSIDE:
            start, label = i, tag[2:]
    return runs


def propagate(words: Sequence[str], tags: Sequence[str], confidences: np.ndarray | None, min_chars: int,
              proper_only: bool) -> tuple[list[str], np.ndarray | None]:
    """``tags`` with every untagged further occurrence of a tagged word sequence tagged alike."""
    found: dict[tuple[str, ...], Counter] = {}
    conf: dict[tuple[str, ...], list[float]] = {}
    for first, stop, label in tagged_runs(tags):
        key = tuple(words[first:stop])
        text = "".join(key)
        if len(text) < min_chars or not any(c.isalnum() for c in text):
            continue
        if proper_only and not any(c.isupper() or c.isdigit() for c in text):
            continue
        found.setdefault(key, Counter())[label] += 1
        if confidences is not None:
            conf.setdefault(key, []).append(float(np.mean(confidences[first:stop])))
    out = list(tags)
    new_conf = None if confidences is None else np.array(confidences, dtype=np.float32, copy=True)
    if not found:
        return out, new_conf
    by_first: dict[str, list[tuple[str, ...]]] = {}
    for key in sorted(found, key=len, reverse=True):  # longest first: "Ana Pérez" before "Ana"
        by_first.setdefault(key[0], []).append(key)
    i, n = 0, len(words)
    while i < n:
        step = 1
        for key in by_first.get(words[i], ()):
            stop = i + len(key)
            if stop <= n and tuple(words[i:stop]) == key and all(t == OUTSIDE for t in out[i:stop]):
                label = found[key].most_common(1)[0][0]  # Counter keeps first-seen order among ties
                out[i:stop] = [f"B-{label}"] + [f"I-{label}"] * (len(key) - 1)
                if new_conf is not None:
                    new_conf[i:stop] = np.mean(conf[key])
                step = len(key)
                break
        i += step
    return out, new_conf


class DocConsistencyTagger(Tagger):
    """A base tagger whose tagged strings are tagged at every occurrence in the note.

    Parameters:
        base: the registered name of the base tagger (a learning one).
        base_params: its parameters (None: its defaults).
        min_chars: shortest string (characters, spaces left out) that is spread.
        proper_only: spread only strings holding a capital letter or a digit.
        random_state: passed to the base when it takes one and ``base_params`` does not set it.
    """

    name = "doc-consistency"
    version = "1"
    description = "a base tagger (crf by default), its tagged strings tagged at every occurrence in the note"

    _parameter_constraints = {"base": [str], "base_params": [None, dict],
                              "min_chars": [Interval(int, 1, MAX_COUNT)], "proper_only": [bool]}

    def __init__(self, base: str = "crf", base_params: dict[str, Any] | None = None, min_chars: int = 3,
                 proper_only: bool = True, random_state: int | None = 0):
        self._store_params(locals())

    def _check_params(self) -> None:
        from ensemble_deid.taggers.registry import UnknownTagger, tagger_class

        if self.base == self.name:
            raise ValueError(f"{self.name}: base={self.base!r} cannot be this tagger itself")
        try:
            cls = tagger_class(self.base)
        except UnknownTagger as exc:
            raise ValueError(f"{self.name}: base={self.base!r}: {exc}") from None
        if cls.external:
            raise ValueError(f"{self.name}: base={self.base!r} is an external system; name a learning tagger")
        try:  # the base's own parameters, checked before any fold runs
            self._make_base()
        except ValueError as exc:
            raise ValueError(f"{self.name}: base_params: {exc}") from None

    @classmethod
    def local_settings(cls, params: dict[str, Any]) -> list[str]:
        # The base's settings that name something on this machine (a model path) travel in base_params.
        from ensemble_deid.taggers.registry import tagger_class

        base = params.get("base", "crf")
        inner = tagger_class(base).local_settings(dict(params.get("base_params") or {}))
        return [f"base_params.{name}" for name in inner]

    def saved_params(self) -> dict[str, Any]:
        from ensemble_deid.taggers.registry import tagger_class

        params = super().saved_params()
        if params.get("base_params"):  # the base's fit-only files are left out, as the base itself saves them
            fit_only = tagger_class(self.base).fit_only_params
            params["base_params"] = {k: v for k, v in params["base_params"].items() if k not in fit_only}
        return params

    @classmethod
    def loaded_params(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        # The base's thread count, device and fit-only files travel in base_params.
        from ensemble_deid.taggers.registry import UnknownTagger, tagger_class

        params = super().loaded_params(params, where)
        inner = params.get("base_params")
        if isinstance(inner, dict):
            try:
                params["base_params"] = tagger_class(str(params.get("base", "crf"))).loaded_params(inner, where)
            except UnknownTagger:
                pass  # refused by _check_params, naming the base
        return params

    def _make_base(self) -> Tagger:
        from ensemble_deid.taggers.registry import make_tagger, tagger_class

        params = dict(self.base_params or {})
        if "random_state" in tagger_class(self.base)._param_names():
            params.setdefault("random_state", self.random_state)
        return make_tagger(self.base, **params)

    def environment(self) -> dict[str, str]:
        return {**self._make_base().environment(), **super().environment()}

    def fit(self, documents: Sequence[Document]) -> "DocConsistencyTagger":
        self.validate_params()
        self.base_ = self._make_base().fit(documents)
        return self

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        self.check_fitted()
        documents = list(documents)
        out = []
        for doc, pred in zip(documents, self.base_.predict(documents)):
            conf = None if pred.confidences is None else np.asarray(pred.confidences, dtype=np.float32)
            tags, conf = propagate(doc.tokens.words, pred.tags, conf, self.min_chars, self.proper_only)
            out.append(DocumentPrediction(doc.id, tuple(tags), conf))
        return out

    def training_choices(self) -> dict[str, Any]:
        return self.base_.training_choices() if hasattr(self, "base_") else {}

    # A saved member holds its base's learned state, rebuilt into a base tagger when loaded.
    def _fitted_state(self) -> dict[str, Any]:
        return {"base_state_": self.base_._fitted_state()}

    def _restore_state(self, state: dict[str, Any]) -> None:
        base = self._make_base()
        base._restore_state(dict(state["base_state_"]))
        self.base_ = base
