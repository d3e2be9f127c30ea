"""The guide's ``cache export`` paths are what the command writes (issue 34 item 6:
the guide documented OUT/crf_max_iterations=20/predict-... while the export
writes OUT/LABEL/VERSION-PARAMHASH/TRAINFP/KIND-SCOPE-NAME/)."""
from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from ensemble_deid.cli import main
from ensemble_deid.corpus.workspace import Workspace

DOCS = Path(__file__).resolve().parent.parent / "docs"
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9]*(?:FP)?\b")


def _documented_paths(doc: str, section: str | None = None) -> list[str]:
    """The ``OUT/...`` paths of ``doc``, or of its ``## section`` only (the
    guide names other commands' OUT folders elsewhere: deidentify's run.json)."""
    text = (DOCS / doc).read_text(encoding="utf-8")
    if section is not None:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start:end if end != -1 else None]
    return re.findall(r"`(OUT/[^`]+)`", text)


def _regex(documented: str, label: str, values: dict[str, str]) -> re.Pattern:
    """The documented path as a regex: known placeholders become their values,
    other upper-case words any path segment part; the example label ours."""
    out = []
    for piece in re.split(r"(\b[A-Z][A-Z0-9]*\b)", documented.removeprefix("OUT/").replace("crf_max_iterations=20", label)):
        if PLACEHOLDER.fullmatch(piece or "-"):
            out.append(re.escape(values[piece]) if piece in values else "[^/]+?")
        else:
            out.append(re.escape(piece))
    return re.compile("".join(out).rstrip("/") + "(/.*)?")


def test_documented_export_paths_match_a_real_export(tiny_registered, workspace, tmp_path):
    runner = CliRunner()
    assert runner.invoke(main, ["cv", "--corpus", tiny_registered, "--taggers", "memorize", "--folds", "3",
                                "--no-progress"]).exit_code == 0
    out = tmp_path / "exported"
    assert runner.invoke(main, ["cache", "export", str(out), "--corpus", tiny_registered]).exit_code == 0
    written = [p.relative_to(out).as_posix() for p in out.rglob("*.xml")]
    test_fp = Workspace(workspace).load(tiny_registered).fingerprint("test")
    documented = _documented_paths("guide.md", "The prediction cache")
    assert len(documented) >= 3, documented
    for path in documented:
        pattern = _regex(path, "memorize", {"TESTFP": test_fp})
        assert any(pattern.fullmatch(w) for w in written), (path, pattern.pattern, written[:3])
    for path in _documented_paths("cache.md"):
        pattern = _regex(path, "memorize", {})
        assert all(pattern.fullmatch(w) for w in written), (path, written[:3])
