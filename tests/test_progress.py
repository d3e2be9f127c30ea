"""Progress: plain, rate-limited lines when stderr is not a terminal (the
CLI run through CliRunner, whose stderr is not one), phases of the
``ensemble`` command, per-epoch lines of neural training, and no
time-remaining where it cannot be known."""
from __future__ import annotations

import io
import re

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.progress import PlainProgress, phase, progress_bar

from .test_ensemble_cli import MEMBERS, tiny  # noqa: F401  (the fixture)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_plain_lines_at_most_one_per_interval(monkeypatch):
    clock = iter([0.0] + [float(i) for i in range(0, 1000)])
    monkeypatch.setattr("ensemble_deid.progress.time.monotonic", lambda: next(clock))
    out = io.StringIO()
    bar = progress_bar(total=100, desc="cv", unit="part", file=out, interval=30)
    assert isinstance(bar, PlainProgress)
    for _ in range(100):  # one step a second: 100 seconds
        bar.update()
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    # the first step, then one each 30 s (t = 30, 60, 90), then the last: 5 lines, not 100
    assert len(lines) == 5, lines
    assert lines[0].startswith("cv: 1/100 part [") and lines[-1].startswith("cv: 100/100 part [")


def test_phases_get_a_line_each_and_a_disabled_bar_writes_nothing():
    out = io.StringIO()
    bar = progress_bar(total=3, desc="voting", unit="fit", file=out, interval=1e9)
    phase(bar, "choosing parameters")
    phase(bar, "predicting")
    bar.close()
    assert [re.sub(r"\[.*?\] ", "", x) for x in out.getvalue().splitlines()] == [
        "voting: 0/3 fit choosing parameters", "voting: 0/3 fit predicting"]
    quiet = io.StringIO()
    with progress_bar(total=3, file=quiet, disable=True) as bar:
        bar.update(3)
    assert quiet.getvalue() == ""


def test_a_terminal_gets_a_bar_and_no_eta_when_steps_differ():
    term = _Terminal()
    bar = progress_bar(total=4, desc="ensembles", unit="fit", file=term, eta=False)
    bar.update(2)
    bar.refresh()
    bar.close()
    shown = term.getvalue()
    assert "ensembles" in shown and "2/4" in shown
    assert "<" not in shown and "?" not in shown  # tqdm writes the time remaining as "elapsed<remaining"
    term = _Terminal()
    with progress_bar(total=4, desc="cv", file=term) as bar:
        bar.update(2)
    assert "<" in term.getvalue()  # the default keeps tqdm's estimate


def test_ensemble_command_reports_its_phases_in_plain_lines(tiny):  # noqa: F811
    result = CliRunner().invoke(main, ["ensemble", "--corpus", "tiny", "--method", "voting", "--members", MEMBERS,
                                       "--folds", "3"])
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert "\r" not in err
    lines = err.splitlines()
    fits = [x for x in lines if re.match(r"voting: \d+/\d+ fit \[", x)]
    # the two phases (choosing, predicting) and the last count; the member CV and
    # the out-of-fold fits: a first and a last line each at most
    # 3 thresholds x 5 trust levels, 3 folds each, and the refit: 46 fits
    assert "choosing parameters: 15 settings x 3 folds" in fits[0], err
    assert fits[-1].startswith("voting: 46/46 fit") and "predicting 8 test documents" in fits[-1], err
    assert len(fits) <= 4
    assert len([x for x in lines if x.startswith("voting out-of-fold: ")]) <= 2
    assert len([x for x in lines if x.startswith("cv: ")]) <= 2
    assert len(lines) <= 15, err


def test_neural_training_writes_a_line_per_epoch_in_a_log(capsys):
    pytest.importorskip("torch")
    from ensemble_deid.taggers.registry import tagger_class

    from .test_neural import FAST
    from .tiny_corpus import tiny_corpus

    tagger_class("lstm-crf-l")(**{**FAST, "epochs": 3, "verbose": True}).fit(tiny_corpus(6))
    err = capsys.readouterr().err
    epochs = [x for x in err.splitlines() if re.match(r"\S+: \d/3 epoch \[", x)]
    assert "\r" not in err
    # the first epoch, then at most one line each 30 s, then the last
    assert epochs[0].split(":")[1].strip().startswith("1/3") and " 3/3 epoch" in epochs[-1]
    assert len(epochs) <= 3
