"""The tables the docs copy from results files are the results files' own
(``benchmarks/sync_docs.py``): a benchmark rerun without a docs sync, or a
figure typed into a marked block, fails here."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def sync_docs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("sync_docs")


def test_marked_docs_tables_match_their_results_files(sync_docs, capsys):
    assert sync_docs.main(["--check"]) == 0, capsys.readouterr().out


def test_a_marked_block_gets_the_first_table_of_its_file(sync_docs):
    text = ("intro\n<!-- table from benchmarks/results/run_all-meddocan.md -->\n| typed | by hand |\n"
            "<!-- end of table -->\nafter\n")
    out = sync_docs.synced(text)
    table = sync_docs.first_table(BENCH / "results" / "run_all-meddocan.md")
    assert out == ("intro\n<!-- table from benchmarks/results/run_all-meddocan.md -->\n" + table
                   + "<!-- end of table -->\nafter\n")
    assert "typed" not in out and table.startswith("| system ")
