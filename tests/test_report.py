"""Result tables and plots of a study."""
from __future__ import annotations

import csv
import io
import json
import stat

import numpy as np
import pytest

from ensemble_deid.studies import plots
from ensemble_deid.studies.report import Cell, ResultTable, aliases, legend
from ensemble_deid.studies.table import PValue, format_p, render_table


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


def test_csv_and_json_carry_p_r_f1_p_values_and_parameters():
    t = ResultTable("Ensembles", ["A test"], row_header="method")
    t.add("voting", [Cell(0.9, precision=0.95, recall=0.855, params={"threshold": 2})])
    t.add("stacked-svm", [Cell(0.8, "*", precision=0.75, recall=0.857, p_value=0.0625, params={"C": 1.0})])
    t.mark_best()
    rows = list(csv.DictReader(io.StringIO(t.csv())))
    assert rows[0]["method"] == "voting" and rows[0]["column"] == "A test"
    assert (rows[0]["precision"], rows[0]["recall"], rows[0]["f1"]) == ("0.95", "0.855", "0.9")
    assert rows[0]["best"] == "True" and rows[0]["p_value"] == "" and json.loads(rows[0]["params"]) == {"threshold": 2}
    assert (rows[1]["mark"], rows[1]["p_value"], json.loads(rows[1]["params"])) == ("*", "0.0625", {"C": 1.0})
    cells = json.loads(t.json())["cells"]
    assert cells[1] == {"method": "stacked-svm", "alias": "stacked-svm", "column": "A test", "precision": 0.75,
                        "recall": 0.857, "f1": 0.8, "text": None, "best": False, "mark": "*", "p_value": 0.0625,
                        "params": {"C": 1.0}}


NEURAL = "lstm-crf-l:epochs=2,context=sentence,batch_size=32,corpus_vectors=false,ema_decay=0,refit=false,validation_fraction=0"


