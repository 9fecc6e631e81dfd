"""The app's kernel actions (spawn, stop, restart, attach) and quitting, shared by keys and
the palette.

A base class of :class:`nika_tui.ui.app.NikaDashboard` (above the screen navigation), kept
apart so the app module holds the lifecycle and the poll. Each action runs in a worker and
reports back with :class:`ActionDone`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING

from textual import work
from textual.app import SuspendNotSupported
from textual.message import Message

from nika_tui.ui.navigation import ScreenNavigation

if TYPE_CHECKING:
    from nika_tui.dashboard.model import DashboardSource, Snapshot
    from nika_tui.ui.app import DashboardOptions


@contextlib.contextmanager
def _ctrl_c_is_the_childs() -> Iterator[None]:
    """While a command has the terminal, its Ctrl-C (a SIGINT to the whole foreground group,
    the wizard's first prompt reads in cooked mode) must not end the dashboard too. A no-op
    handler rather than SIG_IGN: an ignored signal would be inherited by the command."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class ActionDone(Message):
    """A kernel / memory action finished (``error`` empty on success)."""

    def __init__(self, label: str, outcome: str, error: str = "") -> None:
        super().__init__()
        self.label = label
        self.outcome = outcome
        self.error = error


class KernelActions(ScreenNavigation):
    """Kernel actions and quitting, for the selected tenant."""

    if TYPE_CHECKING:
        source: DashboardSource
        snapshot: Snapshot | None
        leaving: bool
        options: DashboardOptions

    @work(thread=True, exit_on_error=False, group="actions")
    def run_kernel_action(self, label: str, fn: Callable[[], str]) -> None:
        """Run one action in a worker and report its outcome."""
        from nika_tui.errors import NikaError

        try:
            outcome = fn()
        except NikaError as exc:
            self.post_message(ActionDone(label, "", str(exc)))
        except Exception as exc:  # noqa: BLE001 - UI edge: shown to the person
            self.post_message(ActionDone(label, "", f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(ActionDone(label, outcome))

    def on_action_done(self, message: ActionDone) -> None:
        if message.error:
            self.notify(message.error, title=f"{message.label} failed", severity="error")
        else:
            self.notify(message.outcome, title=message.label)
        self.request_refresh()

    def action_spawn(self) -> None:
        """Spawn the selected tenant's kernel."""
        if (t := self._tenant()) is not None:
            self.run_kernel_action("spawn", partial(self.source.spawn, t))

    def action_stop(self) -> None:
        """Stop the selected tenant's kernel, once the person said yes (it may be working)."""
        if (t := self._tenant()) is None:
            return
        from nika_tui.ui.screens.ask import AskYesNo

        row = self.snapshot.row(t) if self.snapshot else None
        state = row.kernel.state if row else "unknown"
        detail = f"Its kernel is {state}."
        if state in ("working", "waiting-input", "starting"):
            detail += " The agent is asked to exit; work in progress may be cut short."

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_kernel_action("stop", partial(self.source.stop, t))

        self.push_screen(AskYesNo(f"Stop the kernel of {t}?", detail, "Stop"), answered)

    async def action_quit(self) -> None:
        """ctrl+q and the palette's Quit: the same way out as `q`, with its line."""
        self.action_leave()

    def action_leave(self) -> None:
        """Quit, saying what keeps running (the service, the kernels) and how to stop it."""
        from nika_tui.dashboard.leaving import still_running

        snap = self.snapshot
        embedded = self.options.embedded_redis
        line = "" if self.preview or snap is None else still_running(snap, embedded)
        self.leaving = True
        self.exit(message=line or None)

    def action_restart(self) -> None:
        """Restart the selected tenant's kernel."""
        if (t := self._tenant()) is not None:
            self.run_kernel_action("restart", partial(self.source.restart, t))

    def action_attach(self) -> None:
        """Suspend the dashboard, attach to the kernel, come back when it detaches."""
        if (t := self._tenant()) is None:
            return
        try:
            argv = self.source.attach_argv(t)
        except Exception as exc:  # noqa: BLE001 - UI edge
            self.notify(str(exc), title="attach failed", severity="error")
            return
        code = self.run_suspended(argv)
        if code is not None:
            self.notify(f"back from {t} (exit {code})", title="attach")
        self.request_refresh()

    def run_suspended(self, argv: Sequence[str]) -> int | None:
        """Give the terminal to ``argv`` and take it back; ``None`` when it could not run.

        Headless (tests) there is no terminal to hand over: the command runs without one.
        In a browser (``nika web``) suspending is impossible: the person is told what to run.
        """
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        try:
            with self.suspend(), _ctrl_c_is_the_childs():
                return subprocess.call(list(argv), env=env)
        except SuspendNotSupported:
            if self.is_headless:
                return subprocess.call(list(argv), env=env, stdin=subprocess.DEVNULL)
            self.notify(f"run in a terminal: {' '.join(argv)}", title="cannot suspend here")
        except OSError as exc:
            self.notify(f"{argv[0]}: {exc.strerror}", title="command failed", severity="error")
        return None
