"""``nika tenant list``."""

from __future__ import annotations

import json

import pytest

from nika_tui.cli import main
from nika_tui.domain.answers import build_setup
from nika_tui.domain.tenant import Provider, SecretSource
from nika_tui.paths import tenant_config_path
from nika_tui.services.secrets import SecretStore
from nika_tui.settings import Settings
from nika_tui.wizard.apply import write_setup


def make_tenant(tid: str, **extra: object) -> None:
    raw = {
        "tenant_id": tid,
        "display_name": tid.title(),
        "language": "en",
        "plan": "free",
        "agent_cli": "shell",
        "privacy": "local",
        **extra,
    }
    values = {Provider.RUNPOD: {"api_key": "r" * 32}}
    plan = build_setup(raw, provider_values=values, storage=SecretSource.ENV)
    write_setup(
        plan, SecretStore(tid), SecretSource.ENV, backup=False, roots=Settings.from_env().roots
    )


def test_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tenant", "list"]) == 0
    assert "no tenant yet" in capsys.readouterr().out


def test_lists_plan_cli_privacy_and_strategies(capsys: pytest.CaptureFixture[str]) -> None:
    make_tenant("acme", plan="pro", agent_cli="codex", privacy="default", providers=["runpod"])
    make_tenant("beta", knowledge_repo="https://git.example/k.git")
    assert main(["tenant", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["tenants"]
    assert [r["tenant_id"] for r in rows] == ["acme", "beta"]
    assert rows[0] | {} == {
        "tenant_id": "acme",
        "display_name": "Acme",
        "plan": "pro",
        "agent_cli": "codex",
        "privacy": "default",
        "providers": ["runpod"],
        "strategies": ["scale_horizontal_gpu"],
    }
    assert rows[1]["strategies"] == ["compress_to_repo"]
    assert main(["tenant", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["TENANT", "PLAN", "AGENT", "CLI", "PRIVACY", "STRATEGIES"]
    assert lines[1].split() == ["acme", "pro", "codex", "default", "scale_horizontal_gpu"]


def test_a_broken_config_is_reported_not_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    make_tenant("acme")
    bad = tenant_config_path("broken")
    bad.parent.mkdir(parents=True)
    bad.write_text("schema_version: 1\ntenant_id: broken\ndisplay_name: B\nplan: gold\n")
    assert main(["tenant", "list", "--json"]) == 1
    captured = capsys.readouterr()
    rows = json.loads(captured.out)["tenants"]
    assert rows[0]["tenant_id"] == "acme" and "error" in rows[1]
    assert str(bad) in captured.err and "plan" in captured.err
