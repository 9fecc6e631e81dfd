"""The wizard's first prompt does not wait for the heavy imports (issue 17, point 2).

Measured on the loaded 2-core box: 2.5-3.7 s from spawn to the "Tenant id" prompt with every
import before it, 2.0 s with only questionary before it (prompt_toolkit: 1.25 s of it); see
``benchmarks/wizard_first_prompt.py`` for the figures since. A wall-clock bound would be flaky
there, so the test holds the cause instead: the start path up to the first prompt imports
neither questionary nor prompt_toolkit nor anything heavier; and on a real terminal that prompt
validates, keeps what was typed, and hands over to the questionary prompts that follow.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.setup_pty import ROOT, nika_on_pty

_PROBE = """
import sys
from nika_tui.cli import build_parser, FAST_PATHS
build_parser(FAST_PATHS["setup"]).parse_args(["setup"])
import nika_tui.wizard.first_prompt, readline
heavy = sorted(m for m in ("questionary", "prompt_toolkit", "pydantic", "yaml", "httpx",
                           "keyring", "nika_tui.services.secrets", "nika_tui.domain.tenant",
                           "nika_tui.wizard.prompts", "textual", "torch") if m in sys.modules)
print(",".join(heavy))
"""


def test_first_prompt_needs_no_heavy_import() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


def test_suggested_tenant_id_is_valid() -> None:
    from nika_tui.wizard.first_prompt import suggest_tenant_id

    assert suggest_tenant_id("John.Doe") == "john-doe"
    assert suggest_tenant_id("___") == "default"


def test_an_invalid_id_says_why_keeps_the_typing_and_the_wizard_goes_on(tmp_path: Path) -> None:
    """On a pty: the suggested id is offered in brackets; an invalid answer is shown back with
    the reason and asked again; a valid id reaches the next prompt, a questionary one
    (imported meanwhile), and Ctrl-C there writes nothing."""
    from nika_tui.wizard.first_prompt import suggest_tenant_id

    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIKA_OS_", "XDG_"))} | {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
        "USER": "jo.doe",
        "LOGNAME": "jo.doe",
    }
    with nika_on_pty(["setup"], env) as (proc, term):
        first = term.wait(f"[{suggest_tenant_id('jo.doe')}]", limit_s=30)  # offered
        assert "Tenant id" in first
        reason = "lowercase letters, digits and '-'"
        os.write(term.fd, b"Jo_Bad\r")
        shown = term.wait(reason, limit_s=30)
        assert "'Jo_Bad'" in shown  # what was typed, with why it is refused
        term.answer("Tenant id", "acme\r")  # asked again
        term.answer("Display name", "\x03")
        tail = term.wait("nothing was written", limit_s=30)
        assert proc.wait(timeout=30) == 130, tail
    assert not (tmp_path / "xdg" / "nika-os" / "tenants").exists()


def test_ctrl_c_as_soon_as_the_first_prompt_shows_quits(tmp_path: Path) -> None:
    """Ctrl-C the moment "Tenant id" is on the terminal exits 130 with nothing written (a
    Ctrl-C that landed in readline's hook was lost, and the prompt stayed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIKA_OS_", "XDG_"))} | {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
    }
    # Ctrl-C must be the terminal's SIGINT, as in a real one: the pty is the controlling one.
    with nika_on_pty(["setup"], env, controlling=True) as (proc, term):
        term.answer("Tenant id", "\x03")
        tail = term.wait("nothing was written", limit_s=30)
        assert proc.wait(timeout=30) == 130, tail
    assert not (tmp_path / "xdg" / "nika-os" / "tenants").exists()
