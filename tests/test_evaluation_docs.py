"""The speed table of docs/evaluation.md is the benchmark's results file,
copied by benchmarks/scoring/bench_scorer.py, never typed by hand."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from provenance import body  # noqa: E402 - the results file without its provenance line


def test_docs_table_is_the_results_file():
    docs = (ROOT / "docs" / "evaluation.md").read_text(encoding="utf-8")
    table = body((ROOT / "benchmarks" / "results" / "scorer.md").read_text(encoding="utf-8")).rstrip()
    begin = "<!-- scorer-table:begin (benchmarks/results/scorer.md) -->"
    inside = docs.split(begin, 1)[1].split("<!-- scorer-table:end -->", 1)[0].strip()
    assert inside == table
