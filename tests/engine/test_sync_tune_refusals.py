"""Bad arguments to ``automemory.sync`` and ``tune.recall`` are refused by the service (any
client may send them) and, before it is asked, by the CLI: one line naming the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nika_tui.automemory.claude_sync import memory_dir
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.protocol_requests import AutomemorySyncRequest, TuneRecallRequest
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.errors import ValidationFailed
from nika_tui.paths import roots
from nika_tui.services.config_store import save_tenant
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder


def _tenant(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    save_tenant(
        TenantConfig(
            tenant_id="acme", display_name="Acme", kernel=KernelConfig(workdir=str(workdir))
        )
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", *args], capture_output=True, text=True, timeout=120
    )


def test_zero_trials_is_refused_not_run_as_the_default(running_service: RunningService) -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    for trials in (0, -3):
        with pytest.raises(ValidationFailed, match=f"--trials must be at least 1, got {trials}"):
            running_service.client.send(TuneRecallRequest("acme", trials, 0), timeout=60)
    assert not (roots().tenant_data_dir("acme") / "tuning" / "optimisation.jsonl").exists()


def test_cli_refuses_zero_trials_in_one_line(isolated_env: dict[str, str]) -> None:
    # No service runs here: the refusal comes before it is asked (else "not running").
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    out = _cli("tune", "recall", "--tenant", "acme", "--trials", "0", "--json")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1
    assert json.loads(out.stderr)["error"] == "--trials must be at least 1, got 0"


def test_missing_workdir_is_refused_and_creates_nothing(
    running_service: RunningService, tmp_path: Path
) -> None:
    _tenant(tmp_path / "work")
    ghost = tmp_path / "no-such-dir"
    with pytest.raises(ValidationFailed, match="is not a directory"):
        running_service.client.send(AutomemorySyncRequest("acme", None, str(ghost)), timeout=60)
    assert not memory_dir("acme", str(ghost)).exists()
    out = _cli("automemory", "sync", "--tenant", "acme", "--workdir", str(ghost))
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        f"error: --workdir {ghost} is not a directory",
        "hint: pass the agent's working directory",
    ]
    assert not memory_dir("acme", str(ghost)).exists()


def test_unknown_project_is_refused_known_and_workdir_ones_are_synced(
    running_service: RunningService, tmp_path: Path
) -> None:
    work = tmp_path / "shop"
    _tenant(work)
    req = RememberRequest(
        tenant_id="acme",
        text="The billing project bills customers on the first day of each month",
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id="billing"),
        idempotency_key="refusal-billing",
    )
    running_service.client.wait_ingested("acme", running_service.client.remember(req), timeout=60)
    send = running_service.client.send
    with pytest.raises(ValidationFailed, match="tenant acme has no project 'biling'") as err:
        send(AutomemorySyncRequest("acme", "biling", None), timeout=60)
    assert "billing" in err.value.hint  # the known projects are named
    known = send(AutomemorySyncRequest("acme", "billing", None), timeout=120).to_body()
    assert {t["target"] for t in known["targets"]} == {"claude", "codex", "gemini", "opencode"}
    # The workdir's own project has no memory yet, and is still a project agents work in.
    mine = send(AutomemorySyncRequest("acme", "shop", str(work)), timeout=120).to_body()
    assert mine["tenant_id"] == "acme"
