"""Fuzzing the corpus loaders (issue 21): mutated i2b2 XML and BRAT files
through read_directory, load_directory, ``corpus check``, ``corpus add``,
``corpus show`` and ``evaluate``; no traceback and no planted PHI string in any
message, warning, output or written file, nor a PHI word put in a metadata
field (BRAT type, XML element name, TYPE, id). Seeded; bounded in time.

The full run (>= 2,000 files) is marked slow; by hand:
``python -m tests.fuzz_inputs --cases 2000 --seed 21``.
"""
from __future__ import annotations

import pytest

from .fuzz_inputs import PHI, meddocan_seeds, run_fuzz, seed_documents


def _assert_clean(findings, at_least):
    assert findings.cases >= at_least, findings.summary()
    assert findings.tracebacks == [], findings.summary()
    assert findings.phi_leaks == [], findings.summary()
    # The fuzzer reaches both outcomes: loaded documents and reported problems,
    # and puts PHI words in metadata fields (issue 35 item 15: never printed).
    assert findings.documents_loaded > 0 and findings.problems_reported > 0, findings.summary()
    assert findings.metadata_cases > 0, findings.summary()


def test_seed_documents_plant_every_phi_string_as_an_annotation():
    for doc in seed_documents():
        assert sorted(doc.text[a.start:a.end] for a in doc.annotations) == sorted(PHI)


def test_fuzz_loaders_default_run():
    # ~400 files in a few seconds; the budget keeps a slow machine bounded.
    _assert_clean(run_fuzz(400, seed=21, budget_s=90), at_least=100)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [21, 2021])
def test_fuzz_loaders_two_thousand_files(seed):
    _assert_clean(run_fuzz(2000, seed=seed), at_least=2000)


@pytest.mark.slow
def test_fuzz_loaders_meddocan_seeds(meddocan_dir):
    # Real notes as seeds (Marimon et al., IberLEF 2019); their own PHI strings must never show.
    seeds = meddocan_seeds(meddocan_dir / "dev" / "xml")
    assert len(seeds[1]) > 50
    _assert_clean(run_fuzz(2000, seed=22, seeds=seeds), at_least=2000)


def test_fuzz_deidentify_special_files():
    # Issue 35 item 4: every special file once (FIFOs, device links, loops, long and non-UTF-8 names).
    from .fuzz_inputs import SPECIALS, run_deid_fuzz

    findings = run_deid_fuzz(len(SPECIALS), seed=35, budget_s=300)
    assert findings.cases == len(SPECIALS), findings.summary()
    assert findings.tracebacks == [] and findings.phi_leaks == [], findings.tracebacks + findings.phi_leaks
    assert findings.documents_loaded > 0 and findings.problems_reported > 0, findings.summary()
