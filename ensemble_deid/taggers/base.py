"""The interface every base tagger adapter implements (scikit-learn style).

    class MyTagger(Tagger):
        name = "my-tagger"          # registry name (entry point name)
        version = "1"               # bump when output for the same input changes
        requires = ("somelib",)     # importable modules the tagger needs

        def __init__(self, c=1.0, random_state=0):
            self._store_params(locals())            # constructor only stores

        def fit(self, documents):                    # gold in doc.annotations
            ...; self.model_ = ...; return self      # learned attributes end in _

        def predict(self, documents):
            self.check_fitted()
            return [DocumentPrediction(doc.id, tags, confidences) ...]

Predictions are BIO tags on the common tokenization (``doc.tokens``); see
``ensemble_deid.corpus.bio``. External systems set ``external = True``: they are not
trained per fold, and ``fit`` may be a no-op.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import logging
import platform
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

from ..corpus.document import Document
from ..errors import EnsembleDeidError, printable
from .constraints import FEATURES, SEED, InvalidParameter, validate_params
from .prediction import DocumentPrediction
from .state import StateError, decoded, encodable, read_header, read_state, write_state

log = logging.getLogger(__name__)


class NotFittedError(EnsembleDeidError, ValueError):
    """predict() called before fit()."""


class TaggerUnavailable(EnsembleDeidError):
    """A tagger's optional dependency or external tool is missing."""


