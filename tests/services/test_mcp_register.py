"""Registration of ``nika mcp`` in a tenant's agent homes (real files in temp dirs).

That each CLI reads what is written here and calls the tools is proven with the real binaries
(tests/agents/test_mcp_real_cli.py, test_mcp_real_codex.py, test_mcp_registered_list.py).
"""

from __future__ import annotations

import json
import stat
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from nika_tui.errors import ConfigError
from nika_tui.paths import roots
from nika_tui.services.agent_install import install_agent_hooks
from nika_tui.services.agent_settings import agent_home
from nika_tui.services.mcp_register import register_mcp

TENANT = "acme"
PREFIX = ["/opt/nika/bin/nika"]
SECRET_URL = "redis://:hunter2-not-for-files@10.0.0.5:6379/0"


def _json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def _claude(home: Path) -> dict[str, Any]:
    return dict(_json(home / ".claude.json")["mcpServers"])


def _codex(home: Path) -> dict[str, Any]:
    return dict(tomllib.loads((home / "config.toml").read_text())["mcp_servers"])


def _gemini(home: Path) -> dict[str, Any]:
    return dict(_json(home / ".gemini" / "settings.json")["mcpServers"])


def _opencode(home: Path) -> dict[str, Any]:
    return dict(_json(home / "opencode.json")["mcp"])


class Case(NamedTuple):
    test_id: str
    cli: str
    sub: str
    path: str
    servers: Callable[[Path], dict[str, Any]]
    argv: Callable[[dict[str, Any]], list[str]]
    env_key: str
    theirs: str
    """The file's text before our install: the person's own server and settings."""


CASES = [
    Case(
        "claude-code",
        "claude-code",
        "claude",
        ".claude.json",
        _claude,
        lambda e: [e["command"], *e["args"]],
        "env",
        json.dumps({"numStartups": 3, "mcpServers": {"docs": {"command": "docs-mcp"}}}),
    ),
    Case(
        "codex",
        "codex",
        "codex",
        "config.toml",
        _codex,
        lambda e: [e["command"], *e["args"]],
        "env",
        '# my config\nmodel = "o9"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n',
    ),
    Case(
        "gemini-cli",
        "gemini-cli",
        "gemini",
        ".gemini/settings.json",
        _gemini,
        lambda e: [e["command"], *e["args"]],
        "env",
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "mcpServers": {"docs": {"command": "docs-mcp"}},
            }
        ),
    ),
    Case(
        "opencode",
        "opencode",
        "opencode",
        "opencode.json",
        _opencode,
        lambda e: list(e["command"]),
        "environment",
        json.dumps({"provider": {"x": {}}, "mcp": {"docs": {"type": "local", "command": ["d"]}}}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_each_cli_gets_a_nika_server_scoped_to_the_tenant_keeping_the_persons_entries(
    case: Case, isolated_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", SECRET_URL)  # in the environment, never in a file
    home = agent_home(TENANT, case.sub)
    path = home / case.path
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_text(case.theirs)

    first = register_mcp(TENANT, case.cli, prefix=PREFIX)
    servers = case.servers(home)
    entry = servers["nika"]
    assert case.argv(entry) == [*PREFIX, "mcp"]
    where = roots()
    assert entry[case.env_key] == {
        "NIKA_TENANT_ID": TENANT,
        "NIKA_AGENT_TYPE": case.cli,
        "NIKA_OS_CONFIG_DIR": str(where.config),
        "NIKA_OS_DATA_DIR": str(where.data),
    }
    assert "docs" in servers  # the person's own server is kept
    text = path.read_text()
    assert "hunter2" not in text and "REDIS_URL=" not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path in first.changed

    second = register_mcp(TENANT, case.cli, prefix=PREFIX)
    assert second.changed == [] and path.read_text() == text  # idempotent


def test_claude_code_may_run_the_nika_tools_and_keeps_the_persons_rules(
    isolated_env: dict[str, str],
) -> None:
    home = agent_home(TENANT, "claude")
    home.mkdir(parents=True, mode=0o700)
    (home / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}))
    install_agent_hooks(TENANT, "claude-code")
    install_agent_hooks(TENANT, "claude-code")
    settings = _json(home / "settings.json")
    assert settings["permissions"]["allow"] == ["Bash(ls)", "mcp__nika"]
    assert "UserPromptSubmit" in settings["hooks"]  # the hooks are still installed beside it
    assert _claude(home)["nika"]["type"] == "stdio"


def test_codex_waits_for_the_server_approves_its_tools_and_forwards_redis_url_by_name(
    isolated_env: dict[str, str],
) -> None:
    install_agent_hooks(TENANT, "codex")
    home = agent_home(TENANT, "codex")
    config = tomllib.loads((home / "config.toml").read_text())
    nika = config["mcp_servers"]["nika"]
    assert nika["required"] is True and nika["startup_timeout_sec"] >= 60
    assert nika["default_tools_approval_mode"] == "approve"
    assert nika["env_vars"] == ["REDIS_URL"]
    assert config["features"]["hooks"] is True  # the hooks' own settings are kept


def test_gemini_trusts_the_server_and_the_install_keeps_its_hooks(
    isolated_env: dict[str, str], tmp_path: Path
) -> None:
    install_agent_hooks(TENANT, "gemini-cli", workdir=tmp_path)
    settings = _json(agent_home(TENANT, "gemini") / ".gemini" / "settings.json")
    assert settings["mcpServers"]["nika"]["trust"] is True
    assert settings["mcpServers"]["nika"]["timeout"] > 60_000  # past a correction's ingest wait
    assert "BeforeAgent" in settings["hooks"]


def test_opencode_server_is_enabled_beside_the_plugin(isolated_env: dict[str, str]) -> None:
    install_agent_hooks(TENANT, "opencode")
    home = agent_home(TENANT, "opencode")
    entry = _opencode(home)["nika"]
    assert entry["type"] == "local" and entry["enabled"] is True
    assert (home / "plugin" / "nika-memory.js").exists()


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_a_file_that_does_not_parse_is_left_untouched(
    case: Case, isolated_env: dict[str, str]
) -> None:
    path = agent_home(TENANT, case.sub) / case.path
    path.parent.mkdir(parents=True, mode=0o700)
    broken = "[mcp_servers\n" if case.path.endswith(".toml") else '{"mcp": '
    path.write_text(broken)
    with pytest.raises(ConfigError) as err:
        register_mcp(TENANT, case.cli, prefix=PREFIX)
    assert "fix" in (err.value.hint or "")
    assert path.read_text() == broken


def test_a_cli_without_mcp_gets_nothing(isolated_env: dict[str, str]) -> None:
    report = register_mcp(TENANT, "shell", prefix=PREFIX)
    assert report.files == [] and report.changed == []
