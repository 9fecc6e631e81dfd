"""Drive the real questionary prompts through prompt_toolkit pipe input + DummyOutput."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from nika_tui.services.agent_clis import detect_agent_clis
from nika_tui.services.provider_verify import Endpoints
from nika_tui.services.secrets import SecretStore
from nika_tui.settings import Settings
from nika_tui.wizard.flow import SetupWizard, WizardOutcome
from nika_tui.wizard.prompts import Prompter

ENTER = "\r"
DOWN = "\x1b[B"
CTRL_C = "\x03"
CLEAR = "\x05\x15"  # Ctrl-E then Ctrl-U: wipe the whole line (a pre-filled default)
WATCHDOG_S = 30.0


@dataclass
class Run:
    outcome: WizardOutcome | None
    text: str


Runner = Callable[..., Run]


@pytest.fixture
def agent_bin(tmp_path: Path) -> Path:
    """A PATH holding a stand-in `claude` that prints Claude Code's --version format."""
    d = tmp_path / "agent-bin"
    d.mkdir()
    exe = d / "claude"
    exe.write_text('#!/bin/sh\necho "1.0.51 (Claude Code)"\n')
    exe.chmod(0o755)
    return d


@pytest.fixture
def run_wizard(agent_bin: Path) -> Runner:
    """Run the wizard with ``keys`` typed up front (prompt_toolkit keeps the typeahead for
    the next prompt of the same input)."""

    def run(
        keys: str,
        *,
        tenant: str | None = None,
        section: str | None = None,
        env: dict[str, str] | None = None,
        insecure: bool = False,
        verify: bool = False,
        endpoints: Endpoints | None = None,
    ) -> Run:
        # prompt_toolkit is imported here, not at the top: collection stays light (issue 12)
        from prompt_toolkit.input import create_pipe_input
        from prompt_toolkit.output import DummyOutput

        out = io.StringIO()
        with create_pipe_input() as inp:
            inp.send_text(keys)
            # A missing keystroke would leave a prompt waiting forever: a watchdog closes the
            # input after a generous delay so the test fails with EOFError instead of hanging.
            # (Closing it right away races with prompt_toolkit's typeahead handling.)
            watchdog = threading.Timer(WATCHDOG_S, inp.close)
            watchdog.daemon = True
            watchdog.start()
            wizard = SetupWizard(
                Prompter(inp, DummyOutput()),
                out=out,
                store_factory=lambda tid: SecretStore(
                    tid, env=env or {}, allow_insecure=insecure, timeout=2.0
                ),
                roots=Settings.from_env().roots,
                detect=lambda: detect_agent_clis(path=str(agent_bin), parent_env={"SHELL": "sh"}),
                verify=verify,
                endpoints=endpoints,
            )
            try:
                outcome = wizard.run(tenant, section)
            finally:
                watchdog.cancel()
        return Run(outcome, out.getvalue())

    return run