def test_terminal_table_fits_the_width_with_aliases_and_a_legend():
    t = ResultTable("Base taggers", [f"synthetic-2014 test: {s} model" for s in ("A", "B", "A+B")] * 2,
                    row_header="tagger", headers=[f"A test / {s} model" for s in ("A", "B", "A+B")] * 2,
                    headers_legend="A = synthetic-2014")
    t.add(NEURAL, [0.4512] * 6)
    t.add("crf:max_iterations=30", [Cell(0.9, "*")] + [0.8] * 5)
    t.mark_best()
    out = t.terminal(width=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    unwrapped = "".join(out.split())  # a 96-character spec wraps in 80 columns
    assert "aliases:lstm-crf-l=" + NEURAL in unwrapped and "crf = crf:max_iterations=30" in out
    # broken between parameters, never inside one
    assert all(any(p in line for line in out.splitlines()) for p in NEURAL.split(":", 1)[1].split(","))
    assert "A = synthetic-2014" in out
    assert "90.00*" in out and "\\*" not in out  # a plain asterisk in the terminal, no Markdown escape
    rows = [line for line in out.splitlines() if line.startswith(("lstm-crf-l ", "crf "))]
    assert len(rows) == 2 and "45.12" in rows[0]
    # the Markdown file uses the aliases too
    assert NEURAL not in t.markdown().split("aliases:")[0]


def test_mark_footnote_only_when_something_is_marked():
    t = ResultTable("t", ["a"], mark_note="* not significantly different from the best")
    t.add("x", [0.9])
    t.add("y", [0.8])
    assert "not significantly different" not in t.terminal() and "not significantly different" not in t.markdown()
    t.rows[1][1][0].mark = "*"
    assert "not significantly different" in t.terminal() and "not significantly different" in t.markdown()


def test_terminal_table_never_drops_a_column():
    from ensemble_deid.studies.table import terminal_table

    out = terminal_table(["system", "F1", "p randomization (Holm)"],
                         [["a very long system name here", 0.9, PValue(0.2345)]], width=30)
    assert "0.9000" in out and "0.234" in out and "randomization" in out


def test_a_folded_path_keeps_every_character_when_the_table_overflows_the_width():
    from ensemble_deid.studies.table import terminal_table

    # the walk's `cache ls`: a row label wider than the terminal left the folded
    # 'where' path two characters short per line ("v1/ensemble.st" / "ked-svm"),
    # so a path copied for `cache rm` was wrong
    path = "v1/ensemble.stacked-svm/3-dd6a8097c1f76bff/59701d4a208b2961"
    rows = [["lstm-crf-fea:epochs=12,validation_fraction=0", "2-d40e8759", "meddocan", 11, "0.4", "49.5",
             f"workspace: {path}"]]
    out = terminal_table(["tagger", "entry", "trained on", "parts", "MB", "cost", "where"], rows,
                         align="lllrrrl", wrap=(2, 6), width=80)
    where = out.splitlines()[0].index("where")
    assert path in "".join(line[where:].strip() for line in out.splitlines()[2:])


def test_p_values_print_as_a_reader_expects():
    assert format_p(0.0) == "<0.001" and format_p(0.00099) == "<0.001"
    assert format_p(0.001) == "0.001" and format_p(0.04999) == "0.050"
    assert render_table(["p"], [[PValue(0.0)]]).splitlines()[-1] == "| <0.001 |"
    assert float(PValue(0.0)) == 0.0  # the raw value stays for CSV


def test_aliases_number_colliding_specs():
    assert aliases(["crf:c1=0.1@a", "crf:c1=1.0@a", "svm@a"]) == ["crf#1@a", "crf#2@a", "svm@a"]
    assert aliases(["crf:max_iterations=30@a", "svm@a", "crf:max_iterations=30@b"]) == ["crf@a", "svm@a", "crf@b"]
    assert legend(["crf:c1=0.1@a", "crf:c1=1.0@a", "rules"]) == ["crf#1 = crf:c1=0.1", "crf#2 = crf:c1=1.0"]


def test_row_length_checked():
    with pytest.raises(ValueError, match="2 columns"):
        _table().add("bad", [0.1])


def test_write_is_owner_only(tmp_path):
    for path in _table().write(tmp_path, "ensembles"):
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


def test_threshold_axis_keeps_the_informative_thresholds():
    # 10 members: F1 collapses after 4 votes on both curves; max 0.9, half = 0.45
    all_ = [(1, 0.6), (2, 0.8), (3, 0.9), (4, 0.5), (5, 0.44)] + [(t, 0.1) for t in range(6, 11)]
    pruned = [(1, 0.7), (2, 0.85), (3, 0.88), (4, 0.3)] + [(t, 0.0) for t in range(5, 11)]
    # kept: thresholds within 10 points of the best (0.8 and up): 1-3 (and at least 3)
    assert plots.informative_thresholds({"all": all_, "pruned": pruned}) == 3
    assert plots.informative_thresholds({"all": [(1, 0.0), (2, 0.0)]}) == 2  # nothing to cut
    # issue 34 item 7, MEDDOCAN-like: 12 members within 95-98% up to t = 9, then 86, 80, 70 at t = 10-12:
    # t = 12 (over half the best) no longer squashes the 95-98% range
    meddocan = [(t, 0.95 + 0.003 * t) for t in range(1, 10)] + [(10, 0.86), (11, 0.80), (12, 0.70)]
    assert plots.informative_thresholds({"all": meddocan}) == 9


def test_one_curve_collapsing_where_another_holds_does_not_set_the_axis(monkeypatch):
    # The fresh-clone walk on MEDDOCAN (issue 34 item 7): pruned voting holds 94% at t = 12, so
    # t = 12 is shown, and all 12 members' 57% there pulled the axis down to 50-100.
    all_ = [(1, 0.944), (2, 0.965), (3, 0.967), (4, 0.966)] + [(t, 0.96) for t in range(5, 11)] + [(11, 0.936),
                                                                                                  (12, 0.567)]
    pruned = [(t, 0.965) for t in range(1, 11)] + [(11, 0.951), (12, 0.939)]
    fig = _figure_of(monkeypatch, lambda: plots.threshold_curve({"all members": all_, "pruned": pruned}, "x.png",
                                                                best_single=0.960))
    assert fig.axes[0].get_ylim() == (90.0, 100.0)  # from the points within 10 of the best, not 50-100
    assert "below the axis: all members at t = 12 (56.7)" in fig.axes[0].get_xlabel()


def test_threshold_and_category_axes_come_from_the_data(monkeypatch):
    meddocan = [(t, 0.95 + 0.003 * t) for t in range(1, 10)] + [(10, 0.86), (11, 0.80), (12, 0.70)]
    fig = _figure_of(monkeypatch, lambda: plots.threshold_curve({"all": meddocan}, "x.png", best_single=0.964))
    assert fig.axes[0].get_ylim() == (90.0, 100.0)  # 95.3-97.7 and the member's 96.4 with a margin, not 0-100
    assert plots.data_range([2.0, 40.0]) == (0.0, 45.0) and plots.data_range([]) == (0.0, 100.0)


def _figure_of(monkeypatch, draw):
    captured = {}
    monkeypatch.setattr(plots, "_save", lambda fig, path: captured.setdefault("fig", fig))
    draw()
    return captured["fig"]


def test_category_plot_shows_every_category_with_its_gold_count(monkeypatch):
    fig = _figure_of(monkeypatch, lambda: plots.category_f1(
        {"crf@a": {"NAME": 0.9, "DATE": 0.97, "AGE": None}}, "x.png",
        gold_counts={"NAME": 12, "DATE": 30, "AGE": 0}, categories=["AGE", "DATE", "LOCATION", "NAME"]))
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["AGE\nn=0", "DATE\nn=30", "LOCATION\nn=0", "NAME\nn=12"]
    assert sum(t.get_text() == "no gold" for t in ax.texts) == 2
    assert ax.get_ylim() == (85.0, 100.0)  # from the data (90 and 97), not a fixed 0-100
    assert "axis from 85" in ax.get_ylabel()
    # MEDDOCAN's 4 PROFESSION spans (F1 0 and 29%) do not pull the axis down: their values are written at the foot
    fig = _figure_of(monkeypatch, lambda: plots.category_f1(
        {"crf": {"NAME": 0.95, "PROFESSION": 0.0}, "vote": {"NAME": 0.98, "PROFESSION": 0.286}}, "x.png",
        gold_counts={"NAME": 1000, "PROFESSION": 4}))
    assert fig.axes[0].get_ylim() == (90.0, 100.0)
    assert [t.get_text() for t in fig.axes[0].texts] == ["0", "29"]


def test_heatmap_orders_members_by_agreement_and_labels_the_colorbar(monkeypatch):
    names = ["a1", "b1", "a2", "b2"]
    agree = np.array([[1, .1, .9, .1], [.1, 1, .1, .8], [.9, .1, 1, .1], [.1, .8, .1, 1]])
    order = plots.cluster_order(agree)
    assert {frozenset(order[:2]), frozenset(order[2:])} == {frozenset({0, 2}), frozenset({1, 3})}
    fig = _figure_of(monkeypatch, lambda: plots.agreement_heatmap(names, agree, "x.png"))
    assert fig.axes[1].get_ylabel() == "span agreement (Jaccard)"
    big = _figure_of(monkeypatch, lambda: plots.agreement_heatmap([f"m{i}" for i in range(41)], np.eye(41), "x.png"))
    assert not big.axes[0].texts  # no 1,681 numbers in cells


def test_a_note_with_an_equals_sign_is_wrapped_as_prose_not_as_an_alias_legend():
    # The fresh-clone walk (issue 34): the study's leak note, "... T/M: test split T, members
    # trained on M (A = i2b2-2014; ...)", was broken after its commas like the aliases' legend,
    # indented to its " = ", and rewrapped: two blank lines and a line of 25 spaces in the output.
    t = ResultTable("Leaks", ["F1", "entity leak", "token leak"], row_header="system",
                    note="members' union (ceiling): every span of the members together; no ensemble of them "
                         "leaks less. An entity leaks when one of its tokens does. T/M: test split T, members "
                         "trained on M (A = i2b2-2014; B = ngrid-2016 (A+B: trained on both)).")
    t.add("best single member, A/A", [0.8627, "13.56 (11.74-15.43)", "9.84 (8.47-11.19)"])
    lines = t.terminal(width=80).splitlines()
    note = lines[lines.index(next(x for x in lines if x.startswith("members' union"))):]
    assert all(line.strip() and not line.startswith(" ") and len(line) <= 80 for line in note), note
    assert " ".join(note).endswith("(A+B: trained on both)).")


def test_a_table_of_long_specs_shows_aliases_and_keeps_the_specs_in_the_legend():
    from ensemble_deid.studies.report import spec_table

    # the published MEDDOCAN members (issue 34 item 8: 'ensemble' printed them in a 112-column table)
    specs = ["crf", "rules:label_map=i2b2-to-meddocan", "lstm-crf-l:epochs=12,validation_fraction=0",
             "lstm-crf-fea:epochs=12,validation_fraction=0"]
    rows = [[s, 0.9685, 0.9509, 0.9596, 0.9723, 0.9485, 0.9602, "48.4"] for s in specs]
    headers = ["system", "CV P", "CV R", "CV F1", "test P", "test R", "test F1", "cost"]
    out = spec_table(headers, rows, "lrrrrrrr", notes=["cost: CPU seconds per million tokens"], width=80)
    assert max(len(line) for line in out.splitlines()) <= 80, out
    labels = [line.split()[0] for line in out.splitlines()[2:6]]
    assert labels == ["crf", "rules", "lstm-crf-l", "lstm-crf-fea"]
    legend = "".join(out.split("aliases:", 1)[1].split())
    assert all(s.replace(":", "", 0) in legend for s in specs[1:]) and "rules=rules:label_map=i2b2-to-meddocan" in legend
    assert out.rstrip().endswith("cost: CPU seconds per million tokens")
    short = spec_table(headers, rows[:2], "lrrrrrrr", width=120)  # room enough: the specs whole, no legend
    assert "rules:label_map=i2b2-to-meddocan  " in short and "aliases" not in short
