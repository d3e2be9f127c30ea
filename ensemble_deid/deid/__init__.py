"""De-identifying new notes with a fitted tagger or ensemble: model bundles
(``bundle``), the ``Deidentifier`` (``model``), the text modes (``redact``),
surrogates (``surrogate``) and whole folders (``batch``)."""
from .bundle import BUNDLE_VERSION, BundleError, read_bundle, read_manifest, write_bundle
from .model import Deidentifier
from .redact import MODES, redact

__all__ = ["BUNDLE_VERSION", "BundleError", "Deidentifier", "MODES", "Surrogator", "read_bundle", "read_manifest",
           "redact", "write_bundle"]


def __getattr__(name: str):
    # The surrogates (word lists, date rules) load on first use: a tag or mask run never pays for them.
    if name == "Surrogator":
        from .surrogate import Surrogator

        return Surrogator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
