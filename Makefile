# Two entry points, both self-installing on a fresh machine:
#   make demo   - set up .venv and run the main job on the embedded synthetic corpora
#   make test   - set up .venv and run the default test suite (slow tests excluded)
# and a first step that shows a real result (its measured time: README):
#   make quick  - set up .venv and run the small demo (3 taggers, 3 folds)
VENV ?= .venv
# PyTorch's CPU-only wheels: PyPI's default torch on Linux is the CUDA build (gigabytes of
# nvidia-* packages). A GPU build: make TORCH_INDEX=<its index URL from pytorch.org> quick
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo quick test test-slow bench

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# The CPU wheel first, so nothing later pulls CUDA builds of torch
	# (the transformer extra needs no other torch: its tests run on the CPU).
	# Bounded wait on that index; where it cannot be reached, pip's own configuration
	# (local wheels, a mirror) is tried with the same command, then plain PyPI.
	$(PY) -m pip install -q torch==2.13.0 --index-url $(TORCH_INDEX) --timeout 20 --retries 1 || $(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,dask,external,transformer]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ensemble-deid demo

quick: $(STAMP)
	$(VENV)/bin/ensemble-deid demo --quick

test: $(STAMP)
	$(VENV)/bin/pytest

test-slow: $(STAMP)
	$(VENV)/bin/pytest -m slow

bench: $(STAMP)
	$(PY) benchmarks/run_all.py
