"""The shared tagger contract against the third-party example adapter
(examples/edeid-example-adapter), installed for real into a separate folder.

Not run on its own: tests/test_third_party_adapter.py installs the package with
pip into a temporary folder and runs this module in a subprocess with
EDEID_EXAMPLE_ADAPTER_DIR pointing there. Without that variable it skips.
"""
from __future__ import annotations

import os
import sys

import pytest

INSTALL_DIR = os.environ.get("EDEID_EXAMPLE_ADAPTER_DIR")
if not INSTALL_DIR:
    pytest.skip("run by test_third_party_adapter.py (needs EDEID_EXAMPLE_ADAPTER_DIR)", allow_module_level=True)
if INSTALL_DIR not in sys.path:
    sys.path.insert(0, INSTALL_DIR)  # the dist-info there registers the entry point

from .tagger_contract import TaggerContract  # noqa: E402


class TestExampleLexiconContract(TaggerContract):
    tagger_name = "example-lexicon"
    tagger_params = {"min_count": 1}
    learns = True


def test_loaded_from_the_installed_package():
    from ensemble_deid.taggers.registry import entry_points, tagger_class

    ep = entry_points()["example-lexicon"]
    assert ep.dist is not None and ep.dist.name == "edeid-example-adapter"
    module = sys.modules[tagger_class("example-lexicon").__module__]
    assert os.path.realpath(module.__file__).startswith(os.path.realpath(INSTALL_DIR))
