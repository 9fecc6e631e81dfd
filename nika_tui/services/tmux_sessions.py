"""The tmux adapter of the kernels: nika's private tmux server, through libtmux.

Every call goes to ``tmux -L {socket}`` (never the user's default server) and every target is
exact (``=name:``; tmux otherwise matches session names by prefix). libtmux's exceptions and
tmux's stderr become :class:`nika_tui.errors.KernelError`.

Creating a session is one tmux invocation chaining five commands (:meth:`TmuxSessions.create`):
``new-session`` on a constant placeholder with the start directory and the ``-e VAR=value``
session environment, ``set-option -g update-environment ""`` (an attaching shell's variables stay
out), ``set-option remain-on-exit on``, ``set-option @nika_tenant {owner}`` (marks
the session as nika's: a foreign session with the same name is never touched), then
``respawn-pane -k`` with the agent. Every tmux command runs with an allow-listed environment,
and a running server's global environment is scrubbed first
(:mod:`nika_tui.services.tmux_env`). ``remain-on-exit`` is in place before the agent starts,
so a CLI that dies at once leaves its last words on the pane.

Argument safety: the agent runs as ``/bin/sh -c {RUN_SHIM text} ARGV...``. The only shell text
is our constant; each element of the command is a positional parameter (``"$0" "$@"``), so
``; touch /tmp/pwned`` is an argument, never code. The shim stays as the agent's parent to print
``[exited N]`` when it ends: tmux 3.3 does not always report a dead pane's status.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nika_tui.errors import KernelError
from nika_tui.services.tmux_env import foreign_globals, server_environment

if TYPE_CHECKING:  # libtmux is imported on first use: importing the kernels stays light
    import libtmux


def _tmux_error() -> type[Exception]:
    """libtmux's base exception, looked up when one is being handled (libtmux is loaded by
    then: only a call through :attr:`TmuxSessions.server` raises it)."""
    from libtmux import exc

    return exc.LibTmuxException


OWNER_OPTION = "@nika_tenant"
PANE_WIDTH, PANE_HEIGHT = 200, 50
# A killed full-screen CLI leaves the terminal raw (no CR on LF) and its screen drawn: the mark
# starts its own line (CR LF) and clears what is left of it (ESC [K).
RUN_SHIM = (
    "/bin/sh",
    "-c",
    '"$0" "$@"; s=$?; printf \'\\r\\n[exited %d]\\033[K\\r\\n\' "$s"; exit "$s"',
)
"""Constant shell text; the agent's argv follows as positional parameters."""
EXIT_MARK = re.compile(r"^\[exited (\d+)\]")
"""The shim's line; a screen remnant after it (a terminal that ignored ESC [K) does not hide it."""
_PLACEHOLDER = "cat"
"""What the session runs until ``respawn-pane`` replaces it (constant text)."""


_PANE_FORMAT = "\t".join(
    (
        "#{session_name}",
        "#{" + OWNER_OPTION + "}",
        "#{pane_id}",
        "#{pane_pid}",
        "#{pane_dead}",
        "#{pane_dead_status}",
        "#{window_name}",
    )
)


def _window_pane(line: str) -> tuple[str, PaneInfo] | None:
    """``(window name, pane)`` from one ``_PANE_FORMAT`` line of ``list-panes``."""
    parts = line.split("\t")
    if len(parts) != 7:
        return None  # a foreign session or window name with a tab: not ours anyway
    session, owner, pane_id, pid, dead, status, window = parts
    pid_value = int(pid) if pid.isdigit() else None
    return window, PaneInfo(session, owner, pane_id, pid_value, dead == "1", status)


_NO_SERVER = ("no server running", "server exited", "error connecting", "no current target")
"""What tmux says when there is no server, or one shutting down with no session left."""


@dataclass(frozen=True, slots=True)
class PaneInfo:
    """One session's pane as ``list-panes`` reports it."""

    session: str
    owner: str
    """Our ``@nika_tenant`` mark ("" on a session nika did not create)."""
    pane_id: str
    pid: int | None
    dead: bool
    dead_status: str
    """Exit status once tmux has reaped the process ("" before, or never on some exits)."""


ECHO_WAIT_S = 2.0
"""How long :meth:`TmuxSessions.send_text` waits for a pasted line to show before Enter."""
SETTLE_S = 0.15
"""…and for the screen showing it to stay unchanged (the program done reacting to the paste)."""


