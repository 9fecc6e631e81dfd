"""Pane fallback: read a kernel's state off its screen when no fresh hook says otherwise.

One data table, :data:`PANE_PATTERNS`, maps each agent CLI to regexes per state. The screen is
the visible pane text (``capture-pane``), trailing blank lines removed. Each state only looks at
the bottom of the screen (:data:`WINDOWS`, in non-empty lines) because that is where the live UI
is; older lines above may describe a state the agent has already left. States are tried in
:data:`PRECEDENCE` order: a question waiting for a human beats a spinner (the spinner may still
be drawn behind a permission dialog), a spinner beats an input prompt (Claude Code draws its input
box below the spinner while it works), and the input prompt means idle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from nika_tui.domain.kernel_state import KernelState

_PROMPT_ONLY = r"^\s*[│|]?\s*(?:>|❯|›)\s*(?:[│|]\s*)?$"
"""An empty input prompt: ``>``, ``❯`` or ``›``, alone on its line (boxed or not)."""
_SHELL_PROMPT = r"^(?:\(\S+\)\s)?[\w.-]+@[\w.-]+[:\s][^\n]*[$#%]\s*$|^\s*[$#%]\s*$"
"""A POSIX shell prompt (``user@host:~/dir$``, or a bare ``$``/``#``/``%``)."""
_SPINNER = r"^\s*[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏✻✽✶✳✢*·]\s+\S+…"
"""A spinner glyph followed by a gerund with an ellipsis (``✻ Pondering…``)."""

_COMMON_WAITING = (
    r"Do you want to proceed\?",
    r"Do you want to (?:make this edit|create|run|allow)",
    r"^\s*❯\s*1\.\s+Yes",
    r"\(y/n\)|\[y/N\]|\[Y/n\]",
    r"Press Enter to continue",
)
_COMMON_WORKING = (r"esc to interrupt", r"Thinking…", r"Working…", _SPINNER)

PANE_PATTERNS: dict[str, dict[KernelState, tuple[str, ...]]] = {
    "claude-code": {
        KernelState.EXITED: (r"\[exited(?: \d+)?\]", r"^Pane is dead", _SHELL_PROMPT),
        KernelState.WAITING_INPUT: (
            *_COMMON_WAITING,
            r"Claude needs your permission",
            r"Would you like to proceed\?",
        ),
        KernelState.WORKING: (*_COMMON_WORKING, r"Compacting conversation"),
        KernelState.IDLE: (_PROMPT_ONLY, r"\? for shortcuts", r"^\s*[│|]\s*>\s"),
    },
    "codex": {
        KernelState.EXITED: (r"\[exited(?: \d+)?\]", r"^Pane is dead", _SHELL_PROMPT),
        KernelState.WAITING_INPUT: (
            *_COMMON_WAITING,
            r"Would you like to run the following command\?",
            r"Allow command\?",
            r"Yes, proceed",
            r"approval required",
        ),
        KernelState.WORKING: (*_COMMON_WORKING, r"Working \(\d+s", r"esc to interrupt\)"),
        KernelState.IDLE: (_PROMPT_ONLY, r"⏎ send", r"context left", r"^\s*›\s"),
    },
    "gemini-cli": {
        KernelState.EXITED: (r"\[exited(?: \d+)?\]", r"^Pane is dead", _SHELL_PROMPT),
        KernelState.WAITING_INPUT: (
            *_COMMON_WAITING,
            r"Apply this change\?",
            r"Allow execution",
            r"Yes, allow once",
            r"Waiting for user confirmation",
        ),
        KernelState.WORKING: (*_COMMON_WORKING, r"esc to cancel"),
        KernelState.IDLE: (_PROMPT_ONLY, r"Type your message"),
    },
    "opencode": {
        KernelState.EXITED: (r"\[exited(?: \d+)?\]", r"^Pane is dead", _SHELL_PROMPT),
        KernelState.WAITING_INPUT: (
            *_COMMON_WAITING,
            r"Permission required",
            r"Allow once",
            r"Allow always",
        ),
        KernelState.WORKING: (*_COMMON_WORKING, r"esc interrupt", r"Generating…"),
        KernelState.IDLE: (_PROMPT_ONLY, r"enter send", r"ctrl\+p commands"),
    },
    # A shell tenant (or the stand-in agent): its shell prompt is idle, not exited.
    "shell": {
        KernelState.EXITED: (r"\[exited(?: \d+)?\]", r"^Pane is dead", r"^\[Process completed\]"),
        KernelState.WAITING_INPUT: (*_COMMON_WAITING, r"[Pp]assword( for \S+)?:\s*$"),
        KernelState.WORKING: _COMMON_WORKING,
        KernelState.IDLE: (_PROMPT_ONLY, _SHELL_PROMPT),
    },
}

PRECEDENCE: tuple[KernelState, ...] = (
    KernelState.EXITED,
    KernelState.WAITING_INPUT,
    KernelState.WORKING,
    KernelState.IDLE,
)

WINDOWS: dict[KernelState, int] = {
    KernelState.EXITED: 2,
    KernelState.WAITING_INPUT: 10,
    KernelState.WORKING: 6,
    KernelState.IDLE: 3,
}
"""How many of the bottom non-empty lines each state's patterns look at."""


@dataclass(frozen=True, slots=True)
class PaneMatch:
    """Why a screen was classified: the state, the pattern and the line it matched."""

    state: KernelState
    pattern: str
    line: str


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _tail(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    return [line for line in lines if line.strip()]


def explain_pane(cli: str, text: str) -> PaneMatch | None:
    """Classify a screen and say which pattern decided.

    Args:
        cli: the agent CLI kind (a key of :data:`PANE_PATTERNS`; unknown kinds use ``shell``).
        text: the visible pane text.

    Returns:
        The first match in :data:`PRECEDENCE` order, or None when no pattern matches (the
        caller keeps the previous state) or the screen is blank.
    """
    table = PANE_PATTERNS.get(cli, PANE_PATTERNS["shell"])
    lines = _tail(text)
    if not lines:
        return None
    for state in PRECEDENCE:
        window = lines[-WINDOWS[state] :]
        for pattern in table.get(state, ()):
            rx = _compiled(pattern)
            for line in reversed(window):
                if rx.search(line):
                    return PaneMatch(state=state, pattern=pattern, line=line)
    return None


def classify_pane(cli: str, text: str) -> KernelState | None:
    """The state a screen shows, or None when it shows nothing recognisable.

    Args:
        cli: the agent CLI kind (claude-code, codex, gemini-cli, opencode, shell).
        text: the visible pane text.

    Returns:
        A :class:`KernelState`, or None.
    """
    match = explain_pane(cli, text)
    return match.state if match else None
