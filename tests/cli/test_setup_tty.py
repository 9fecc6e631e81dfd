"""``nika setup`` on a real pseudo-terminal: Ctrl-C at a prompt writes nothing and exits 130."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.setup_pty import ROOT, nika_on_pty


def test_ctrl_c_at_a_prompt_exits_130_and_writes_nothing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NIKA_OS_", "XDG_"))} | {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm",
    }
    with nika_on_pty(["setup"], env) as (proc, term):
        term.answer("Tenant id", "acme\r")
        term.answer("Display name", "\x03")
        tail = term.wait("nothing was written", limit_s=30)
        assert proc.wait(timeout=30) == 130, tail
    assert not (tmp_path / "xdg" / "nika-os" / "tenants" / "acme").exists()


def test_setup_agents_is_the_agent_section() -> None:
    from nika_tui.domain.tenant import AgentCli, TenantConfig
    from nika_tui.services.config_store import save_tenant

    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme", agent_cli=AgentCli.SHELL))
    env = os.environ | {"PYTHONPATH": str(ROOT), "TERM": "xterm"}
    with nika_on_pty(["setup", "agents", "--tenant", "acme"], env) as (proc, term):
        # The name for it: the agent section's question, not "invalid choice".
        term.answer("Agent CLI for this tenant", "\x03")
        term.wait("nothing was written", limit_s=30)
        assert proc.wait(timeout=30) == 130
