"""Shared pieces of the external-system adapters: category maps, snapping,
text checks, availability, and the counts they report."""
from __future__ import annotations

import pytest

from ensemble_deid.corpus.document import Annotation, Document
from ensemble_deid.errors import EnsembleDeidError
from ensemble_deid.taggers.external.base import (
    LABELMAP_DIR, CategoryMap, ExternalOutputError, ForeignSpan, MappingStats, byte_to_char_offsets, check_bounds,
    check_text, map_spans, snap_spans,
)
from ensemble_deid.taggers.registry import entry_points, make_tagger, tagger_class
from ensemble_deid.taggers.base import TaggerUnavailable

EXTERNAL = ["precomputed", "physionet-deid", "mist", "philter", "scrubadub", "presidio"]


def test_every_external_adapter_is_registered_and_external():
    eps = entry_points()
    for name in EXTERNAL:
        assert name in eps
        cls = tagger_class(name)
        assert cls.external and cls.name == name
        ok, reason = cls.availability()
        assert isinstance(ok, bool) and isinstance(reason, str)


def test_packaged_category_maps_load():
    names = sorted(p.stem for p in LABELMAP_DIR.glob("*.toml"))
    for name in ("physionet-deid", "mist", "philter", "scrubadub", "presidio"):
        assert name in names
        cmap = CategoryMap.packaged(name)
        assert cmap.default is not None


def test_category_map_matching_rules():
    cmap = CategoryMap.from_dict({
        "default": "OTHER:PHI",
        "ignore": ["lex", "Ethnicity"],
        "labels": {"Known patient lastname": "NAME:PATIENT", "Hospital": "LOCATION:HOSPITAL",
                   "Last Name (STitle)": "NAME:DOCTOR", "Last Name": "NAME:PATIENT", "AGE": "AGE"},
    })
    assert cmap.lookup("known  PATIENT lastname") == ("NAME", "PATIENT")
    assert cmap.lookup("Hospital3") == ("LOCATION", "HOSPITAL")          # digits ignored on the loose pass
    assert cmap.lookup("Last Name (STitle)") == ("NAME", "DOCTOR")      # exact wins over loose
    assert cmap.lookup("Last Name (NamePattern1)") == ("NAME", "PATIENT")
    assert cmap.lookup("age") == ("AGE", "AGE")                         # known subtype: parent implied
    assert cmap.lookup("LEX") is None and cmap.lookup("ethnicity") is None
    assert cmap.lookup("something else") == ("OTHER", "PHI")
    assert cmap.knows("hospital") and not cmap.knows("something else")


def test_category_map_errors_are_clear(tmp_path):
    with pytest.raises(EnsembleDeidError, match="not CATEGORY:TYPE"):
        CategoryMap.from_dict({"labels": {"x": "NAME:"}})
    with pytest.raises(EnsembleDeidError, match="no known parent"):
        CategoryMap.from_dict({"labels": {"x": "WIDGET"}})
    with pytest.raises(EnsembleDeidError, match="unknown key"):
        CategoryMap.from_dict({"types": {}})
    bad = tmp_path / "bad.toml"
    bad.write_text("labels = [", encoding="utf-8")
    with pytest.raises(EnsembleDeidError, match="not valid TOML"):
        CategoryMap.load(bad)
    strict = CategoryMap.from_dict({"labels": {"A": "NAME:PATIENT"}})
    with pytest.raises(ExternalOutputError, match="not in the category map"):
        map_spans([ForeignSpan(0, 1, "B")], strict, MappingStats(), "file.x")


def test_map_spans_counts_unmapped_and_ignored():
    cmap = CategoryMap.from_dict({"default": "OTHER:PHI", "ignore": ["zone"], "labels": {"NAME": "NAME:PATIENT"}})
    stats = MappingStats()
    out = map_spans([ForeignSpan(0, 4, "NAME"), ForeignSpan(5, 9, "zone"), ForeignSpan(5, 9, "MYSTERY")], cmap, stats, "s")
    assert [(a.start, a.end, a.label) for a in out] == [(0, 4, "NAME:PATIENT"), (5, 9, "OTHER:PHI")]
    assert (stats.spans, stats.ignored, stats.unmapped, stats.unmapped_names) == (3, 1, 1, {"MYSTERY"})


def _doc(text="Seen by Dr. Adams on 12/03/2019 at Mercy."):
    return Document("d1", text)


def test_snap_spans_grows_to_token_edges_and_counts():
    doc = _doc()
    text = doc.text
    adams = text.index("Adams")
    date = text.index("12/03/2019")
    spans = [
        Annotation(adams, adams + 5, "NAME", "DOCTOR"),             # aligned: unchanged
        Annotation(adams + 1, adams + 3, "NAME", "DOCTOR"),         # inside a token
        Annotation(date + 1, date + 9, "DATE", "DATE"),              # both edges inside tokens
        Annotation(adams + 5, adams + 6, "NAME", "DOCTOR"),          # only the blank after Adams: no token
    ]
    snapped, stats = snap_spans(doc, spans)
    assert (stats.spans, stats.snapped, stats.dropped) == (4, 2, 1)
    assert [(a.start, a.end) for a in snapped] == [(adams, adams + 5), (adams, adams + 5), (date, date + 10)]


