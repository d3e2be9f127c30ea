"""Result tables and plots of a study."""
from __future__ import annotations

import stat

import numpy as np
import pytest

from ensemble_deid.studies import plots
from ensemble_deid.studies.report import Cell, ResultTable


def _table():
    t = ResultTable("Ensembles (strict F1 %)", ["A test", "B_test"])
    t.add("voting", [0.9538, Cell(0.9209, "*")])
    t.add("pruned", [0.9560, 0.9252])
    t.add("dtm", [None, 0.9211])
    t.mark_best()
    return t


def test_markdown_marks_best_and_asterisks():
    md = _table().markdown()
    assert "**95.60**" in md and "**92.52**" in md
    assert r"92.09\*" in md
    assert "| dtm    |        .. |" in md


def test_best_cell_that_is_also_marked_renders_cleanly():
    t = ResultTable("t", ["a"])
    t.add("x", [Cell(0.9, "*")])
    t.add("y", [Cell(0.9, "*")])
    t.mark_best()
    assert r"**90.00**\*" in t.markdown()


def test_latex_escapes_and_marks():
    tex = _table().latex()
    assert r"B\_test" in tex
    assert r"92.09$^{*}$" in tex
    assert r"\textbf{95.60}" in tex


def test_csv_keeps_raw_values_and_marks():
    lines = _table().csv().splitlines()
    assert lines[0] == "system,A test,B_test,A test mark,B_test mark"
    assert lines[1] == "voting,0.9538,0.9209,,*"


def test_row_length_checked():
    with pytest.raises(ValueError, match="2 columns"):
        _table().add("bad", [0.1])


def test_write_is_owner_only(tmp_path):
    for path in _table().write(tmp_path, "table5"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("draw", [
    lambda p: plots.threshold_curve({"all": [(1, 0.9), (2, 0.95)], "pruned": [(1, 0.92), (2, 0.96)]}, p, best_single=0.94),
    lambda p: plots.category_f1({"crf": {"NAME": 0.9, "DATE": 0.97}, "vote": {"NAME": 0.93}}, p),
    lambda p: plots.agreement_heatmap(["a", "b"], np.array([[1.0, 0.5], [0.5, 1.0]]), p),
])
def test_plots_write_png(tmp_path, draw):
    path = draw(tmp_path / "fig.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_plot_labels_drop_parameters_only_while_distinct():
    from ensemble_deid.studies.plots import short_labels

    assert short_labels(["crf:max_iterations=30@a", "svm@a", "crf:max_iterations=30@b"]) == ["crf@a", "svm@a", "crf@b"]
    assert short_labels(["lstm-crf-l:epochs=2,batch_size=32", "rules"]) == ["lstm-crf-l", "rules"]
    # two settings of one tagger: the full labels stay
    assert short_labels(["crf:c1=0.1", "crf:c1=1.0"]) == ["crf:c1=0.1", "crf:c1=1.0"]
