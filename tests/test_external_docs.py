"""The figures table of docs/external-systems.md is the benchmark's results
file (benchmarks/results/external.json) rendered by
benchmarks/members/bench_external.py, never typed by hand."""
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from members import bench_external  # noqa: E402
from provenance import body  # noqa: E402 - the results file without its provenance line


def test_docs_table_is_the_results_file():
    results = json.loads((ROOT / "benchmarks" / "results" / "external.json").read_text(encoding="utf-8"))
    docs = (ROOT / "docs" / "external-systems.md").read_text(encoding="utf-8")
    inside = docs.split(bench_external.BEGIN, 1)[1].split(bench_external.END, 1)[0].strip()
    assert inside == bench_external.markdown_table(results).strip()
    assert body((ROOT / "benchmarks" / "results" / "external.md").read_text(encoding="utf-8")) == bench_external.markdown_table(results)


def test_table_renders_every_row_of_the_results_file():
    results = {"rows": [
        {"system": "x", "corpus": "c", "documents": 2, "seconds": 1.25, "snapped": 1, "spans": 4,
         "strict": {"precision": 0.5, "recall": 0.25, "f1": 1 / 3},
         "binary_token": {"precision": 1.0, "recall": 0.5, "f1": 2 / 3}},
        {"system": "y", "unavailable": "module z is missing"},
    ]}
    lines = bench_external.markdown_table(results).splitlines()
    assert lines[2] == "| x | c | 2 | 0.500 | 0.250 | 0.333 | 1.000 | 0.500 | 0.667 | 1/4 | 1.2 |"
    assert lines[3].startswith("| y | unavailable: module z is missing |")


def test_bench_external_writes_results_and_leaves_the_docs_alone(tmp_path, monkeypatch):
    from ensemble_deid.taggers.registry import tagger_class

    ok, reason = tagger_class("scrubadub").availability()
    if not ok:
        pytest.skip(reason)
    docs_before = (ROOT / "docs" / "external-systems.md").read_bytes()
    out = tmp_path / "external.json"
    bench_external.main(["--systems", "scrubadub", "--meddocan", str(tmp_path / "none"), "--out", str(out)])
    results = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["system"], r["corpus"]) for r in results["rows"]] == [
        ("scrubadub", "synthetic-2014 test"), ("scrubadub", "synthetic-2016 test")]
    assert all(0 <= r["strict"]["f1"] <= 1 and r["documents"] == 40 for r in results["rows"])
    assert out.with_suffix(".md").read_text(encoding="utf-8") == bench_external.markdown_table(results)
    assert (ROOT / "docs" / "external-systems.md").read_bytes() == docs_before  # only the default file updates them
