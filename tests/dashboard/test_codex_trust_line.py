"""The dashboard's "Codex hooks untrusted" line, read by the real source from a tenant's own
``CODEX_HOME`` (hooks.json and a person's config.toml, as Codex and the trust check read them):
shown with its fix while Codex would skip nika's hooks, gone once the tenant consented and the
spawn's installer trusted them, back when a hook changed since (Codex calls it "modified")."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime

import pytest

from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.engine.kernels.hook_install import install_for_tenant
from nika_tui.paths import roots
from nika_tui.services.agent_homes import codex_home
from nika_tui.services.codex_trust import event_label
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings

NOW = datetime(2026, 12, 4, 14, 0, tzinfo=UTC)
# A person's own Codex config in the tenant's CODEX_HOME, before nika's installer merges into it.
USER_CONFIG = """# my Codex settings
model = "gpt-5"
model_provider = "lab"

[model_providers.lab]
name = "lab"
base_url = "http://127.0.0.1:9/v1"
env_key = "LAB_API_KEY"
wire_api = "responses"
"""


@pytest.fixture
def env(isolated_env: dict[str, str], redis_url: str) -> dict[str, str]:
    return {**isolated_env, "REDIS_URL": redis_url}


def _codex_tenant(env: dict[str, str], workdir: str, trust: bool | None) -> TenantConfig:
    config = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        agent_cli=AgentCli.CODEX,
        kernel=KernelConfig(workdir=workdir, trust_codex_hooks=trust),
    )
    save_tenant(config)
    install_for_tenant(config, roots(env), env)  # what `nika kernel spawn` runs first
    return config


def _trust_lines(env: dict[str, str]) -> list[str]:
    detail = RedisDashboardSource(Settings.from_env(env)).tenant_detail("acme", NOW)
    return [p for p in detail.problems if p.startswith("Codex hooks untrusted")]


def test_untrusted_codex_hooks_show_on_the_tenant_detail_until_trusted(
    env: dict[str, str], tmp_path: object
) -> None:
    home = codex_home("acme")
    home.mkdir(parents=True, mode=0o700)
    (home / "config.toml").write_text(USER_CONFIG)
    workdir = str(tmp_path)
    _codex_tenant(env, workdir, trust=None)  # never asked: nothing trusted
    config = tomllib.loads((home / "config.toml").read_text())
    assert "state" not in config.get("hooks", {})  # the real file holds no trust entry

    [line] = _trust_lines(env)
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]
    assert all(event_label(event) in line for event in hooks)  # each skipped hook named
    assert "Codex skips them" in line and "nika setup agent --tenant acme" in line

    _codex_tenant(env, workdir, trust=True)  # consent given, then the next spawn
    config = tomllib.loads((home / "config.toml").read_text())
    assert config["model_provider"] == "lab" and config["hooks"]["state"]  # merged, kept
    assert _trust_lines(env) == []

    # A hook changed since it was trusted is one Codex skips again ("modified").
    doc = json.loads((home / "hooks.json").read_text())
    doc["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 99
    (home / "hooks.json").write_text(json.dumps(doc))
    [line] = _trust_lines(env)
    assert "(stop)" in line
