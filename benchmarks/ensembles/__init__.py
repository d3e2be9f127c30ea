"""Benchmarks of the meta-learners over the members' predictions: recall-first
objectives, the [KIM20] variants, richer stackers, member trust, selection
within a cost budget and the stacked learners' speed.
Run each as ``python benchmarks/ensembles/<script>.py``; see docs/benchmarks.md."""