class Tagger:
    name: ClassVar[str] = ""
    version: ClassVar[str] = "1"
    requires: ClassVar[tuple[str, ...]] = ()
    external: ClassVar[bool] = False
    description: ClassVar[str] = ""
    # name -> accepted values (see ``constraints``); a subclass's declarations
    # extend and override its bases'. Checked by ``validate_params``.
    # Parameters many adapters share, declared once here.
    _parameter_constraints: ClassVar[dict[str, list]] = {"random_state": [None, SEED], "features": [None, FEATURES]}
    # Parameters naming things on the machine that runs the tagger: the
    # program it runs, and files or folders it reads when configured or when
    # predicting. A model bundle is loaded on another machine, so it may set
    # none of them (see ``deid/bundle.py``); the program is named by the user.
    program_param: ClassVar[str | None] = None
    _kind: ClassVar[str] = "tagger"  # what messages call it (ensemble methods share this machinery)
    local_params: ClassVar[tuple[str, ...]] = ()
    # Local parameters only ``fit`` reads (a vectors file, a configuration
    # whose contents the fitted state keeps): saved as their defaults, so a
    # model fitted with a file of this machine loads on one without it.
    fit_only_params: ClassVar[tuple[str, ...]] = ()
    # Settings of the machine that runs the model, not of the model (CPU
    # threads, the device), as torch.load's map_location or XGBoost's nthread
    # are the loader's: a saved model's values are never used; a loaded model
    # takes this class's defaults (``loaded_params``) and the caller may set them.
    machine_params: ClassVar[tuple[str, ...]] = ()

    # --- parameters (as scikit-learn's BaseEstimator) -------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        names = []
        for p in sig.parameters.values():
            if p.name == "self":
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must list its parameters explicitly (no *args/**kwargs)")
            names.append(p.name)
        return sorted(names)

    def _store_params(self, arguments: dict[str, Any]) -> None:
        """Store every constructor argument under its own name, as scikit-learn's
        rule asks (``__init__`` only stores; ``get_params`` reads them back).
        Call it as ``self._store_params(locals())`` from ``__init__``: the
        signature is then the one list of parameters. Explicit ``self.c = c``
        assignments remain just as valid. A subclass that adds parameters
        and calls ``super().__init__`` stores its own: names this call was
        not given are left to it."""
        for name in self._param_names():
            if name in arguments:
                setattr(self, name, arguments[name])

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {n: getattr(self, n) for n in self._param_names()}

    def set_params(self, **params: Any) -> "Tagger":
        """Set the named parameters; an unknown name sets none of them."""
        valid = set(self._param_names())
        bad = sorted(set(params) - valid)
        if bad:
            raise ValueError(
                f"invalid parameter {bad[0]!r} for {self._kind} {self.name or type(self).__name__}; "
                f"valid parameters: {sorted(valid)}"
            )
        for key, value in params.items():
            setattr(self, key, value)
        return self

    @classmethod
    def parameter_constraints(cls) -> dict[str, list]:
        """Every declared constraint, bases first (a subclass may override)."""
        merged: dict[str, list] = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get("_parameter_constraints", {}))
        return merged

    def validate_params(self) -> None:
        """Check every parameter against its declared constraints, then the
        adapter's own checks across parameters (``_check_params``), so that a
        bad value fails before any work starts, naming tagger, parameter and value."""
        owner = f"tagger {self.name or type(self).__name__!r}"
        validate_params(owner, self.get_params(), self.parameter_constraints())
        try:
            self._check_params()
        except InvalidParameter:
            raise
        except (ValueError, TypeError) as exc:
            message = str(exc).removeprefix(f"{self.name}: ")
            raise InvalidParameter(f"{owner}: {message}") from exc

    @classmethod
    def _defaults(cls) -> dict[str, Any]:
        return {p.name: p.default for p in inspect.signature(cls.__init__).parameters.values()}

    @classmethod
    def local_settings(cls, params: dict[str, Any]) -> list[str]:
        """The parameters in ``params`` that name something on the machine
        (``local_params`` and ``fit_only_params`` set to anything but their
        default). Compared as values only: nothing is looked up on disk."""
        defaults = cls._defaults()
        return [name for name in (*cls.local_params, *cls.fit_only_params)
                if params.get(name, defaults.get(name)) != defaults.get(name)]

    def saved_params(self) -> dict[str, Any]:
        """The parameters a saved model records: ``fit_only_params`` at their
        defaults (the fitted state holds what fit read from them)."""
        defaults = self._defaults()
        return {**self.get_params(), **{name: defaults[name] for name in self.fit_only_params}}

    @classmethod
    def loaded_params(cls, params: dict[str, Any], where: str) -> dict[str, Any]:
        """``params`` of a saved model as a loaded one takes them: every
        ``machine_params`` value this machine's (the class default; a saved
        value that differs is logged, never used: ``num_threads=1000000``
        would exhaust the thread library's memory, ``device="cuda"`` refuse a
        machine without one), and ``fit_only_params`` at their defaults
        (strings never looked up: only fit reads those files)."""
        defaults = cls._defaults()
        out = dict(params)
        for name in cls.machine_params:
            if name in out and out[name] != defaults.get(name):
                log.warning("%s: %s=%s saved with the model is not used: thread counts and devices are set by "
                            "the machine that runs it (%s here)", where, name, printable(repr(out[name]))[:40],
                            defaults.get(name))
            out.pop(name, None)
        for name in cls.fit_only_params:
            out.pop(name, None)
        return out

    def _check_params(self) -> None:
        """Adapter hook: checks a per-parameter constraint cannot state (e.g.
        one parameter's range depending on another). Raise ValueError."""

    def clone(self) -> "Tagger":
        """An unfitted copy with the same parameters."""
        return type(self)(**self.get_params())

    def hashed_params(self) -> dict[str, Any]:
        """The parameters as the cache key sees them. An int given where the
        default is a float counts as that float: ``validation_fraction=0``
        and the default ``0.0`` are one model, so they share one cache entry."""
        defaults = {p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()}
        params = {}
        for name, value in self.get_params().items():
            if isinstance(defaults.get(name), float) and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            params[name] = value
        return params

    def param_hash(self) -> str:
        """Stable hash of the parameters (``hashed_params``): part of the cache key."""
        blob = json.dumps(self.hashed_params(), sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def __repr__(self) -> str:
        defaults = {
            p.name: p.default for p in inspect.signature(type(self).__init__).parameters.values()
        }
        changed = {k: v for k, v in self.get_params().items() if defaults.get(k, inspect._empty) != v}
        args = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        return f"{type(self).__name__}({args})"

    # --- learning ---------------------------------------------------------
    def fit(self, documents: Sequence[Document]) -> "Tagger":
        raise NotImplementedError(f"{type(self).__name__} must implement fit()")

    def predict(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        raise NotImplementedError(f"{type(self).__name__} must implement predict()")

    def predict_tags(self, documents: Sequence[Document]) -> list[DocumentPrediction]:
        """``predict``'s tags, without the confidences where computing them
        is extra work a tagger can skip (marginals): for users of the tags
        alone, such as a voting bundle. By default ``predict`` itself."""
        return self.predict(documents)

    def training_choices(self) -> dict[str, Any]:
        """What a fit chose by itself from its training documents (the epoch early
        stopping kept, ...), recorded in the cache metadata of the run; {} when nothing."""
        return {}

    # Private attributes built from a fit (a loaded library model, a live network):
    # dropped with the learned ones when a new fit starts.
    _fitted_caches: tuple[str, ...] = ()

    def _clear_fitted(self) -> None:
        """Forget a previous fit: the learned attributes and ``_fitted_caches``."""
        for key in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, key)
        for key in self._fitted_caches:
            self.__dict__.pop(key, None)

    def is_fitted(self) -> bool:
        return any(k.endswith("_") and not k.startswith("_") for k in vars(self))

    def check_fitted(self) -> None:
        if not self.is_fitted():
            raise NotFittedError(
                f"tagger {self.name or type(self).__name__!r} is not fitted: call fit(documents) before predict()"
            )

    # --- saving a fitted tagger (no pickle: see taggers/state.py) ------------
    def save(self, folder) -> "Path":
        """Write the fitted tagger to ``folder`` (created owner-only): its
        name, version, parameters and learned state, models in their library's
        own file format. ``type(tagger).load(folder)`` reads it back."""
        self.check_fitted()
        header = {"kind": "tagger", "name": self.name, "version": self.version,
                  "params": encodable(self.saved_params()), "environment": self.environment()}
        return write_state(folder, header, self._fitted_state())

    @classmethod
    def load(cls, folder, vet: Callable[[type, Any], None] | None = None) -> "Tagger":
        """A tagger of this class saved by :meth:`save`; refuses another
        tagger's or another version's files (the error names the folder).
        Whichever tagger a folder holds: ``registry.load_tagger(folder)``.
        ``vet(class, params)`` sees the saved parameters before anything
        checks or uses them (a bundle refuses local ones there, before a
        constraint looks a path up)."""
        if not cls.name:
            raise TypeError(f"{cls.__name__}.load reads one tagger's files: load_tagger(folder) "
                            "(ensemble_deid.taggers) finds the tagger a folder holds")
        header = read_saved_header(folder)
        if header["name"] != cls.name or str(header["version"]) != str(cls.version):
            raise StateError(
                f"{folder}: saved by tagger {header['name']!r} version {header['version']}; "
                f"this is {cls.name!r} version {cls.version}: refit it"
            )
        if vet is not None:
            vet(cls, decoded(header.get("params")))
        _, state = read_state(folder)
        return cls._from_saved(folder, header["params"], state)

    @classmethod
    def _from_saved(cls, folder, params: Any, state: dict[str, Any]):
        """An instance with the saved ``params`` (its ``machine_params`` this
        machine's) and learned ``state`` read from ``folder``. A value no fit
        accepts (threshold=-5 in an edited file) is refused here, naming the
        folder, not used."""
        params = decoded(params)
        if not isinstance(params, dict):
            raise StateError(f"{folder}: malformed (field 'params')")
        made = cls(**cls.loaded_params(params, str(folder)))
        try:
            made.validate_params()
        except ValueError as exc:
            raise StateError(f"{folder}: {exc}") from None
        made._restore_state(state)
        return made

    def _fitted_state(self) -> dict[str, Any]:
        """What ``save`` stores: the learned attributes (override to leave out
        what ``_restore_state`` can rebuild from the parameters)."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def _restore_state(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, value)

    # --- availability and provenance ---------------------------------------
    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """(available, reason): missing optional modules make a tagger unavailable.
        Adapters of external tools override this to check their configuration."""
        missing = [m for m in cls.requires if importlib.util.find_spec(m) is None]
        if missing:
            return False, f"missing optional dependency: {', '.join(missing)} (pip install it)"
        return True, ""

    @classmethod
    def check_available(cls) -> None:
        ok, reason = cls.availability()
        if not ok:
            raise TaggerUnavailable(f"tagger {cls.name!r} is unavailable: {reason}")

    def environment(self) -> dict[str, str]:
        """Library and tool versions that produced the output (cache metadata)."""
        env = {"python": platform.python_version()}
        for module in self.requires:
            dist = _DISTRIBUTIONS.get(module, module)
            try:
                env[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                env[dist] = "not installed"
        return env


# Import name -> distribution name where they differ.
_DISTRIBUTIONS = {
    "pycrfsuite": "python-crfsuite",
    "sklearn": "scikit-learn",
    "torchcrf": "pytorch-crf",
    "vowpalwabbit": "vowpalwabbit",
}


def read_saved_header(folder) -> dict:
    """The header of a tagger saved by :meth:`Tagger.save` (another kind of
    saved state is refused)."""
    header = read_header(folder)
    if header.get("kind") != "tagger":
        raise StateError(f"{folder}: not a saved tagger")
    return header
