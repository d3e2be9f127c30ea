"""Benchmarks of the base taggers (the ensembles' members) and of the external
systems: accuracy and speed of the CRF, linear, neural and transformer taggers,
their settings chosen by CV, new members, long CV runs and each member's cost.
Run each as ``python benchmarks/members/<script>.py``; see docs/benchmarks.md."""
