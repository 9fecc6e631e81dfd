"""Root fixtures: every test runs against temp config/data dirs and a private tmux socket.

Area fixtures live in ``tests/plugins/*.py`` (one file per area, listed below) so that
modules can grow their fixtures without touching this file.
"""

from __future__ import annotations

import gc
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

if sys.dont_write_bytecode:
    # PYTHONDONTWRITEBYTECODE (set on the team's machines) also stops pytest from caching the
    # assertion-rewritten test modules: every run parsed and rewrote all of them again, half of
    # the collection time (issue 12). Cache bytecode outside the tree instead, which keeps the
    # work trees free of it. Read per module by pytest's rewriter, so set before collection.
    _prefix = Path.home() / ".cache" / "nika-os" / "pycache"
    _prefix.mkdir(mode=0o700, parents=True, exist_ok=True)
    sys.pycache_prefix = sys.pycache_prefix or str(_prefix)
    sys.dont_write_bytecode = False

pytest_plugins = [
    "tests.plugins.keyring_memory",
    "tests.plugins.redis_server",
    "tests.plugins.vectors",
    "tests.plugins.tmux_server",
    "tests.plugins.memory",
    "tests.plugins.debt",
    "tests.plugins.textual_snapshot",
    "tests.agents.opencode_home",
]

_MARK_BY_FIXTURE = {"embedder": "embedder", "tmux_server": "tmux"}
"""A fixture that loads the real model or starts tmux, and the marker its tests must carry."""


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects: the marker must already be there
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what its fixtures (direct or not) load, so ``make test-fast`` never
    pulls the model or tmux in through a fixture whose test forgot its marker (issue 12)."""
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for fixture, mark in _MARK_BY_FIXTURE.items():
            if fixture in used and item.get_closest_marker(mark) is None:
                item.add_marker(mark)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built (modules, 2,000+ items, their fixtures' definitions) out of
    the garbage collector's reach: it lives to the end of the session anyway, and pytest's
    closing ``gc.collect()`` passes (five of them, for unraisable exceptions) walked it all —
    over a second of every run, more than the rest of a ``--collect-only`` (issue 12)."""
    gc.freeze()


_ISOLATED = (
    "NIKA_OS_CONFIG_DIR",
    "NIKA_OS_DATA_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "NIKA_TMUX_SOCKET",
    "REDIS_URL",
    "QDRANT_URL",
    "TMUX",
    "TMUX_PANE",
)


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Point every nika path at a temp dir; never touch the user's setup or tmux server."""
    for key in _ISOLATED:
        monkeypatch.delenv(key, raising=False)
    for key in [k for k in os.environ if k.startswith(("SCW_", "CNTB_", "AZURE_", "AWS_"))]:
        monkeypatch.delenv(key, raising=False)
    for key in ("GOOGLE_APPLICATION_CREDENTIALS", "RUNPOD_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    cfg = tmp_path / "config"
    data = tmp_path / "data"
    env = {
        "NIKA_OS_CONFIG_DIR": str(cfg),
        "NIKA_OS_DATA_DIR": str(data),
        "NIKA_TMUX_SOCKET": f"nika-test-{uuid.uuid4().hex[:10]}",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # Hook servers started by a test's hook runs exit soon after it (nika_tui.hookd).
        "NIKA_HOOKD_IDLE_S": "10",
        # Parallel tests' kernels are not throttled by one another's cgroups (tests/quota opt in).
        "NIKA_QUOTA_CGROUPS": "0",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield env
