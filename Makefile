# Two commands: `make run` and `make test`. Both build .venv first (idempotent).
# `make test-fast` is the edit loop: lint, types, and the tests with no slow / tmux / embedder /
# agents marker.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Where `make install` (and so `make run`) links the `nika` command.
BINDIR ?= $(HOME)/.local/bin

.PHONY: run install test test-fast lint imports typecheck unit unit-fast bench clean

# Each step says what it does and how long it takes: the lock step used to look hung (issue 17).
$(STAMP): pyproject.toml requirements.lock
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "nika-os needs Python 3.11+")'
	@echo "==> [1/4] creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@echo "==> [2/4] torch 2.13.0, CPU build (~200 MB; one to a few minutes)"
	# torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
	$(PY) -m pip install --progress-bar on torch==2.13.0
	@echo "==> [3/4] the locked dependencies (requirements.lock; one to two minutes)"
	$(PY) -m pip install --progress-bar on -r requirements.lock
	@echo "==> [4/4] nika-os itself (editable)"
	$(PY) -m pip install --quiet --no-deps -e .
	@touch $(STAMP)
	@echo "==> installed in $(VENV)"

# `nika` on PATH for the README's commands: a symlink $(BINDIR)/nika -> .venv/bin/nika.
# A symlink there is replaced (the newest clone wins); a regular file is never overwritten.
install: $(STAMP)
	@mkdir -p "$(BINDIR)"
	@if [ -e "$(BINDIR)/nika" ] && [ ! -L "$(BINDIR)/nika" ]; then \
		echo "note: $(BINDIR)/nika exists and is not ours; left as it is (use $(CURDIR)/$(VENV)/bin/nika)"; \
	else \
		ln -sfn "$(CURDIR)/$(VENV)/bin/nika" "$(BINDIR)/nika" && \
		echo "==> nika: $(BINDIR)/nika -> $(CURDIR)/$(VENV)/bin/nika"; \
	fi
	@case ":$$PATH:" in *":$(BINDIR):"*) ;; \
		*) echo "note: $(BINDIR) is not on your PATH; for this shell and the next ones run:"; \
		   echo "      export PATH=\"$(BINDIR):\$$PATH\"   (and add that line to your shell's rc file)";; \
	esac

run: install
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
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest -q --durations=30

unit-fast: $(STAMP)
	HF_HUB_OFFLINE=1 $(VENV)/bin/pytest -q -m "not slow and not tmux and not embedder and not agents"

test: lint imports typecheck unit

test-fast: lint imports typecheck unit-fast

bench: $(STAMP)
	@echo "see benchmarks/README.md"

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
