# Two commands on a fresh machine: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test lint results bench clean

# Without pip (seeding it took 5-7 s): the system's pip puts uv into the venv, or, where the
# system has no pip, the venv gets its own first.
$(BIN)/python:
	$(PYTHON) -m venv --without-pip $(VENV)

# The installer: uv (from PyPI, as every other dependency), which downloads in parallel and
# installs in a third of pip's time on a clean machine. Modules are byte-compiled when first
# imported, not all of them at install.
UV_VERSION := 0.13.8
PIP_QUIET := --quiet --disable-pip-version-check
$(BIN)/uv: | $(BIN)/python
	$(PYTHON) -m pip --python $(BIN)/python install $(PIP_QUIET) 'uv==$(UV_VERSION)' || \
	{ $(BIN)/python -m ensurepip && $(BIN)/python -m pip install $(PIP_QUIET) 'uv==$(UV_VERSION)'; }

# Stamp files: reinstall only when pyproject.toml changes.
$(VENV)/.run-deps: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[images,serve]'
	touch $@

$(VENV)/.test-deps: pyproject.toml | $(BIN)/uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[test,images,serve,parquet,dask]'
	touch $@

run: $(VENV)/.run-deps
	$(BIN)/spectui

lint: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

# Tests run in parallel (pytest-xdist): one process per core and one more, idle ones take
# tests queued for busy ones. The extra process runs while another waits on a subprocess, a
# thread or the app's event loop (on 2 cores, 3 processes took 312 s of pytest where 2 took
# 341 s, the same CPU). PYTEST_WORKERS=0 runs them in one process, in file order. (Two per
# core did not shorten a clean-clone run: it added CPU, e.g. module fixtures built twice.)
PYTEST_WORKERS ?= $(shell python3 -c "import os; print(len(os.sched_getaffinity(0)) + 1)" 2>/dev/null || echo auto)

# With bytecode written (some machines set PYTHONDONTWRITEBYTECODE): each module is compiled
# once, not again in every worker, `spectui` subprocess and Dask worker the tests start
# (importing pandas from source is 3x its time from bytecode).
# mypy runs beside pytest (it is one process; the test workers leave part of a core idle
# while they wait on subprocesses), and `make test` fails if either does.
test: $(VENV)/.test-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy > $(VENV)/mypy.out 2>&1 & mypy=$$!; \
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal; \
	tests=$$?; wait $$mypy; typed=$$?; cat $(VENV)/mypy.out; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

# Regenerate the committed results from the original's sweep.
results: $(VENV)/.run-deps
	$(BIN)/spectui sweep --preset seed-576 --out results/sweep_summary.csv
	$(BIN)/spectui analyze results/sweep_summary.csv --markdown results/findings.md
	$(BIN)/spectui plot results/sweep_summary.csv --out results/plots
	$(BIN)/spectui validate --markdown docs/validation.md > /dev/null

bench: $(VENV)/.test-deps
	$(BIN)/python benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
