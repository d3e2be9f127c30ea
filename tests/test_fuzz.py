"""Fuzzing the corpus loaders (issue 21): mutated i2b2 XML and BRAT files
through read_directory, load_directory, ``corpus check``, ``corpus add``,
``corpus show`` and ``evaluate``; no traceback and no planted PHI string in any
message, warning, output or written file, nor a PHI word put in a metadata
field (BRAT type, XML element name, TYPE, id). Seeded; bounded in time.

The full run (>= 2,000 files) is marked slow; by hand:
``python -m tests.fuzz_inputs --cases 2000 --seed 21``.

Tampered model bundles (issue 35): edited, checksums recomputed, loaded and
used on one note in a child process (a crash of a C library must show as a
finding, not end the test run); never a traceback, a program run or a file
read outside the bundle. By hand: ``python -m tests.fuzz_inputs --bundles
--cases 400 --seed 35``.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import REPO_ROOT

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


def _bundle_fuzz(cases: int, seed: int) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / ".devpath")])}
    proc = subprocess.run([sys.executable, "-m", "tests.fuzz_inputs", "--bundles", "--cases", str(cases),
                           "--seed", str(seed)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    assert f"{cases} tampered bundles" in proc.stdout
    assert "0 tracebacks, 0 reads outside the bundle, 0 paths it named looked up, 0 programs run" in proc.stdout
    return proc.stdout


def test_fuzz_tampered_bundles_default_run():
    _bundle_fuzz(40, seed=35)


def test_fuzz_tampered_bundles_issue_52_seed():
    # New cases (issue 52): thread counts and devices, file parameters, thresholds above the members,
    # absurd finite numbers, a checkpoint with a compressed 200 MB tensor; a new seed.
    _bundle_fuzz(20, seed=52)


@pytest.mark.slow
def test_fuzz_tampered_bundles_four_hundred_issue_52_seed():
    _bundle_fuzz(400, seed=5252)


@pytest.mark.slow
def test_fuzz_tampered_bundles_four_hundred():
    _bundle_fuzz(400, seed=3535)


def test_fuzz_deidentify_special_files():
    # Issue 35 item 4: every special file once (FIFOs, device links, loops, long and non-UTF-8 names).
    from .fuzz_inputs import SPECIALS, run_deid_fuzz

    findings = run_deid_fuzz(len(SPECIALS), seed=35, budget_s=300)
    assert findings.cases == len(SPECIALS), findings.summary()
    assert findings.tracebacks == [] and findings.phi_leaks == [], findings.tracebacks + findings.phi_leaks
    assert findings.documents_loaded > 0 and findings.problems_reported > 0, findings.summary()


def _assert_options_clean(findings, at_least):
    assert sum(findings.cases.values()) >= at_least, findings.summary()
    assert findings.tracebacks == [] and findings.phi_leaks == [], findings.summary()
    assert findings.silent_releases == [], findings.silent_releases
    # Both outcomes are reached: runs that go through and options refused.
    assert findings.exits.get(0) and findings.exits.get(2), findings.summary()


def test_fuzz_deidentify_options_default_run():
    """Issue 52: random operating points (NaN, infinities, huge, nested,
    unknown keys), --jobs up to 1000 on a few notes, PHI file names with and
    without --rename, and files the scan skips: no traceback, no file name's
    PHI word printed by a run that goes through, no silent release (exit 0,
    every note released as it came in, no warning). By hand: ``python -m
    tests.fuzz_inputs --options --cases 400 --seed 5252``."""
    from .fuzz_inputs import run_option_fuzz

    _assert_options_clean(run_option_fuzz(40, seed=52, budget_s=120), at_least=20)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [5252, 525252])
def test_fuzz_deidentify_options_four_hundred(seed):
    from .fuzz_inputs import run_option_fuzz

    _assert_options_clean(run_option_fuzz(400, seed=seed), at_least=400)
