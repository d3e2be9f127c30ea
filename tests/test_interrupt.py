"""Ctrl-C in the long commands: what was kept and that a rerun resumes, not
click's bare "Aborted!" (issue 53 item 11). The interrupt is raised where a
user's Ctrl-C lands: in the middle of the work, after some of it was kept."""
from __future__ import annotations

from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.experiment.cache import PredictionCache


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _interrupt_after(monkeypatch, owner, name, calls):
    """``owner.name`` works ``calls`` times, then raises KeyboardInterrupt, as Ctrl-C does."""
    real = getattr(owner, name)
    seen = []

    def fake(*args, **kwargs):
        if len(seen) >= calls:
            raise KeyboardInterrupt
        seen.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, fake)


def _said(result) -> str:
    return " ".join(result.output.split())


def test_ctrl_c_in_cv_says_what_was_kept_and_the_rerun_resumes(tiny_registered, workspace, monkeypatch):
    cv = ("cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "5", "--no-progress")
    with monkeypatch.context() as m:
        _interrupt_after(m, PredictionCache, "write_part", 2)
        stopped = _run(*cv)
    said = _said(stopped)
    assert stopped.exit_code == 130, stopped.output
    assert "Aborted!" not in stopped.output
    assert "interrupted: 'cv' stopped by Ctrl-C. 2 tagger part(s) finished in this run are kept in the cache" in said
    assert str(workspace / "cached_predictions") in said
    assert "Run the same command again to resume" in said
    assert all(len(line) <= 80 for line in stopped.output.splitlines() if "interrupted" in line)
    again = _run(*cv)
    assert again.exit_code == 0 and "4/6" in again.output  # 2 of the 6 parts reused


def test_ctrl_c_in_ensemble_counts_the_members_parts_apart(tiny_registered, monkeypatch):
    from ensemble_deid.ensemble.selection import GridSearch

    args = ("ensemble", "--corpus", tiny_registered, "--method", "voting", "--members", "memorize,rules",
            "--folds", "3", "--no-progress", "--no-diagnostics")
    with monkeypatch.context() as m:
        _interrupt_after(m, GridSearch, "fit", 0)  # during the selection, once the members' CV is done
        stopped = _run(*args)
    said = _said(stopped)
    assert stopped.exit_code == 130 and "Aborted!" not in stopped.output
    # memorize: 3 folds and the test split; rules learns nothing: one out-of-fold part and the test split
    assert "interrupted: 'ensemble' stopped by Ctrl-C. 6 tagger part(s) finished in this run are kept" in said
    assert "an ensemble's parameter search, that was under way starts again" in said
    again = _run(*args)
    assert again.exit_code == 0, again.output
    with monkeypatch.context() as m:
        _interrupt_after(m, GridSearch, "fit", 0)
        nothing = _run(*args, "--refit")
    assert "No prediction part was finished in this run" in _said(nothing)


def test_ctrl_c_in_deidentify_says_how_many_notes_are_done(fitted_tiny_bundle, tmp_path, monkeypatch):
    from ensemble_deid.deid.batch import FolderDeidentifier

    monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(fitted_tiny_bundle / "ws"))
    notes = tmp_path / "notes"
    notes.mkdir()
    for xml in sorted((fitted_tiny_bundle / "test").glob("*.xml"))[:5]:
        (notes / xml.name).write_bytes(xml.read_bytes())
    args = ("deidentify", fitted_tiny_bundle / "model", notes, "--out", tmp_path / "out", "--batch-size", "2",
            "--no-progress")
    with monkeypatch.context() as m:
        _interrupt_after(m, FolderDeidentifier, "tag_notes", 1)  # the second batch of two notes
        stopped = _run(*args)
    said = _said(stopped)
    assert stopped.exit_code == 130 and "Aborted!" not in stopped.output
    assert f"2 of 5 note(s) are done and kept in {tmp_path / 'out'}" in said
    assert "done notes are skipped" in said
    again = _run(*args)
    assert "3 note(s) de-identified, 2 already done" in again.output


def test_ctrl_c_in_a_command_that_keeps_nothing_claims_nothing(workspace, monkeypatch):
    from ensemble_deid.corpus.workspace import Workspace

    with monkeypatch.context() as m:
        _interrupt_after(m, Workspace, "corpus_specs", 0)
        stopped = _run("corpus", "ls")
    assert stopped.exit_code == 130 and stopped.output.strip() == "interrupted: 'corpus' stopped by Ctrl-C."