def escape_arg(arg: str) -> str:
    """Protect one argument from tmux's command separator.

    tmux splits its argument list at any argument that *ends* with ``;`` (a lone ``;`` or
    ``foo;``), so ``["agent", "x;", "kill-server"]`` would run ``kill-server`` on our server.
    An argument ending in ``\\;`` is taken literally with that backslash removed, so the
    final ``;`` of every such argument is escaped; nothing else in an argument is special.
    """
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


def target(name: str) -> str:
    """An exact tmux target for session ``name`` (``=`` no prefix match, ``:`` its window)."""
    return f"={name}:"


def _error(action: str, error: Exception) -> KernelError:
    return KernelError(f"tmux failed to {action}: {error}", "check `tmux -V` and `nika doctor`")


class TmuxSessions:
    """Sessions, panes and keys on one private tmux server."""

    def __init__(
        self, socket: str, path: str | None = None, child_env: Mapping[str, str] | None = None
    ) -> None:
        """Args:
        socket: the ``tmux -L`` socket name.
        path: ``PATH`` to find tmux on (default: this process's).
        child_env: the environment whose allow-listed part tmux commands run with
            (:mod:`nika_tui.services.tmux_env`); default this process's.
        """
        self.socket = socket
        self._path = path
        self._env: Mapping[str, str] = os.environ if child_env is None else child_env
        self._server: libtmux.Server | None = None

    @property
    def tmux_bin(self) -> str:
        """Path of the tmux executable."""
        found = shutil.which("tmux", path=self._path)
        if found is None:
            raise KernelError(
                "tmux is not installed", "install it (apt install tmux / brew install tmux)"
            )
        return found

    @property
    def server(self) -> libtmux.Server:
        """The libtmux server on our socket."""
        if self._server is None:
            import libtmux

            self._server = libtmux.Server(socket_name=self.socket, tmux_bin=self.tmux_bin)
        return self._server

    def cmd(self, *args: str) -> list[str]:
        """Run one tmux command line; its stdout lines, or :class:`KernelError`.

        It runs with the allow-listed environment only: the command that starts the server
        decides what every kernel inherits (see :mod:`nika_tui.services.tmux_env`).
        """
        try:
            proc = subprocess.run(
                [self.tmux_bin, "-L", self.socket, *args],
                capture_output=True,
                text=True,
                env=server_environment(self._env),
                check=False,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise _error(args[0], error) from error
        if proc.returncode != 0:
            stderr = " ".join(proc.stderr.split("\n")).strip()
            raise KernelError(
                f"tmux {args[0]} failed: {stderr or f'exit {proc.returncode}'}",
                f"inspect the server with `tmux -L {self.socket} ls`",
            )
        return proc.stdout.splitlines()

    def scrub_globals(self) -> list[str]:
        """Unset whatever the allow-list does not admit from a running server's environment.

        A server started before this version (or by hand) may hold the starter's secrets;
        new panes then no longer inherit them. Returns the names removed.
        """
        try:
            lines = self.cmd("show-environment", "-g")
        except KernelError as error:
            if any(marker in error.message for marker in _NO_SERVER):
                return []
            raise
        names = foreign_globals(lines)
        args: list[str] = []
        for name in names:
            if args:
                args.append(";")
            args.extend(["set-environment", "-g", "-u", name])
        if args:
            self.cmd(*args)
        return names

    def create(
        self,
        name: str,
        owner: str,
        workdir: Path,
        environment: Mapping[str, str],
        argv: Sequence[str],
        window: str = "",
    ) -> None:
        """Create session ``name`` running ``argv`` in its first window, named ``window``."""
        tgt = target(name)
        self.scrub_globals()
        commands: list[list[str]] = [
            [
                "new-session", "-d", "-s", name,
                "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT),
                "-c", str(workdir), *(["-n", window] if window else []),
                *[f"-e{key}={value}" for key, value in environment.items()],
                "--", _PLACEHOLDER,
            ],
            # An operator attaching from a full shell must not copy its variables in either.
            ["set-option", "-g", "update-environment", ""],
            ["set-option", "-w", "-t", tgt, "remain-on-exit", "on"],
            ["set-option", "-t", tgt, OWNER_OPTION, owner],
            ["respawn-pane", "-k", "-t", tgt, "-c", str(workdir), "--", *RUN_SHIM, *argv],
        ]  # fmt: skip
        args: list[str] = []
        for command in commands:
            if args:
                args.append(";")
            args.extend(escape_arg(arg) for arg in command)
        for attempt in range(4):
            try:
                self.cmd(*args)
                return
            except KernelError as error:
                # Right after the server's last session was killed (a restart) the old server
                # may still be shutting down and refuse us; a new one starts on the next try.
                transient = any(m in error.message for m in (*_NO_SERVER, "lost server"))
                if not transient or attempt == 3 or name in self.panes():
                    raise
                time.sleep(0.05 * (attempt + 1))

    def add_window(
        self,
        name: str,
        window: str,
        workdir: Path,
        environment: Mapping[str, str],
        argv: Sequence[str],
    ) -> None:
        """Another window ``window`` in session ``name`` running ``argv`` (a second agent).

        Same environment and shim as the first; the session's first pane stays the one
        :meth:`pane` reports.
        """
        tgt = f"={name}:{window}"
        commands: list[list[str]] = [
            [
                "new-window", "-d", "-t", f"={name}:", "-n", window, "-c", str(workdir),
                *[f"-e{key}={value}" for key, value in environment.items()],
                "--", _PLACEHOLDER,
            ],
            ["set-option", "-w", "-t", tgt, "remain-on-exit", "on"],
            ["respawn-pane", "-k", "-t", tgt, "-c", str(workdir), "--", *RUN_SHIM, *argv],
        ]  # fmt: skip
        args: list[str] = []
        for command in commands:
            if args:
                args.append(";")
            args.extend(escape_arg(arg) for arg in command)
        self.cmd(*args)

    def window_panes(self, name: str) -> dict[str, PaneInfo]:
        """The panes of session ``name`` by window name (one agent per window)."""
        out: dict[str, PaneInfo] = {}
        for line in self.cmd("list-panes", "-s", "-t", f"={name}", "-F", _PANE_FORMAT):
            if found := _window_pane(line):
                out.setdefault(found[0], found[1])
        return out

    def windows(self) -> dict[str, dict[str, PaneInfo]]:
        """Every session's panes by window name (one agent each), in one ``list-panes -a``.

        Sessions and windows come in tmux's order, so a session's first window comes first.
        An absent server has no panes (it starts with the first session).
        """
        try:
            proc = self.server.cmd("list-panes", "-a", "-F", _PANE_FORMAT)
        except _tmux_error() as error:
            raise _error("list panes", error) from error
        if proc.returncode != 0:
            if any(marker in line for line in proc.stderr for marker in _NO_SERVER):
                return {}
            raise KernelError(
                f"tmux list-panes failed: {' '.join(proc.stderr)}",
                f"inspect the server with `tmux -L {self.socket} ls`",
            )
        out: dict[str, dict[str, PaneInfo]] = {}
        for line in proc.stdout:
            if found := _window_pane(line):
                window, pane = found
                out.setdefault(pane.session, {}).setdefault(window, pane)
        return out

    def panes(self) -> dict[str, PaneInfo]:
        """Every session's first pane, by session name (see :meth:`windows`)."""
        return {name: next(iter(panes.values())) for name, panes in self.windows().items()}

    def pane(self, name: str) -> PaneInfo | None:
        """The first pane of session ``name`` (exact name), freshly listed."""
        return self.panes().get(name)

    def _pane(self, info: PaneInfo) -> libtmux.Pane:
        # A libtmux Pane bound to the pane id: its methods target it without a lookup.
        import libtmux

        return libtmux.Pane(server=self.server, pane_id=info.pane_id)

    @staticmethod
    def is_dead(info: PaneInfo | None) -> bool:
        """True when there is no pane or its process has ended (remain-on-exit keeps it)."""
        return info is None or info.dead

    def visible(self, info: PaneInfo) -> str:
        """The visible screen of a pane."""
        try:
            lines = self._pane(info).capture_pane() or []
        except _tmux_error():
            return ""
        return "\n".join(lines)

    def history_tail(self, info: PaneInfo, lines: int) -> list[str]:
        """The last ``lines`` non-empty lines of a pane, scrollback included."""
        try:
            raw = self._pane(info).capture_pane(start=-max(lines, 1) - PANE_HEIGHT) or []
        except _tmux_error():
            return []
        kept = [line.rstrip() for line in raw if line.strip()]
        return kept[-lines:]

    def dead_status(self, name: str, info: PaneInfo, tail: Sequence[str]) -> str:
        """Exit status of a dead pane: the shim's ``[exited N]`` line, else tmux's, else "?"."""
        for line in reversed(tail):
            mark = EXIT_MARK.match(line.strip())
            if mark:
                return mark.group(1)
        # tmux learns the status when it reaps the child, a moment after the pane closed.
        deadline = time.monotonic() + 0.3
        current: PaneInfo | None = info
        while current is not None and not current.dead_status:
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
            panes = self.windows().get(name, {}).values()
            current = next((p for p in panes if p.pane_id == info.pane_id), None)
        return (current.dead_status if current is not None else "") or "?"

    def kill(self, name: str) -> None:
        """Kill session ``name`` (exact) if it exists."""
        proc = self.server.cmd("kill-session", "-t", f"={name}")
        if proc.returncode != 0 and name in self.panes():
            raise KernelError(
                f"tmux failed to kill session {name}: {' '.join(proc.stderr)}",
                f"kill it by hand: tmux -L {self.socket} kill-session -t ={name}",
            )

    def send_text(self, info: PaneInfo, text: str) -> None:
        """Paste ``text`` (bracketed when the program asked for it), then press Enter.

        A pasted line is one unit to the program: Codex's TUI treats keys that arrive in a
        burst as a paste and an Enter inside that burst as a newline, so a line *typed* by
        ``send-keys`` stayed in its composer. Bracketed paste marks where the text ends.
        """
        buffer = f"nika-{info.pane_id.lstrip('%')}"
        self.cmd("set-buffer", "-b", buffer, "--", escape_arg(text))
        self.cmd("paste-buffer", "-p", "-d", "-r", "-b", buffer, "-t", info.pane_id)
        # Enter only once the program shows the text: Claude Code still takes an Enter that
        # arrives with the paste as part of it.
        # Then once the screen has stopped changing: Gemini CLI takes an Enter within 40 ms of a
        # paste as a newline, and on a slash command runs the first entry of a completion list
        # it has not refiltered yet (a typed /compress ran /clear).
        tail = " ".join(text.split())[-24:]
        deadline = time.monotonic() + ECHO_WAIT_S
        shown, since = "", time.monotonic()
        while tail and time.monotonic() < deadline:
            screen = self.visible(info)
            if screen != shown:
                shown, since = screen, time.monotonic()
            elif tail in " ".join(screen.split()) and time.monotonic() - since >= SETTLE_S:
                break
            time.sleep(0.03)
        try:
            self._pane(info).send_keys("Enter", enter=False)
        except _tmux_error() as error:
            raise _error("send keys", error) from error

    def send_key(self, info: PaneInfo, key: str) -> None:
        """Send one tmux key name (``C-d``)."""
        try:
            self._pane(info).send_keys(key, enter=False)
        except _tmux_error() as error:
            raise _error("send keys", error) from error

    def wait_dead(self, name: str, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the session's process to end."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.is_dead(self.pane(name)):
                return True
            time.sleep(0.05)
        return False

    def attach_argv(self, name: str, pane_id: str = "") -> list[str]:
        """The argv that attaches a terminal to session ``name`` (on the window of ``pane_id``)."""
        attach = [self.tmux_bin, "-L", self.socket, "attach-session", "-t", f"={name}"]
        if not pane_id:
            return attach
        return [*attach[:3], "select-window", "-t", pane_id, ";", *attach[3:]]

    @staticmethod
    def agent_pid(shim_pid: int | None) -> int | None:
        """The agent's pid: the child of the ``/bin/sh`` shim (Linux ``/proc``), else the shim's.

        The shim forks the agent at once; once the agent has printed, the child exists.
        """
        if shim_pid is None:
            return None
        try:
            children = Path(f"/proc/{shim_pid}/task/{shim_pid}/children").read_text().split()
        except OSError:
            return shim_pid
        return int(children[0]) if children else shim_pid

    @classmethod
    def pane_agent_pid(cls, info: PaneInfo | None) -> int | None:
        """The agent's pid in a pane (see :meth:`agent_pid`)."""
        return None if info is None else cls.agent_pid(info.pid)
