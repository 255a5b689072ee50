# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint results bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamp files: reinstall only when pyproject.toml changes. --no-compile: modules are
# byte-compiled when first imported, not all of them at install (two thirds of its CPU time).
$(VENV)/.run-deps: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-compile -e '.[images,serve]'
	touch $@

$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-compile -e '.[test,images,serve,parquet,dask]'
	touch $@

run: $(VENV)/.run-deps
	$(BIN)/spectui

lint: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# Tests run in parallel (pytest-xdist): one process per core, idle ones take tests queued
# for busy ones. PYTEST_WORKERS=0 runs them in one process, in file order. (Two per core
# did not shorten a clean-clone run: it added CPU, e.g. module fixtures built twice.)
PYTEST_WORKERS ?= auto

test: lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal

# Regenerate the committed results from the original's sweep.
results: $(VENV)/.run-deps
	$(BIN)/spectui sweep --preset seed-576 --out results/sweep_summary.csv
	$(BIN)/spectui analyze results/sweep_summary.csv --markdown results/findings.md
	$(BIN)/spectui plot results/sweep_summary.csv --out results/plots

bench: $(VENV)/.test-deps
	$(BIN)/python benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
