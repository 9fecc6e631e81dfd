"""``nika`` driven on a real pseudo-terminal, as a person types at it.

The one pty driver of the suite: :func:`nika_on_pty` starts ``python -m nika_tui ARGS`` on a
fresh pty and hands back the process and its :class:`Terminal` (read up to each expected text
in turn, prompt_toolkit's cursor-position query answered). :func:`run_setup` is a first setup
answered with defaults, then the import offer (the tests of the wizard's import offer).
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import subprocess
import sys
import termios
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from nika_tui.domain.tenant import AgentCli
from nika_tui.services.agent_clis import AGENT_BINARIES

ROOT = Path(__file__).resolve().parents[2]
# The questions of a first setup, in order, each answered with its default (Enter).
DEFAULTS = [
    "Display name",
    "Language",
    "Plan level",
    "Agent CLI for this tenant",
    "Privacy mode",
    "Cloud providers",
    "Knowledge repository",
    "auto-scale",
    "auto-compress",
    "auto-purge",
    "auto-REM",
    "plan quotas",
    "Write this configuration?",
]


class Terminal:
    """The wizard's side of a pty: what it printed, read up to each question in turn."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.seen = b""
        self.at = 0

    def wait(self, needle: str, limit_s: float = 60.0) -> str:
        """Read until ``needle`` appears after the previous one; the text in between."""
        want = needle.encode()
        while want not in self.seen[self.at :]:
            ready, _, _ = select.select([self.fd], [], [], limit_s)
            assert ready, f"no {needle!r} on the terminal; its end:\n{self.seen[-1500:]!r}"
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:  # the wizard exited
                chunk = b""
            assert chunk, f"the wizard ended before {needle!r}:\n{self.seen[-1500:]!r}"
            self.seen += chunk
            if b"\x1b[6n" in chunk:  # prompt_toolkit asks where the cursor is
                os.write(self.fd, b"\x1b[1;1R")
        start, self.at = self.at, self.seen.index(want, self.at) + len(want)
        return self.seen[start : self.at].decode(errors="replace")

    def answer(self, needle: str, keys: str) -> str:
        """Wait for a question, then type ``keys``."""
        shown = self.wait(needle)
        os.write(self.fd, keys.encode())
        return shown


def _own_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@contextmanager
def nika_on_pty(
    args: list[str], env: Mapping[str, str], *, controlling: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], Terminal]]:
    """``python -m nika_tui ARGS`` on a new pty; killed if still running at the end.

    ``controlling``: the pty becomes the child's controlling terminal, so a Ctrl-C typed is
    the terminal's SIGINT, as in a real one (else the child only reads the byte).
    """
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=dict(env),
        close_fds=True,
        **({"preexec_fn": _own_terminal} if controlling else {"start_new_session": True}),
    )
    os.close(slave)
    try:
        yield proc, Terminal(master)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def run_setup(
    tmp_path: Path, home: Path, agent: AgentCli, binary: Path, tenant: str, offer: str, accept: bool
) -> str:
    """Run ``nika setup`` on a pty with ``home`` as HOME and ``binary`` on PATH as ``agent``'s
    executable; every question by default, the import ``offer`` answered. What it printed
    from the offer on.
    """
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / AGENT_BINARIES[agent]).symlink_to(binary)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
    } | {
        "HOME": str(home),
        "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
    }
    with nika_on_pty(["setup"], env) as (proc, term):
        term.answer("Tenant id", f"{tenant}\r")
        for question in DEFAULTS:
            term.answer(question, "\r")
        term.wait("Wrote ")
        term.answer(offer, "y\r" if accept else "n\r")
        said = term.wait("Next: `nika doctor`", limit_s=120)
        assert proc.wait(timeout=60) == 0, said
    return said
