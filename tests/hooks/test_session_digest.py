"""What SessionStart's digest holds: the project's newest current facts, through the running
memory service (real Redis, Qdrant Edge, embedder), as ``nika hook claude SessionStart`` prints
them to Claude Code.

Checked: the project's current facts, most recent first, one line each; never a retired one,
another tenant's or (while the project has its own) another project's; the tenant's newest
when the project has none; nothing the handoff packet shown with it already says; the whole
injection within its 6 KB, with whole fact lines only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.hooks.inject import DIGEST_TITLE, SESSION_START_MAX_BYTES
from nika_tui.services.config_store import save_tenant
from nika_tui.services.memory_client import MemoryClient
from tests.hooks.conftest import TENANT, HookRun, Workspace

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

Run = Callable[..., HookRun]
NOW = datetime.now(UTC)
_FACT_LINE = re.compile(r"^- \[semantic, \d{4}-\d{2}-\d{2}, id [0-9a-f]{8}\] (.*)$")


def _store(
    client: MemoryClient, text: str, project: str, minutes_ago: int, tenant: str = TENANT
) -> str:
    at = NOW - timedelta(minutes=minutes_ago)
    req = RememberRequest(
        tenant_id=tenant,
        text=text,
        meta=NikaMeta(timestamp=at, project_id=project),
        valid_from=at,
    )
    outcome = client.wait_ingested(tenant, client.remember(req), timeout=120)
    return str(outcome["id"])


def _digest(run: HookRun) -> list[str]:
    """The fact lines of the digest section (the text after each line's bracket)."""
    assert run.returncode == 0
    context = str(json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"])
    assert len(context.encode()) <= SESSION_START_MAX_BYTES
    lines = context.splitlines()
    if f"## {DIGEST_TITLE}" not in lines:
        return []
    start = lines.index(f"## {DIGEST_TITLE}") + 1
    out: list[str] = []
    for line in lines[start:]:
        if line.startswith("## ") or line == "</nika-memory>":
            break
        match = _FACT_LINE.match(line)
        assert match, f"not one whole fact line: {line!r}"
        out.append(match.group(1))
    return out


def _start(run_hook: Run, workspace: Workspace, session: str, **overrides: Any) -> HookRun:
    payload = workspace.payload("claude/hook_session_start.json", session_id=session, **overrides)
    return run_hook("claude", "SessionStart", payload)


def test_a_new_session_gets_the_projects_current_facts_newest_first(
    run_hook: Run,
    workspace: Workspace,
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    config = make_tenant(TENANT)
    # Retiring for an agent applies at once (not through a person's review) in this tenant.
    save_tenant(
        config.model_copy(
            update={"agents": config.agents.model_copy(update={"retire_needs_review": False})}
        )
    )
    make_tenant("globex")
    client = running_service.client
    oldest = "Deploys of acme-api happen on Fridays after the standup."
    newest = "The staging server of acme-api moved to 10.0.9.30 on Monday."
    retired = "The acme-api invoices are printed on the blue laser printer."
    _store(client, oldest, "acme-api", minutes_ago=30)
    _store(client, newest, "acme-api", minutes_ago=5)
    retired_id = _store(client, retired, "acme-api", minutes_ago=1)
    assert client.agent_retire(TENANT, retired_id, "printer sold")["status"] == "retired"
    _store(client, "The billing team's wiki lives at wiki.acme.test.", "billing", minutes_ago=2)
    _store(client, "Globex keeps its staging server at 10.7.7.7.", "acme-api", 0, "globex")

    facts = _digest(_start(run_hook, workspace, "new-session-1"))

    assert facts == [newest, oldest]  # most recent first; not retired, other project or tenant
    # The same context does not get them twice (a resumed session re-runs SessionStart).
    assert _start(run_hook, workspace, "new-session-1").stdout == ""


def test_a_project_without_facts_gets_the_tenants_newest(
    run_hook: Run,
    workspace: Workspace,
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    make_tenant(TENANT)
    make_tenant("globex")
    client = running_service.client
    fact = "The billing team's wiki lives at wiki.acme.test."
    _store(client, fact, "billing", minutes_ago=2)
    _store(client, "Globex keeps its staging server at 10.7.7.7.", "", 0, "globex")

    assert _digest(_start(run_hook, workspace, "new-session-2")) == [fact]


def test_the_digest_fits_the_budget_after_the_packet_and_skips_what_it_says(
    run_hook: Run,
    workspace: Workspace,
    running_service: Any,
    make_tenant: Callable[..., Any],
) -> None:
    make_tenant(TENANT)
    client = running_service.client
    # The sample transcript's last ask (quoted by its handoff packet) is also a stored fact.
    transcript = [json.loads(line) for line in workspace.transcript.read_text().splitlines()]
    asks = [
        e["message"]["content"]
        for e in transcript
        if e.get("type") == "user" and isinstance(e.get("message", {}).get("content"), str)
    ]
    quoted = asks[-1]
    _store(client, quoted, "acme-api", minutes_ago=0)
    topics = ["database", "cache", "queue", "mailer", "search", "cdn", "vpn", "backup"]
    topics += ["logging", "metrics", "tracing", "dns"]
    for i, topic in enumerate(topics):
        text = f"The acme-api {topic} runbook: " + f"{topic} step {i} is checked twice. " * 6
        _store(client, text.strip(), "acme-api", minutes_ago=10 + i)
    run_hook("claude", "PreCompact", workspace.payload("claude/hook_pre_compact.json"))
    payload = workspace.payload(
        "claude/hook_session_start_compact.json", session_id="7b1f9c2e-3a4d-4e5f-8a9b-0c1d2e3f4a5b"
    )

    facts = _digest(run_hook("claude", "SessionStart", payload))

    assert quoted.strip() not in " ".join(facts)  # the packet says it already
    assert facts, "no room left for any fact"
    assert len(facts) < len(topics)  # the budget cut the list, not the lines
    assert [f.split(" runbook")[0] for f in facts] == [
        f"The acme-api {t}" for t in topics[: len(facts)]
    ]
