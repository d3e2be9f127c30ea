"""Every results file in benchmarks/results/ names the script, command and
commit that made it, docs/benchmarks.md lists them all, and a results file
whose code changed since it was made is regenerated or listed, with the
reason, in benchmarks/stale.json (benchmarks/provenance.py; issue 53
finding 1: the README's recall-first rows were older than the trust code
they measured, and nothing said so)."""
from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def provenance():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("provenance")


@pytest.fixture(scope="module")
def survey(provenance):
    return provenance.survey()


def test_every_results_file_names_an_existing_script_its_command_and_commit(survey):
    assert len(survey) == len([p for p in (BENCH / "results").iterdir() if not p.name.startswith(".")])
    for r in survey:
        rec = r["record"]
        assert rec, f"{r['file']}: no provenance record (python benchmarks/provenance.py record FILE --script S --command C)"
        assert (ROOT / rec["script"]).is_file(), f"{r['file']}: {rec['script']} does not exist"
        assert rec["command"].strip(), r["file"]
        assert re.fullmatch(r"[0-9a-f]{40}", rec.get("commit") or ""), f"{r['file']}: no commit recorded"


def test_docs_index_lists_every_results_file(provenance, survey):
    text = provenance.DOC.read_text(encoding="utf-8")
    assert provenance.synced_doc(text, provenance.index_table(survey)) == text, \
        "docs/benchmarks.md's results index is out of date: python benchmarks/provenance.py"
    for r in survey:
        assert f"| `{r['file']}` | `{r['record']['script']}` |" in text


def test_recorded_commits_are_in_this_history(survey):
    if subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout")
    if subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                      text=True).stdout.strip() == "true":
        pytest.skip("a shallow clone: the commits results files were made at are not all here")
    commits = {c for r in survey for c in (r["record"].get("commit"), r["record"].get("run_at")) if c}
    outside = sorted(c for c in commits if subprocess.run(["git", "merge-base", "--is-ancestor", c, "HEAD"],
                                                           cwd=ROOT, capture_output=True).returncode)
    assert not outside, f"results files name commits that are not ancestors of HEAD: {outside}"


def test_stale_results_are_exactly_the_listed_ones(provenance, survey):
    known = provenance.stale_list()
    stale = {r["file"]: r for r in survey if r["status"] == "stale"}
    new = sorted(set(stale) - set(known))
    assert not new, "results files older than the code they measure; regenerate them, or list them in " \
        "benchmarks/stale.json with the reason (python benchmarks/provenance.py stale --write --reason ...):\n" + \
        "\n".join(f"  {n}: {stale[n]['why']}\n    regenerate: {stale[n]['record'].get('command')}" for n in new)
    fresh = sorted(set(known) - set(stale))
    assert not fresh, f"no longer stale: remove them from benchmarks/stale.json: {fresh}"
    assert all(isinstance(v, str) and v.strip() for v in known.values()), "every stale file needs its reason"


def test_a_changed_fingerprint_is_found(provenance, survey):
    # the recall-first results of before the trust changes: a record whose code differs is stale
    current = next(r for r in survey if r["file"] == "recall-first-meddocan.json")
    old = {**current["record"], "fingerprint": "0" * 16}
    state, why = provenance.status(BENCH / "results" / "recall-first-meddocan.json", old, {})
    assert state == "stale" and "benchmarks/ensembles/recall_first.py" in why


def _tree(tmp_path: Path, helper_body: str = "return x + 1", docstring: str = "Add one.",
          other: str = "Y = 1\n") -> Path:
    root = tmp_path / "repo"
    (root / "benchmarks" / "group").mkdir(parents=True, exist_ok=True)
    (root / "ensemble_deid" / "part").mkdir(parents=True, exist_ok=True)
    (root / "ensemble_deid" / "__init__.py").write_text("")
    (root / "ensemble_deid" / "part" / "__init__.py").write_text("")
    (root / "ensemble_deid" / "part" / "maths.py").write_text(
        f'"""{docstring}"""\nimport os\n\n\ndef plus(x):\n    # why: a comment\n    {helper_body}\n')
    (root / "ensemble_deid" / "other.py").write_text(other)
    (root / "benchmarks" / "common.py").write_text(
        "def shared(x):\n    return 2 * x\n\n\ndef write_json(path, data):\n    pass\n\n\ndef unused():\n    return 0\n")
    (root / "benchmarks" / "group" / "script.py").write_text(
        "import sys\nfrom pathlib import Path\nsys.path.insert(0, str(Path(__file__).resolve().parents[1]))\n"
        "from common import shared, write_json\n\n\ndef main():\n"
        "    from ensemble_deid.part.maths import plus\n    return shared(plus(1))\n")
    return root


def test_fingerprint_follows_the_code_a_script_depends_on(provenance, tmp_path):
    script = "benchmarks/group/script.py"
    base = provenance.fingerprint(script, _tree(tmp_path / "a"))
    # docstrings, comments, imports and writers do not count ...
    same = _tree(tmp_path / "b", docstring="Add one, documented better.")
    (same / "ensemble_deid" / "part" / "maths.py").write_text(
        (same / "ensemble_deid" / "part" / "maths.py").read_text().replace("import os\n", "import re\n"))
    (same / "benchmarks" / "common.py").write_text((same / "benchmarks" / "common.py").read_text()
                                                   .replace("    pass", "    print(path)")
                                                   .replace("return 0", "return 1"))
    assert provenance.fingerprint(script, same) == base
    assert provenance.fingerprint(script, _tree(tmp_path / "c", other="Y = 2\n")) == base  # a module it never names
    # ... a change of the code it runs does
    assert provenance.fingerprint(script, _tree(tmp_path / "d", helper_body="return x + 2")) != base
    own = _tree(tmp_path / "f")  # the script's own code
    (own / script).write_text((own / script).read_text().replace("shared(plus(1))", "shared(plus(2))"))
    assert provenance.fingerprint(script, own) != base
    changed = _tree(tmp_path / "e")
    (changed / "benchmarks" / "common.py").write_text((changed / "benchmarks" / "common.py").read_text()
                                                      .replace("2 * x", "3 * x"))
    assert provenance.fingerprint(script, changed) != base


def test_the_results_writers_add_the_record(tmp_path, monkeypatch, provenance):
    common = importlib.import_module("common")
    script = BENCH / "scale" / "cv_cost.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--cores", "2"])
    monkeypatch.setattr(common, "_RECORD", [])
    common.write_json(tmp_path / "r.json", {"figure": 1})
    common.write_markdown(tmp_path / "r.md", "| a |\n|---|\n| 1 |\n")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["figure"] == 1
    rec = data["provenance"]
    assert rec["script"] == "benchmarks/scale/cv_cost.py"
    assert rec["command"] == "python benchmarks/scale/cv_cost.py --cores 2"
    assert rec["fingerprint"] == provenance.fingerprint("benchmarks/scale/cv_cost.py")
    assert provenance.read_record(tmp_path / "r.md") == rec
    assert provenance.body((tmp_path / "r.md").read_text()) == "| a |\n|---|\n| 1 |\n"
    # a document of the repository a script writes a table into gets no record
    assert provenance.with_record(ROOT / "docs" / "benchmarks.md", "text\n", rec) == "text\n"
