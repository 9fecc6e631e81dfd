"""Install pinned agent CLIs from npm into a cache shared by test runs.

The real-CLI suite drives the binaries that users run (`claude`, `codex`, `gemini`, `opencode`),
installed from the npm registry at the versions pinned in ``PINNED``. Each package goes into its own
prefix under the cache (``$NIKA_AGENT_CLI_CACHE``, else ``~/.cache/nika-os/agent-clis``) so that two
versions never mix and a second run installs nothing. A file lock keeps parallel test processes from
installing the same package twice.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# package -> (version, executable name). Versions verified in docs/agents.md.
PINNED: dict[str, tuple[str, str]] = {
    "@anthropic-ai/claude-code": ("2.1.197", "claude"),
    "@openai/codex": ("0.171.0", "codex"),
    "@google/gemini-cli": ("0.61.0", "gemini"),
    "opencode-ai": ("1.18.33", "opencode"),
}


class CliInstallError(RuntimeError):
    """npm is missing or refused to install a pinned CLI."""


def cache_root() -> Path:
    """Where the pinned CLIs are installed (created 0700)."""
    root = Path(
        os.environ.get("NIKA_AGENT_CLI_CACHE") or Path.home() / ".cache" / "nika-os" / "agent-clis"
    )
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def install_cli(package: str, version: str | None = None) -> Path:
    """Return the path of the CLI's executable, installing it from npm on first use.

    Args:
        package: the npm package name, a key of ``PINNED``.
        version: overrides the pinned version (tests of unknown versions).

    Raises:
        CliInstallError: npm is not on PATH or the install failed (its stderr's tail is included).
    """
    # Imported here: only the `agents` tests install a CLI, and every collection imports this.
    from filelock import FileLock

    pinned_version, exe = PINNED[package]
    version = version or pinned_version
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError("npm is not on PATH: install node and npm (.ci/run does it)")
    prefix = cache_root() / f"{package.replace('/', '+')}@{version}"
    binary = prefix / "node_modules" / ".bin" / exe
    with FileLock(str(prefix) + ".lock"):
        if binary.exists():
            return binary
        prefix.mkdir(parents=True, exist_ok=True, mode=0o700)
        proc = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                f"{package}@{version}",
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 or not binary.exists():
            tail = (proc.stderr or proc.stdout)[-800:]
            raise CliInstallError(f"npm install {package}@{version} failed: {tail}")
    return binary
