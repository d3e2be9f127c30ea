"""De-identifying new notes with a fitted tagger or ensemble: model bundles
(``bundle``), the ``Deidentifier`` (``model``), the text modes (``redact``),
surrogates (``surrogate``) and whole folders (``batch``)."""
from .bundle import BUNDLE_VERSION, BundleError, read_bundle, read_manifest, write_bundle
from .model import Deidentifier
from .redact import MODES, redact
from .surrogate import Surrogator

__all__ = ["BUNDLE_VERSION", "BundleError", "Deidentifier", "MODES", "Surrogator", "read_bundle", "read_manifest",
           "redact", "write_bundle"]
