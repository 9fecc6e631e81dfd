"""The wizard's opening: the welcome line and the tenant id, before anything heavy is imported.

The welcome screen's button starts ``nika setup`` in a fresh process, and the first prompt must
show within a second. Importing the whole wizard (pydantic models, the secret store, httpx) took
2-4 s on the 2-core box, and questionary alone (prompt_toolkit) 1.25 s under load. So
:func:`read_tenant_id` asks the tenant id with the standard library (``input`` with GNU
readline: the default is pre-filled and editable, as in the other prompts), and the CLI imports
questionary and the wizard in a background thread started once the prompt is on screen.
:func:`ask_tenant_id` is the same question on a :class:`Prompter` (the wizard's own path).
"""

from __future__ import annotations

import getpass
import re
import threading
from collections.abc import Callable
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

    The suggested id is pre-filled and editable (GNU readline); an invalid answer prints its
    reason and is asked again with the typed text kept, so nothing typed is lost.

    Args:
        out: Where the welcome line and the reasons go (the terminal).
        on_shown: Called once, when the prompt is on screen (the CLI starts its imports then,
            so they do not slow the prompt down).
        read: ``input`` (tests pass another reader).

    Returns:
        The valid tenant id.

    Raises:
        KeyboardInterrupt: Ctrl-C or Ctrl-D (nothing has been written).
    """
    out.write(WELCOME + "\n")
    out.flush()
    prefill = suggest_tenant_id(getpass.getuser())
    shown = [False]

    def first_show() -> None:
        if not shown[0]:
            shown[0] = True
            on_shown()

    while True:
        answer = _read_line(prefill, first_show, read).strip()
        reason = check_tenant_id_answer(answer)
        if reason is None:
            return answer
        out.write(f"{_RED}  ✗ {reason}{_RESET}\n")
        out.flush()
        prefill = answer


def _prompt(wrap: Callable[[str], str]) -> str:
    """The question, styled as the other prompts; ``wrap`` marks escapes for readline."""
    bold, dim, reset = wrap(_BOLD), wrap(_DIM), wrap(_RESET)
    return f"{bold}? {QUESTION}{reset} {dim}{INSTRUCTION}{reset} "


def _read_line(prefill: str, shown: Callable[[], None], read: Callable[[str], str]) -> str:
    try:
        import readline
    except ImportError:  # no GNU readline (a minimal Python): the default is taken on Enter
        shown()
        try:
            return read(f"{_prompt(str)}[{prefill}] ") or prefill
        except EOFError as exc:
            raise KeyboardInterrupt from exc

    def fill() -> None:
        readline.insert_text(prefill)
        readline.redisplay()
        shown()

    readline.set_pre_input_hook(fill)
    try:
        # \001 / \002 around escapes: readline must not count them in the prompt's width.
        return read(_prompt(lambda code: f"\001{code}\002"))
    except EOFError as exc:
        raise KeyboardInterrupt from exc
    finally:
        readline.set_pre_input_hook(None)
        shown()  # idempotent; a reader that is not readline's never ran the hook


def preload(*modules: str) -> threading.Thread:
    """Import ``modules`` in a daemon thread (join it before using them)."""
    import importlib

    def run() -> None:
        for name in modules:
            importlib.import_module(name)

    thread = threading.Thread(target=run, name="nika-wizard-preload", daemon=True)
    thread.start()
    return thread
