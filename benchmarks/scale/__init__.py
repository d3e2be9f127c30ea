"""Benchmarks of size and time at scale: the prediction cache, cross-validation
and its published cost, publishing, the pruning search, long inputs, and the
documented user commands timed end to end.
Run each as ``python benchmarks/scale/<script>.py``; see docs/benchmarks.md."""
