"""Pane fallback: realistic screens of each CLI classify to the state a person would read."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.pane_patterns import PANE_PATTERNS, classify_pane, explain_pane

CLAUDE_BOX = """\
╭──────────────────────────────────────────────────╮
│ >                                                │
╰──────────────────────────────────────────────────╯
  ? for shortcuts"""

CLAUDE_WORKING = f"""\
╭──────────────────────────────────────────────────╮
│ ✻ Welcome to Claude Code!                        │
╰──────────────────────────────────────────────────╯

> fix the failing test in tests/test_api.py

⏺ I'll read the test first.

✻ Pondering… (12s · ↑ 1.2k tokens · esc to interrupt)

{CLAUDE_BOX}
"""

CLAUDE_IDLE = f"""\
> fix the failing test in tests/test_api.py

⏺ Fixed: the fixture returned a naive datetime. All 42 tests pass.

{CLAUDE_BOX}


"""

CLAUDE_PERMISSION = """\
⏺ Bash(npm test)
╭──────────────────────────────────────────────────╮
│ Bash command                                     │
│                                                  │
│   npm test                                       │
│   Run the test suite                             │
│                                                  │
│ Do you want to proceed?                          │
│ ❯ 1. Yes                                         │
│   2. Yes, and don't ask again for npm commands   │
│   3. No, and tell Claude what to do differently  │
╰──────────────────────────────────────────────────╯
"""

CLAUDE_QUIT_TO_SHELL = """\
⏺ Goodbye!

dev@box:~/projects/api$
"""

CODEX_WORKING = """\
>_ OpenAI Codex (v0.46.0)

› run the tests and fix what fails

• Working (12s • esc to interrupt)

› Ask Codex to do anything

  ⏎ send   ⌃J newline   ⌃T transcript   ⌃C quit   88% context left
"""

CODEX_IDLE = """\
› run the tests and fix what fails

• All tests pass now; I changed src/api.py.

› Ask Codex to do anything

  ⏎ send   ⌃J newline   ⌃T transcript   ⌃C quit   71% context left
"""

CODEX_APPROVAL = """\
• I need to run the test suite.

  Would you like to run the following command?

  $ cargo test --all

› 1. Yes, proceed
  2. Yes, and don't ask again for this command
  3. No, and tell Codex what to do differently
"""

GEMINI_WORKING = """\
 ███ GEMINI
> explain the retry logic

⠏ Analyzing the retry loop (esc to cancel, 4s)

╭────────────────────────────────────────────────╮
│ >   Type your message or @path/to/file         │
╰────────────────────────────────────────────────╯
"""

GEMINI_IDLE = """\
> explain the retry logic

✦ The loop retries three times with exponential backoff.

╭────────────────────────────────────────────────╮
│ >   Type your message or @path/to/file         │
╰────────────────────────────────────────────────╯
~/projects/api        no sandbox        gemini-2.5-pro (98% context left)
"""

GEMINI_CONFIRM = """\
╭────────────────────────────────────────────────╮
│ ?  Shell npm test                              │
│                                                │
│ Allow execution of: 'npm'?                     │
│                                                │
│ ● 1. Yes, allow once                           │
│   2. Yes, allow always ...                     │
│   3. No, suggest changes (esc)                 │
╰────────────────────────────────────────────────╯
"""

OPENCODE_WORKING = """\
  ┃ fix the flaky test
  ┃
  ⠋ Generating…
  esc interrupt
  enter send
"""

OPENCODE_IDLE = """\
  ┃ The flaky test now waits for the server to be ready.
  ┃
  >
  enter send   ctrl+p commands
"""

OPENCODE_PERMISSION = """\
  △ Permission required
    $ rm -rf build/
    Allow once   Allow always   Reject
"""

SHELL_IDLE = """\
dev@box:~$ ls
README.md  src  tests
dev@box:~$
"""

SHELL_SUDO = """\
dev@box:~$ sudo apt install tmux
[sudo] password for dev:
"""

STANDIN_IDLE = """\
standin · nika-os stand-in agent · pid 4242 · /tmp