def test_text_and_bounds_checks_name_document_not_text():
    doc = _doc()
    check_text(doc, doc.text, "f.xml")
    with pytest.raises(ExternalOutputError) as err:
        check_text(doc, doc.text.replace("Adams", "Adoms"), "out/f.xml")
    msg = str(err.value)
    assert "out/f.xml" in msg and "'d1'" in msg and "first difference at offset 14" in msg
    assert "Adoms" not in msg and "Adams" not in msg
    with pytest.raises(ExternalOutputError, match=r"span \[40, 99\) lies off the text"):
        check_bounds(doc, 40, 99, "f.xml")


def test_byte_offsets_convert_to_characters():
    text = "José 12 ñ"
    table = byte_to_char_offsets(text)
    raw = text.encode("utf-8")
    b = raw.index(b"12")
    assert table[b] == text.index("12") and table[b + 2] == text.index("12") + 2
    assert table[len(raw)] == len(text)


def test_parameter_configured_adapters_report_why_they_cannot_run():
    # An unconfigured instance says which parameter would configure it.
    for name, param in (("precomputed", "test_dir"), ("physionet-deid", "deid_pl"), ("mist", "mist_home")):
        tagger = make_tagger(name)
        ok, reason = tagger.availability()
        assert not ok and param in reason
        with pytest.raises(TaggerUnavailable, match=param):
            tagger.fit([])


def test_unconfigured_run_mode_names_the_environment_variable(monkeypatch):
    monkeypatch.delenv("ENSEMBLE_DEID_DEID_PL", raising=False)
    monkeypatch.delenv("ENSEMBLE_DEID_MIST_HOME", raising=False)
    assert "ENSEMBLE_DEID_DEID_PL" in make_tagger("physionet-deid").availability()[1]
    assert "ENSEMBLE_DEID_MIST_HOME" in make_tagger("mist").availability()[1]
    monkeypatch.setenv("ENSEMBLE_DEID_DEID_PL", "/nonexistent/deid.pl")
    ok, reason = tagger_class("physionet-deid").availability()
    assert not ok and "not found" in reason


def test_unconfigured_tools_are_listed_unavailable_but_parameters_configure_cv(monkeypatch, tmp_path):
    from click.testing import CliRunner

    from ensemble_deid.cli import main

    monkeypatch.delenv("ENSEMBLE_DEID_DEID_PL", raising=False)
    monkeypatch.delenv("ENSEMBLE_DEID_MIST_HOME", raising=False)
    for name, env in (("mist", "ENSEMBLE_DEID_MIST_HOME"), ("physionet-deid", "ENSEMBLE_DEID_DEID_PL")):
        ok, reason = tagger_class(name).availability()
        assert not ok and env in reason
    runner = CliRunner(env={"ENSEMBLE_DEID_HOME": str(tmp_path)})
    listing = runner.invoke(main, ["taggers"])
    assert listing.exit_code == 0
    assert [c.strip() for c in next(x for x in listing.output.splitlines() if x.startswith("| mist ")).split("|")][2] == "no"
    result = runner.invoke(main, ["cv", "--corpus", "synthetic-2014", "--taggers", "mist"])
    assert result.exit_code == 2 and "ENSEMBLE_DEID_MIST_HOME" in result.output
    # import mode configured by a parameter passes the availability check
    # (and then fails only on the missing directory it names)
    result = runner.invoke(main, ["cv", "--corpus", "synthetic-2014", "--taggers", f"mist:import_dir={tmp_path / 'none'}"])
    assert result.exit_code == 2 and "import_dir" in result.output
    (tmp_path / "out").mkdir()
    ok, _ = make_tagger("mist", import_dir=str(tmp_path / "out")).availability()
    assert ok


# --- a fitted external system's category map is saved with it (model bundles) ---------

@pytest.mark.parametrize("name", ["physionet-deid", "mist", "philter", "scrubadub", "presidio"])
def test_a_category_map_is_saved_with_its_tagger_and_read_back_unchanged(tmp_path, name):
    from ensemble_deid.taggers.state import read_state, write_state

    cmap = CategoryMap.packaged(name)
    write_state(tmp_path / "saved", {"kind": "test"}, {"category_map_": cmap})
    _, state = read_state(tmp_path / "saved")
    assert state["category_map_"] == cmap
    assert state["category_map_"].lookup("no such category") == cmap.lookup("no such category")


def test_a_saved_category_map_with_a_label_edited_is_refused_when_read(tmp_path):
    import json

    from ensemble_deid.taggers.state import read_state, write_state

    write_state(tmp_path / "saved", {"kind": "test"}, {"category_map_": CategoryMap.packaged("philter")})
    path = tmp_path / "saved" / "state.json"
    path.write_text(path.read_text().replace('"OTHER:PHI"', '"NOT A LABEL"', 1))
    assert "NOT A LABEL" in path.read_text()
    with pytest.raises(EnsembleDeidError, match="saved category map.*not CATEGORY:TYPE|saved category map.*no known parent"):
        read_state(tmp_path / "saved")
