"""Codex hook trust entries: written only with consent, kept across edits, stale when a hook
changes. (That the hashes are Codex's own is proven by the real Codex running the hooks:
tests/agents/test_codex.py.)"""

from __future__ import annotations

import json
import tomllib

import pytest

from nika_tui.cli import main
from nika_tui.dashboard.redis_reads import codex_trust_problems
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.engine.kernels.hook_install import install_for_tenant
from nika_tui.paths import roots
from nika_tui.services.agent_settings import CODEX_EVENTS, agent_home, codex_trust_report
from nika_tui.services.codex_trust import event_label, hook_hash, merge_trust
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings

USER_CONFIG = """# my Codex settings
model = "o3"

[mcp_servers.docs]
command = "npx"

[projects."/home/dev/other"]
trust_level = "trusted"
"""


def _tenant(trust: bool | None, workdir: str = "") -> TenantConfig:
    config = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        agent_cli=AgentCli.CODEX,
        kernel=KernelConfig(workdir=workdir or None, trust_codex_hooks=trust),
    )
    save_tenant(config)
    return config


def test_event_labels_and_normalised_timeouts_change_the_hash() -> None:
    assert [event_label(e) for e in ("UserPromptSubmit", "PreCompact", "SessionEnd")] == [
        "user_prompt_submit",
        "pre_compact",
        "session_end",
    ]
    handler = {"type": "command", "command": "nika hook codex Stop"}
    # No timeout means Codex's 600 s; UserPromptSubmit and Stop ignore a matcher.
    assert hook_hash("Stop", None, handler) == hook_hash("Stop", None, {**handler, "timeout": 600})
    assert hook_hash("Stop", "x", handler) == hook_hash("Stop", None, handler)
    assert hook_hash("PreCompact", "auto", handler) != hook_hash("PreCompact", None, handler)
    # SessionEnd runs clamped to 3 s: 15 and 3 are the same hook to Codex.
    assert hook_hash("SessionEnd", None, {**handler, "timeout": 15}) == hook_hash(
        "SessionEnd", None, {**handler, "timeout": 3}
    )


def test_without_consent_nothing_is_trusted(tmp_path: object) -> None:
    config = _tenant(trust=None)
    install_for_tenant(config, roots())
    text = (agent_home("acme", "codex") / "config.toml").read_text()
    assert "hooks.state" not in text and "projects" not in text
    report = codex_trust_report("acme")
    assert not report.ok and sorted(report.untrusted) == sorted(map(event_label, CODEX_EVENTS))
    [problem] = codex_trust_problems(config, Settings.from_env().roots)
    assert "Codex hooks untrusted" in problem and "nika setup agent --tenant acme" in problem


def test_consent_trusts_our_hooks_and_the_workdir_keeping_the_users_config(
    tmp_path: object,
) -> None:
    home = agent_home("acme", "codex")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(USER_CONFIG)
    config = _tenant(trust=True, workdir="/srv/acme-shop")
    install_for_tenant(config, roots())
    text = (home / "config.toml").read_text()
    data = tomllib.loads(text)
    assert text.startswith("notify = [")
    assert "# my Codex settings" in text and data["model"] == "o3"
    assert data["mcp_servers"]["docs"]["command"] == "npx"
    assert data["projects"]["/home/dev/other"]["trust_level"] == "trusted"
    assert data["projects"]["/srv/acme-shop"]["trust_level"] == "trusted"
    assert data["features"] == {"hooks": True}
    hooks_json = str((home / "hooks.json").resolve())
    keys = sorted(data["hooks"]["state"])
    assert keys == sorted(f"{hooks_json}:{event_label(e)}:0:0" for e in CODEX_EVENTS)
    assert codex_trust_report("acme").ok
    assert codex_trust_problems(config, Settings.from_env().roots) == []
    install_for_tenant(config, roots())  # a second spawn changes nothing
    assert (home / "config.toml").read_text() == text


def test_a_changed_hook_is_no_longer_trusted(tmp_path: object) -> None:
    install_for_tenant(_tenant(trust=True), roots())
    path = agent_home("acme", "codex") / "hooks.json"
    doc = json.loads(path.read_text())
    doc["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 99  # what Codex would call "modified"
    path.write_text(json.dumps(doc))
    assert codex_trust_report("acme").untrusted == ["stop"]


def test_merge_trust_replaces_a_stale_hash_in_place() -> None:
    first = merge_trust("", {"/h/hooks.json:stop:0:0": "sha256:old"}, ["/w"])
    second = merge_trust(first, {"/h/hooks.json:stop:0:0": "sha256:new"}, ["/w"])
    data = tomllib.loads(second)
    assert data["hooks"]["state"]["/h/hooks.json:stop:0:0"] == {"trusted_hash": "sha256:new"}
    assert second.count("[projects.") == 1


def test_codex_as_the_second_agent_is_checked_too(capsys: pytest.CaptureFixture[str]) -> None:
    config = TenantConfig(
        tenant_id="duo",
        display_name="Duo",
        agent_cli=AgentCli.CLAUDE_CODE,
        more_agent_clis=[AgentCli.CODEX],
    )
    save_tenant(config)
    install_for_tenant(config, roots())  # no consent: Codex's hooks installed, not trusted
    assert (agent_home("duo", "codex") / "hooks.json").exists()

    [problem] = codex_trust_problems(config, Settings.from_env().roots)
    assert "Codex hooks untrusted" in problem and "nika setup agent --tenant duo" in problem

    main(["doctor", "--json"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    check = checks["codex-hooks:duo"]
    assert check["status"] == "warn" and "untrusted: Codex skips" in str(check["detail"])
    assert "nika setup agent --tenant duo" in str(check["fix"])
