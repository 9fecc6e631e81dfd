"""The wizard's opening: the welcome line and the tenant id, before anything heavy is imported.

The welcome screen's button starts ``nika setup`` in a fresh process, and the first prompt must
show within a second. Importing the whole wizard (pydantic models, the secret store, httpx) took
2-4 s on the 2-core box, and questionary alone (prompt_toolkit) 1.25 s under load. So
:func:`read_tenant_id` asks the tenant id with the standard library (``input`` with GNU
readline; the suggested id in brackets, Enter takes it), and the CLI imports
questionary and the wizard in a background thread started as the prompt is shown (with
SIGINT blocked in it, so that Ctrl-C reaches ``input``).
:func:`ask_tenant_id` is the same question on a :class:`Prompter` (the wizard's own path).
"""

from __future__ import annotations

import getpass
import os
import re
import select
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from nika_tui.domain.tenant_id import check_tenant_id_answer

if TYPE_CHECKING:
    from nika_tui.wizard.prompts import Prompter

WELCOME = "Welcome to nika-os. Let's set up a tenant (Ctrl-C quits, nothing written)."
QUESTION = "Tenant id"
INSTRUCTION = "(lowercase letters, digits, '-')"
_BOLD, _DIM, _RED, _RESET = "\033[1m", "\033[2m", "\033[31m", "\033[0m"


def suggest_tenant_id(user: str) -> str:
    """A valid tenant id derived from a user name (``John.Doe`` → ``john-doe``)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", user.lower()).strip("-")[:40]
    return slug if check_tenant_id_answer(slug) is None else "default"


def ask_tenant_id(ask: Prompter, out: TextIO) -> str:
    """Print the welcome line and ask the tenant id on ``ask`` (validated inline)."""
    out.write(WELCOME + "\n")
    out.flush()
    return ask.text(
        QUESTION,
        default=suggest_tenant_id(getpass.getuser()),
        validate=check_tenant_id_answer,
        instruction=INSTRUCTION,
    )


def read_tenant_id(
    out: TextIO, on_shown: Callable[[], None] = lambda: None, read: Callable[[str], str] = input
) -> str:
    """Print the welcome line and ask the tenant id with the standard library's ``input``.

    The suggested id is shown in brackets and Enter takes it; the line is edited with GNU
    readline when there is one. An invalid answer prints itself and the reason, and the
    question is asked again. No readline hook pre-fills the line: a Ctrl-C that lands in a
    Python hook is dropped by readline, and the prompt then did not quit.

    Args:
        out: Where the welcome line and the reasons go (the terminal).
        on_shown: Called once, just before the prompt is read (the CLI starts its imports
            then, in a thread, while the person reads and types).
        read: ``input`` (tests pass another reader).

    Returns:
        The valid tenant id.

    Raises:
        KeyboardInterrupt: Ctrl-C or Ctrl-D (nothing has been written).
    """
    out.write(WELCOME + "\n")
    out.flush()
    suggested = suggest_tenant_id(getpass.getuser())
    try:
        import readline  # noqa: F401 - importing it gives ``input`` line editing
    except ImportError:  # a Python without it: plain ``input``
        wrap: Callable[[str], str] = str
    else:
        # \001 / \002 around escapes: readline must not count them in the prompt's width.
        wrap = lambda code: f"\001{code}\002"  # noqa: E731
    bold, dim, reset = wrap(_BOLD), wrap(_DIM), wrap(_RESET)
    prompt = f"{bold}? {QUESTION}{reset} {dim}{INSTRUCTION} [{suggested}]{reset} "
    on_shown()
    while True:
        try:
            with _ctrl_c_reaches_input():
                answer = read(prompt).strip() or suggested
        except EOFError as exc:
            raise KeyboardInterrupt from exc
        reason = check_tenant_id_answer(answer)
        if reason is None:
            return answer
        out.write(f"{_RED}  ✗ {answer[:60]!r}: {reason}{_RESET}\n")
        out.flush()


@contextmanager
def _ctrl_c_reaches_input() -> Iterator[None]:
    """Make a Ctrl-C end ``input`` even when it comes before readline waits for a key.

    readline notices a signal only when it interrupts its ``select``; one that arrives while
    the prompt is being drawn is recorded and then waits for the next key. The signal also
    wakes this helper (``set_wakeup_fd``), which sends it to the main thread again a moment
    later, into the wait. Main thread only (``set_wakeup_fd``); a no-op elsewhere.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    done = threading.Event()
    main = threading.main_thread().ident

    def kick() -> None:
        while not done.is_set():
            if select.select([r], [], [], 0.1)[0]:
                os.read(r, 64)
                if not done.wait(0.05) and main is not None:
                    signal.pthread_kill(main, signal.SIGINT)

    helper = _unsignalled_thread(kick, "nika-first-prompt-sigint")
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        helper.join()
        os.close(r)
        os.close(w)


def _unsignalled_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """A started daemon thread with SIGINT blocked: the kernel hands Ctrl-C to the main thread."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # inherited by the thread
    try:
        thread.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    return thread


def preload(*modules: str) -> threading.Thread:
    """Import ``modules`` in a daemon thread (join it before using them).

    The thread blocks SIGINT: a Ctrl-C the kernel handed to it would not wake the main
    thread's ``input`` (readline waits in ``select``), and the first prompt would not quit.
    """
    import importlib

    def run() -> None:
        for name in modules:
            importlib.import_module(name)

    return _unsignalled_thread(run, "nika-wizard-preload")
