"""Benchmarks of scoring and inspecting output: the evaluation module's speed
(``bench_scorer.py``) and the HTML error-analysis page (``bench_report.py``).
Run each as ``python benchmarks/scoring/<script>.py``; see docs/benchmarks.md."""
