"""Benchmarks of the apply path: a fitted bundle de-identifying notes (throughput,
agreement with the cached predictions, dask, long streams, where the time goes)
and the bundles themselves. Run each as
``python benchmarks/deidentify/<script>.py``; see docs/benchmarks.md."""
