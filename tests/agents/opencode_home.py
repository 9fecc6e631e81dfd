"""The tenant's OpenCode home for the real-CLI tests (a pytest plugin, ``tests/conftest.py``).

``opencode run`` runs headless with ``OPENCODE_CONFIG_DIR`` = the tenant's agent home, where
``install_opencode_plugin`` wrote ``plugin/nika-memory.js`` and where the fixture writes what a
person would: an ``opencode.json`` with an OpenAI-compatible provider pointing at the mock
server. HOME and the XDG dirs are temp dirs, so nothing touches a real OpenCode setup.

OpenCode installs ``@opencode-ai/plugin`` into every config dir it loads (npm, on every run);
the fixture gives both dirs (the tenant's and the XDG one) the tree and lock of a copy installed
once into the CLI cache, so that a run does not wait for the registry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

from nika_tui.services.opencode_settings import install_opencode_plugin, opencode_config_dir
from tests.agents.cli_install import PINNED, cache_root
from tests.agents.headless import run_ok
from tests.agents.mock_gemini_openai_chat import MockModelServer

TENANT = "acme"
WINDOW = 200_000


@pytest.fixture(scope="module")
def plugin_deps() -> Path:
    """``node_modules`` with ``@opencode-ai/plugin`` at OpenCode's own version, installed once."""
    version = PINNED["opencode-ai"][0]
    prefix = cache_root() / f"opencode-plugin-deps@{version}"
    with FileLock(f"{prefix}.lock"):
        if not (prefix / "node_modules" / "@opencode-ai" / "plugin").is_dir():
            npm = shutil.which("npm")
            if npm is None:
                pytest.skip("npm is not on PATH: the real-CLI suite needs node + npm")
            prefix.mkdir(parents=True, exist_ok=True)
            proc = subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
                 f"@opencode-ai/plugin@{version}"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                # As for the CLIs themselves (conftest._binary): npm present but failing is a
                # failure, not a reason to skip the suite silently.
                pytest.fail(f"@opencode-ai/plugin not installable: {proc.stderr[-400:]}")
    return prefix


def _link(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another filesystem
        shutil.copy2(src, dst)


def _preinstall(folder: Path, deps: Path) -> None:
    """Give a config dir OpenCode loads the plugin package it installs there on every run: the
    same tree and lock (hard links), so its ``npm install`` finds nothing to fetch. A symlinked
    ``node_modules`` is replaced by a fresh install (about a minute here)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copytree(
        deps / "node_modules", folder / "node_modules", symlinks=True, copy_function=os.link
    )
    for name in ("package.json", "package-lock.json"):
        shutil.copy(deps / name, folder / name)


@dataclass
class OpenCode:
    binary: Path
    project: Path
    env: dict[str, str]
    server: MockModelServer

    def run(self, prompt: str) -> subprocess.CompletedProcess[str]:
        return run_ok([str(self.binary), "run", prompt], self.project, self.env, 240)


@pytest.fixture
def opencode(
    opencode_bin: Path,
    plugin_deps: Path,
    gemini_chat_model: MockModelServer,
    make_tenant: Callable[..., object],
    redis_url: str,
    tmp_path: Path,
) -> OpenCode:
    make_tenant(TENANT)
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    config_dir = opencode_config_dir(TENANT)
    config_dir.mkdir(parents=True, mode=0o700)
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "Mock",
        "options": {"baseURL": f"{gemini_chat_model.url}/v1", "apiKey": "test-key-not-a-secret"},
        "models": {"mock-model": {"name": "Mock", "limit": {"context": WINDOW, "output": 8000}}},
    }
    (config_dir / "opencode.json").write_text(
        json.dumps(
            {"provider": {"mock": provider}, "model": "mock/mock-model", "share": "disabled"}
        )
    )
    home = tmp_path / "home"
    for folder in (config_dir, home / ".config" / "opencode"):
        _preinstall(folder, plugin_deps)
    install_opencode_plugin(TENANT)
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG_DIR": str(config_dir),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "NIKA_TENANT_ID": TENANT,
        "REDIS_URL": redis_url,
        "NO_COLOR": "1",
        # A shell sets PWD to the directory it starts a program in; OpenCode reads it.
        "PWD": str(project),
    }
    return OpenCode(opencode_bin, project, env, gemini_chat_model)
