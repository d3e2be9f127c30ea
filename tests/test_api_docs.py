"""docs/api.md's worked example runs as written, and its ensemble scores are
those the ``ensemble`` command prints (issue 32)."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from ensemble_deid.cli import main

from .conftest import REPO_ROOT
from .tables import terminal_row

API_DOC = REPO_ROOT / "docs" / "api.md"


def _cells() -> list[str]:
    return re.findall(r"```python\n(.*?)```", API_DOC.read_text(encoding="utf-8"), flags=re.S)


@pytest.fixture(scope="module")
def worked_example(tmp_path_factory):
    """The namespace after running every cell in order, in a fresh folder."""
    folder = tmp_path_factory.mktemp("api-example")
    mp = pytest.MonkeyPatch()
    mp.chdir(folder)
    mp.delenv("ENSEMBLE_DEID_HOME", raising=False)
    mp.delenv("ENSEMBLE_DEID_CACHE", raising=False)
    namespace: dict = {}
    printed: list[str] = []
    namespace["print"] = lambda *args, **kw: printed.append(" ".join(map(str, args)))
    try:
        for i, cell in enumerate(_cells()):
            exec(compile(cell, f"docs/api.md cell {i + 1}", "exec"), namespace)
        yield folder, namespace, printed
    finally:
        mp.undo()


def test_the_worked_example_runs_and_shows_each_step(worked_example):
    folder, ns, printed = worked_example
    assert len(_cells()) >= 7
    text = "\n".join(printed)
    assert "refused (--param): threshold 4 exceeds the number of members (3)" in text
    assert "| ensemble.voting-pruned" in text  # the comparison table
    assert (folder / ns["bundle"].path / "manifest.json").exists() and "40/40 test documents" in ns["bundle"].summary
    assert ns["run"].processed == 5 and sorted(p.name for p in (folder / "deidentified" / "text").iterdir()) == \
        sorted(f"{d.id}.txt" for d in ns["corpus"].test[:5])
    assert ns["pruning"].search.threshold == ns["pruned"].result["record"]["threshold"]
    assert ns["cheap"].search.cost <= ns["budget"] and "f1 " in text and "cost " in text  # the cost cell


def _row(output: str, label: str) -> list[str]:
    return terminal_row(output, label)[1:]


def test_the_worked_example_reproduces_the_ensemble_command(worked_example, monkeypatch):
    """The command refits the ensemble (--refit) on the same cached members:
    the API's scores are the ones it prints, to the last printed digit."""
    folder, ns, _ = worked_example
    monkeypatch.setenv("ENSEMBLE_DEID_HOME", str(folder / "my-study"))
    res = CliRunner().invoke(main, ["ensemble", "--corpus", "synthetic-2014", "--method", "voting-pruned",
                                    "--members", ns["MEMBERS"], "--folds", "3", "--refit", "--no-progress",
                                    "--no-diagnostics"])
    assert res.exit_code == 0, res.output
    assert "computed test and oof" in res.output
    from ensemble_deid.studies.summary import strict_prf

    pruned = ns["pruned"]
    cv = strict_prf(pruned.corpus.train, pruned.result["oof"])
    test = strict_prf(pruned.corpus.test, pruned.test)
    assert _row(res.output, "ensemble.voting-pruned")[:6] == [f"{x:.4f}" for x in (*cv, *test)]
    record = pruned.result["record"]
    assert f"pruned voting: threshold {record['threshold']}, members {', '.join(record['subset'])}" in res.output
