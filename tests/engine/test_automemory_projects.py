"""A correction an agent writes into its native memory supersedes the project's fact.

Supersede compares memories of one project only, and the service syncs with no ``--project``:
imports must land in the project the fact lives in (issue 20, audit item 1). Through the
running service: real embedder, embedded Redis, Qdrant Edge, the CLI as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nika_tui.automemory.claude_sync import memory_dir
from nika_tui.automemory.codex_sync import agents_md
from nika_tui.automemory.runner import claude_project_root
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import KernelConfig, TenantConfig
from nika_tui.services.config_store import save_tenant
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder

OLD = "The web app deploys to production on Thursdays at 10:00"
NEW = "The web app deploys to production on Fridays at 10:00"


def _tenant(workdir: Path) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    save_tenant(
        TenantConfig(
            tenant_id="acme", display_name="Acme", kernel=KernelConfig(workdir=str(workdir))
        )
    )


def _remember_in_web(svc: RunningService, text: str) -> None:
    req = RememberRequest(
        tenant_id="acme",
        text=text,
        # Stated yesterday: a correction made seconds later is UNCERTAIN to the judge (review).
        meta=NikaMeta(timestamp=datetime.now(UTC) - timedelta(days=1), project_id="web"),
        idempotency_key=f"t-{abs(hash(text))}",
    )
    svc.client.wait_ingested("acme", svc.client.remember(req), timeout=60)


def _sync() -> dict[str, dict[str, object]]:
    out = subprocess.run(
        [sys.executable, "-m", "nika_tui", "automemory", "sync", "--tenant", "acme", "--json"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr
    return {t["target"]: t for t in json.loads(out.stdout)["targets"]}


def _web_facts(svc: RunningService) -> list[str]:
    return [r.text for r in svc.client.recent("acme", "web", limit=50)]


def _corrected(svc: RunningService) -> bool:
    """The project's current facts hold the correction and no longer the old fact."""
    facts = _web_facts(svc)
    return any("Fridays" in f for f in facts) and not any("Thursdays" in f for f in facts)


def test_claude_topic_file_correction_supersedes_the_project_fact(
    running_service: RunningService, tmp_path: Path
) -> None:
    work = tmp_path / "web"  # the agents' hooks record project "web" for this workdir
    _tenant(work)
    _remember_in_web(running_service, OLD)
    _sync()
    directory = memory_dir("acme", claude_project_root(work), running_service.ctx.settings.roots)
    (directory / "deploy-day.md").write_text(
        "---\nname: deploy-day\ndescription: when production deploys\nmetadata:\n"
        f"  type: project\n---\n\n{NEW}\n"
    )
    _sync()
    retry_until(lambda: _corrected(running_service), timeout=60, what="Thursdays superseded")


def test_codex_block_edit_supersedes_the_fact_of_the_line_it_came_from(
    running_service: RunningService, tmp_path: Path
) -> None:
    _tenant(tmp_path / "elsewhere")  # a workdir of another project: the line's own decides
    _remember_in_web(running_service, OLD)
    agents = agents_md("acme", running_service.ctx.settings.roots)
    retry_until(lambda: _sync()["codex"] and OLD in agents.read_text(), timeout=60, what="export")
    agents.write_text(agents.read_text().replace("on Thursdays", "on Fridays"))
    _sync()
    retry_until(lambda: _corrected(running_service), timeout=60, what="Thursdays superseded")
    assert "Thursdays" not in agents.read_text() and agents.read_text().count("Fridays") == 1
    assert NEW in _web_facts(running_service)  # imported as the fact, without nika's label
