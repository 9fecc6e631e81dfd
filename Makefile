# Two commands: `make run` and `make test`. Both build .venv first (idempotent).
# `make test-fast` is the edit loop: lint, types, and the tests with no slow / tmux / embedder /
# agents marker.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast lint imports typecheck unit unit-fast bench clean

$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "nika-os needs Python 3.11+")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/nika

lint: $(STAMP)
	$(VENV)/bin/ruff check nika_tui tests benchmarks
	$(VENV)/bin/ruff format --check nika_tui tests benchmarks

# Layer and boundary contracts (pyproject's [tool.importlinter]; docs/architecture.md).
imports: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(VENV)/bin/mypy

unit: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest -q

unit-fast: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest -q -m "not slow and not tmux and not embedder and not agents"

test: lint imports typecheck unit

test-fast: lint imports typecheck unit-fast

bench: $(STAMP)
	@echo "see benchmarks/README.md"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