⏺ echo: hello

? for shortcuts
>
"""

STANDIN_WORKING = """\
standin · nika-os stand-in agent · pid 4242 · /tmp

⏺ echo: hello

✻ Working… (esc to interrupt)
"""

STANDIN_ASK = """\
standin · nika-os stand-in agent · pid 4242 · /tmp

Do you want to proceed?
❯ 1. Yes
  2. No
"""

OLD_QUESTION_SCROLLED_AWAY = "\n".join(
    ["Do you want to proceed?", "❯ 1. Yes", "  2. No", "1"]
    + [f"line {i}" for i in range(12)]
    + ["dev@box:~$"]
)


class Case(NamedTuple):
    test_id: str
    cli: str
    screen: str
    expected: KernelState | None


CASES = [
    Case("claude-working", "claude-code", CLAUDE_WORKING, KernelState.WORKING),
    Case("claude-idle", "claude-code", CLAUDE_IDLE, KernelState.IDLE),
    Case("claude-permission", "claude-code", CLAUDE_PERMISSION, KernelState.WAITING_INPUT),
    Case("claude-quit-to-shell", "claude-code", CLAUDE_QUIT_TO_SHELL, KernelState.EXITED),
    Case("claude-exited-marker", "claude-code", "bye\n[exited]\n", KernelState.EXITED),
    Case("codex-working", "codex", CODEX_WORKING, KernelState.WORKING),
    Case("codex-idle", "codex", CODEX_IDLE, KernelState.IDLE),
    Case("codex-approval", "codex", CODEX_APPROVAL, KernelState.WAITING_INPUT),
    Case("gemini-working", "gemini-cli", GEMINI_WORKING, KernelState.WORKING),
    Case("gemini-idle", "gemini-cli", GEMINI_IDLE, KernelState.IDLE),
    Case("gemini-confirm", "gemini-cli", GEMINI_CONFIRM, KernelState.WAITING_INPUT),
    Case("opencode-working", "opencode", OPENCODE_WORKING, KernelState.WORKING),
    Case("opencode-idle", "opencode", OPENCODE_IDLE, KernelState.IDLE),
    Case("opencode-permission", "opencode", OPENCODE_PERMISSION, KernelState.WAITING_INPUT),
    Case("shell-prompt-is-idle", "shell", SHELL_IDLE, KernelState.IDLE),
    Case("shell-sudo-password", "shell", SHELL_SUDO, KernelState.WAITING_INPUT),
    Case("standin-idle", "shell", STANDIN_IDLE, KernelState.IDLE),
    Case("standin-working", "shell", STANDIN_WORKING, KernelState.WORKING),
    Case("standin-ask", "shell", STANDIN_ASK, KernelState.WAITING_INPUT),
    Case("old-question-scrolled-away", "shell", OLD_QUESTION_SCROLLED_AWAY, KernelState.IDLE),
    Case("blank-screen", "claude-code", "\n\n   \n", None),
    Case("unrecognised-output", "codex", "compiling crate foo v0.1.0\n", None),
    Case("unknown-cli-uses-shell", "my-agent", SHELL_IDLE, KernelState.IDLE),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_classify_pane(case: Case) -> None:
    assert classify_pane(case.cli, case.screen) is case.expected


def test_every_cli_has_every_state() -> None:
    for cli, table in PANE_PATTERNS.items():
        missing = {
            KernelState.WAITING_INPUT,
            KernelState.WORKING,
            KernelState.IDLE,
            KernelState.EXITED,
        } - set(table)
        assert not missing, (cli, missing)


def test_explain_names_the_deciding_line() -> None:
    match = explain_pane("claude-code", CLAUDE_PERMISSION)
    assert match is not None
    assert match.state is KernelState.WAITING_INPUT
    assert "Do you want to proceed?" in match.line


def test_shell_prompt_means_exited_for_an_agent_but_idle_for_a_shell() -> None:
    assert classify_pane("codex", SHELL_IDLE) is KernelState.EXITED
    assert classify_pane("shell", SHELL_IDLE) is KernelState.IDLE
