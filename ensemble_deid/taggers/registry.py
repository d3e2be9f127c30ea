"""Tagger registry: ``importlib.metadata`` entry points in the group
``ensemble_deid.taggers``, and the fitted tagger a saved folder holds
(``load_tagger``). Built-in adapters register the same way a third party's
package would:

    [project.entry-points."ensemble_deid.taggers"]
    my-tagger = "my_package.module:MyTagger"
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from typing import Any

from ..errors import EnsembleDeidError, did_you_mean
from .base import Tagger, read_saved_header

GROUP = "ensemble_deid.taggers"


class UnknownTagger(EnsembleDeidError, KeyError):
    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


@dataclass(frozen=True)
class TaggerInfo:
    name: str
    target: str  # "module:Class"
    distribution: str
    available: bool
    reason: str  # why unavailable (or the load error)
    external: bool
    description: str


def entry_points() -> dict[str, metadata.EntryPoint]:
    """The registered taggers by name. Reading them scans every installed
    distribution's metadata (about 30 ms in a full environment, and an
    ensemble of twelve members asks for them about a hundred times), so the
    scan is kept for as long as the import path is the same: a folder put on
    ``sys.path`` (a plugin's dist-info) is seen at the next call."""
    return dict(_entry_points(tuple(sys.path)))


@lru_cache(maxsize=4)
def _entry_points(path: tuple[str, ...]) -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=GROUP)}


def tagger_class(name: str, registered: dict[str, metadata.EntryPoint] | None = None) -> type[Tagger]:
    """The class registered as ``name``; ``registered``: an ``entry_points()``
    already read (reading them scans every installed distribution: a caller
    resolving several names reads them once)."""
    eps = entry_points() if registered is None else registered
    if name not in eps:
        raise UnknownTagger(f"unknown tagger {name!r}{did_you_mean(name, eps)}; registered taggers: "
                            f"{', '.join(sorted(eps)) or 'none'}")
    cls = eps[name].load()
    if not (isinstance(cls, type) and issubclass(cls, Tagger)):
        raise EnsembleDeidError(f"entry point {name!r} ({eps[name].value}) is not a Tagger subclass")
    return cls


def load_tagger(folder, registered: dict[str, metadata.EntryPoint] | None = None) -> Tagger:
    """The fitted tagger saved in ``folder`` by ``Tagger.save``, whichever it
    is: its name picks the class, whose ``load`` refuses another version's files."""
    # The class first: importing its module registers the classes its state holds.
    return tagger_class(read_saved_header(folder)["name"], registered).load(folder)


def make_tagger(name: str, **params: Any) -> Tagger:
    """An unfitted tagger, its parameters validated and its availability checked (an external tool's on the
    instance, at fit and predict: its parameters may configure it)."""
    cls = tagger_class(name)
    if not cls.external:
        cls.check_available()
    tagger = cls()
    if params:
        tagger.set_params(**params)
    tagger.validate_params()  # before any fold runs or cache entry is made
    return tagger


def describe_taggers() -> list[TaggerInfo]:
    infos = []
    for name, ep in sorted(entry_points().items()):
        dist = ep.dist.name if ep.dist is not None else "?"
        try:
            cls = ep.load()
            ok, reason = cls.availability()
            infos.append(TaggerInfo(name, ep.value, dist, ok, reason, cls.external, cls.description))
        except Exception as exc:  # a broken third-party plugin must not break the listing
            infos.append(TaggerInfo(name, ep.value, dist, False, f"failed to load: {type(exc).__name__}: {exc}", False, ""))
    return infos
