"""The shared ensemble-deid tagger contract, run against this package's tagger.

The contract suite lives in the ensemble-deid repository (tests/tagger_contract.py,
with its tiny corpus); it is not part of the installed package. This file finds
the checkout through ENSEMBLE_DEID_REPO, or takes the repository this example
sits in (examples/edeid-example-adapter/tests/ -> three levels up).

    pip install -e examples/edeid-example-adapter
    pytest examples/edeid-example-adapter/tests
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(os.environ.get("ENSEMBLE_DEID_REPO") or Path(__file__).resolve().parents[3])
if not (REPO / "tests" / "tagger_contract.py").is_file():
    pytest.skip(f"ensemble-deid checkout not found at {REPO} (set ENSEMBLE_DEID_REPO)", allow_module_level=True)
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.tagger_contract import TaggerContract  # noqa: E402


class TestLexiconTaggerContract(TaggerContract):
    tagger_name = "example-lexicon"  # the entry-point name
    tagger_params = {"min_count": 1}
    learns = True


def test_distribution_registers_the_entry_point():
    from ensemble_deid.taggers.registry import entry_points

    ep = entry_points()["example-lexicon"]
    assert ep.value == "edeid_example_adapter:LexiconTagger"
    assert ep.dist is not None and ep.dist.name == "edeid-example-adapter"
