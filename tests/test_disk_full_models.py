"""A full disk while a model file is written (issue 35 item 9).

The disk is filled for real, in a child process: RLIMIT_FSIZE makes every
write past the limit fail (EFBIG), as a full disk's writes fail with ENOSPC,
inside the C and C++ libraries too. CRFsuite ignored the failed writes and
cv ended in "ValueError: Invalid model"; Vowpal Wabbit raised a bare
RuntimeError. Both must be one error naming the file, and a rerun with
space must work (nothing cut short is kept)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from .conftest import REPO_ROOT

_CHILD = textwrap.dedent("""
    import resource, signal, sys
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
    from ensemble_deid.errors import EnsembleDeidError
    from tests.tiny_corpus import tiny_corpus
    {setup}
    _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, hard))
    try:
        {action}
    except EnsembleDeidError as exc:
        print("ERROR", type(exc).__name__, exc)
        sys.exit(1)
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    {after}
    print("OK")
""")


def _child(tmp_path, setup, action, after="pass", limit=20_000):
    code = _CHILD.format(setup=setup, action=action, after=after, limit=limit)
    # no bytecode writes: a .pyc cut short by the limit would break later imports
    env = {"PYTHONPATH": f"{REPO_ROOT}:{REPO_ROOT / '.devpath'}", "TMPDIR": str(tmp_path), "PATH": "/usr/bin:/bin",
           "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300)


def test_crfsuite_model_cut_short_by_a_full_disk_is_a_clear_error(tmp_path):
    setup = ("from ensemble_deid_adapters.crf import CRFTagger\n"
             "docs = tiny_corpus(8)\n"
             "tagger = CRFTagger(max_iterations=3)")
    done = _child(tmp_path, setup, "tagger.fit(docs)")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "Invalid model" not in done.stdout + done.stderr
    assert done.stdout.startswith("ERROR FileWriteError cannot write ") and str(tmp_path) in done.stdout
    assert "model.crfsuite" in done.stdout and "disk full" in done.stdout
    # the same fit with room to write works (nothing from the failed one is used)
    done = _child(tmp_path, setup, "tagger.fit(docs)", limit=10**9)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr[-3000:]


def test_vowpal_wabbit_model_in_a_full_tmpdir_is_a_clear_error(tmp_path):
    """Stacked SEARN writes VW's model file to TMPDIR at the end of its fit
    (the bytes a bundle stores and prediction loads)."""
    pytest.importorskip("vowpalwabbit")
    setup = ("from tests.test_ensemble_stacked import oracle_case, _split\n"
             "from ensemble_deid.ensemble.stacked_searn import StackedSEARN\n"
             "docs, members = oracle_case(n_docs=12)\n"
             "train, m_train, _, _ = _split(docs, members, 8)\n"
             "learner = StackedSEARN(passes=1, bits=18)")
    done = _child(tmp_path, setup, "learner.fit(m_train, train)", limit=4096)
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr and "RuntimeError" not in done.stdout
    assert done.stdout.startswith("ERROR FileWriteError cannot write ") and "model.vw" in done.stdout
    assert str(tmp_path) in done.stdout and "disk full" in done.stdout
    # with room, the same fit works and its model is saved
    done = _child(tmp_path, setup, "learner.fit(m_train, train)", "learner.save(r'%s')" % (tmp_path / "saved"),
                  limit=10**9)
    assert done.returncode == 0 and done.stdout.strip() == "OK", done.stderr[-3000:]
