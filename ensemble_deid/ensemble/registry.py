"""Ensemble methods by name: the class of a name, a new method, and the
fitted method a saved folder holds."""
from __future__ import annotations

from typing import Any

from .base import MetaLearner, read_saved_method
from .dawid_skene import DawidSkene
from .pruning import PrunedVoting
from .stacked_lstm import StackedLSTM
from .stacked_searn import StackedSEARN
from .stacked_svm import StackedSVM
from .templates import DecisionTemplates
from .voting import Voting

METHODS: dict[str, type[MetaLearner]] = {
    cls.name: cls for cls in (Voting, PrunedVoting, DecisionTemplates, StackedSVM, StackedSEARN, StackedLSTM,
                               DawidSkene)
}


class UnknownMethod(ValueError):
    pass


def method_class(name: str) -> type[MetaLearner]:
    try:
        return METHODS[name]
    except KeyError:
        raise UnknownMethod(f"unknown ensemble method {name!r}; known: {', '.join(METHODS)}") from None


def make_method(name: str, **params: Any) -> MetaLearner:
    """An unfitted method with parameters set (unknown names and bad values raise ValueError)."""
    method = method_class(name)()
    if params:
        method.set_params(**params)
    method.validate_params()
    return method


def load_method(folder) -> MetaLearner:
    """The fitted method saved in ``folder`` by ``MetaLearner.save``, whichever
    it is (its name picks the class); another version's files are refused."""
    header, state = read_saved_method(folder)
    return method_class(header["name"])._from_saved(folder, header["params"], state)
