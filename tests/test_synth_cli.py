"""``ensemble-deid corpus synth``."""
from __future__ import annotations

from click.testing import CliRunner

from ensemble_deid.cli.synth import synth
from ensemble_deid.corpus.formats import read_directory


def test_synth_writes_a_corpus_and_prints_no_phi(tmp_path):
    out = tmp_path / "s14"
    result = CliRunner().invoke(synth, ["--style", "i2b2-2014", "--docs", "4", "--seed", "5", "--out", str(out)])
    assert result.exit_code == 0, result.output
    docs, problems = read_directory(out)
    assert len(docs) == 4 and problems == []
    assert "NAME" in result.output and "real" in result.output
    phi = {a.text for d in docs for a in d.annotations if any(c.isalpha() for c in a.text) and len(a.text) > 3}
    assert phi and not [p for p in phi if p in result.output]


def test_synth_same_seed_same_files(tmp_path):
    runner = CliRunner()
    for name in ("a", "b"):
        result = runner.invoke(synth, ["--style", "ngrid-2016", "--docs", "2", "--seed", "9", "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    for path in sorted((tmp_path / "a").iterdir()):
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes()


def test_bad_values_are_refused(tmp_path):
    runner = CliRunner()
    bad = [
        ["--style", "ngrid-2016", "--docs", "0", "--out", str(tmp_path / "x")],
        ["--style", "ngrid-2016", "--seed", "-1", "--out", str(tmp_path / "x")],
        ["--style", "i2b2-2099", "--out", str(tmp_path / "x")],
        ["--style", "i2b2-2014", "--docs", "400", "--first-id", "950", "--out", str(tmp_path / "x")],
    ]
    for args in bad:
        result = runner.invoke(synth, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Invalid value" in result.output or "Error" in result.output
    assert not (tmp_path / "x").exists()


def test_existing_corpus_needs_overwrite(tmp_path):
    runner = CliRunner()
    out = str(tmp_path / "c")
    assert runner.invoke(synth, ["--style", "ngrid-2016", "--docs", "1", "--out", out]).exit_code == 0
    again = runner.invoke(synth, ["--style", "ngrid-2016", "--docs", "1", "--seed", "4", "--out", out])
    assert again.exit_code == 2 and "--overwrite" in again.output
    forced = runner.invoke(synth, ["--style", "ngrid-2016", "--docs", "1", "--seed", "4", "--out", out, "--overwrite"])
    assert forced.exit_code == 0, forced.output


def test_registered_under_corpus_group():
    from ensemble_deid.cli.corpus import corpus

    assert corpus.commands.get("synth") is synth
