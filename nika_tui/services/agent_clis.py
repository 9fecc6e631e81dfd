"""Which agent CLIs are installed, and their versions.

Small public API (kernels and ``nika doctor`` import it):

* :data:`AGENT_BINARIES` — the executable name of each :class:`AgentCli` (shell: ``$SHELL``).
* :data:`AGENT_LABELS` / :data:`INSTALL_HINTS` — what to show and how to install it.
* :func:`detect_agent_cli` / :func:`detect_agent_clis` — look on ``PATH`` and run
  ``BINARY --version`` with a short timeout (the process group is killed on timeout, so a CLI
  that waits for a login prompt cannot hang the caller).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from nika_tui.domain.tenant import AgentCli

VERSION_TIMEOUT = 3.0

AGENT_BINARIES: dict[AgentCli, str] = {
    AgentCli.CLAUDE_CODE: "claude",
    AgentCli.CODEX: "codex",
    AgentCli.GEMINI_CLI: "gemini",
    AgentCli.OPENCODE: "opencode",
}

AGENT_LABELS: dict[AgentCli, str] = {
    AgentCli.CLAUDE_CODE: "Claude Code",
    AgentCli.CODEX: "Codex",
    AgentCli.GEMINI_CLI: "Gemini CLI",
    AgentCli.OPENCODE: "OpenCode",
    AgentCli.SHELL: "plain shell",
}

INSTALL_HINTS: dict[AgentCli, str] = {
    AgentCli.CLAUDE_CODE: "npm install -g @anthropic-ai/claude-code",
    AgentCli.CODEX: "npm install -g @openai/codex",
    AgentCli.GEMINI_CLI: "npm install -g @google/gemini-cli",
    AgentCli.OPENCODE: "npm install -g opencode-ai",
    AgentCli.SHELL: "install a POSIX shell (sh)",
}

_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+][0-9A-Za-z.-]+)?")


@dataclass(frozen=True, slots=True)
class AgentCliInfo:
    """One agent CLI as found on this machine.

    Attributes:
        cli: Which CLI.
        binary: The executable name looked up.
        path: Its resolved path, or ``None`` when not on PATH.
        version: The version parsed from ``--version``, when it answered.
        detail: Why the version is unknown (timeout, exit code), else empty.
    """

    cli: AgentCli
    binary: str
    path: str | None
    version: str | None = None
    detail: str = ""

    @property
    def installed(self) -> bool:
        """True when the executable is on PATH."""
        return self.path is not None

    @property
    def label(self) -> str:
        """Human name, e.g. ``Claude Code``."""
        return AGENT_LABELS[self.cli]

    @property
    def install_hint(self) -> str:
        """The command that installs it."""
        return INSTALL_HINTS[self.cli]


def shell_binary(parent_env: Mapping[str, str] | None = None) -> str:
    """The user's shell (``$SHELL``), ``sh`` when unset."""
    e = os.environ if parent_env is None else parent_env
    return e.get("SHELL") or "sh"


def binary_for(cli: AgentCli, parent_env: Mapping[str, str] | None = None) -> str:
    """The executable name of ``cli``."""
    return AGENT_BINARIES.get(cli) or shell_binary(parent_env)


def parse_version(output: str) -> str | None:
    """The first version number in a ``--version`` output (``1.0.51 (Claude Code)`` → 1.0.51)."""
    match = _VERSION.search(output)
    return match.group(0) if match else None


def _run_version(path: str, timeout: float) -> tuple[str | None, str]:
    try:
        proc = subprocess.Popen(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its own process group: killable with its children
            env={**os.environ, "NO_COLOR": "1", "CI": "1"},
        )
    except OSError as exc:
        return None, f"cannot run: {exc.strerror}"
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None, f"`--version` did not answer within {timeout:g} s"
    version = parse_version(out or "")
    if proc.returncode != 0:
        return version, f"`--version` exited with {proc.returncode}"
    return version, "" if version else "no version in `--version` output"


def detect_agent_cli(
    cli: AgentCli,
    *,
    path: str | None = None,
    parent_env: Mapping[str, str] | None = None,
    timeout: float = VERSION_TIMEOUT,
) -> AgentCliInfo:
    """Look one CLI up on ``PATH`` and ask its version.

    Args:
        cli: The CLI.
        path: Search path (default ``$PATH``).
        parent_env: Environment for ``$SHELL`` (default ``os.environ``).
        timeout: Seconds allowed for ``--version``.

    Returns:
        What was found. The plain shell's version is not probed.
    """
    binary = binary_for(cli, parent_env)
    found = shutil.which(binary, path=path)
    if found is None:
        return AgentCliInfo(cli, binary, None, None, "not found on PATH")
    if cli is AgentCli.SHELL:
        return AgentCliInfo(cli, binary, found)
    version, detail = _run_version(found, timeout)
    return AgentCliInfo(cli, binary, found, version, detail)


def detect_agent_clis(
    *,
    path: str | None = None,
    parent_env: Mapping[str, str] | None = None,
    timeout: float = VERSION_TIMEOUT,
) -> dict[AgentCli, AgentCliInfo]:
    """Detect every agent CLI (in parallel, so the wizard waits for the slowest only).

    Returns:
        One entry per :class:`AgentCli`, in enum order.
    """
    with ThreadPoolExecutor(max_workers=len(AgentCli)) as pool:
        futures = {
            cli: pool.submit(
                detect_agent_cli, cli, path=path, parent_env=parent_env, timeout=timeout
            )
            for cli in AgentCli
        }
        return {cli: fut.result() for cli, fut in futures.items()}
