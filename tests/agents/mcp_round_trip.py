"""The scripted model and the checks shared by the real-CLI MCP tests (Claude Code, Codex).

The CLI's home is prepared by nika's own installer (``install_for_tenant``, as ``nika kernel
spawn`` runs it): no MCP config is written by the test. The model is the mock server, scripted
by the tools each request offers and the tool results already in its history (read from the
request, never assumed): while the nika tools are not offered yet it calls ``WaitForMcpServers``
(Claude Code connects MCP servers in the background); then it walks :data:`STEPS`, taking the
ids it needs from the results the CLI sent back (a recall's ``[id]``, a retire's review id);
then it answers in text.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nika_tui.domain.hierarchy import HierarchyNode, Level, NodeStatus
from nika_tui.domain.memory import MemoryRecord, Status
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import AgentPermissions
from nika_tui.engine.review import ReviewStatus, get_item
from nika_tui.errors import ServiceNotRunning
from nika_tui.services.config_store import load_tenant, save_tenant
from nika_tui.services.hierarchy import open_hierarchy
from tests.agents.mock_anthropic_openai import (
    CallMade,
    MockModelServer,
    Reply,
    ToolCall,
    calls_made,
    default_reply,
    tools_offered,
)
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

PROJECT = "acme-billing"
OLD = "The staging server is stg-01.acme.internal"
NEW = "The staging server moved to stg-02.acme.internal"
BACKUP = "The billing database is backed up nightly at 02:30 UTC to bucket acme-db-backups."
REASON = "backups moved to the new cluster"
NOTE = "checked with ops"
JOB = "JOB-12"
JOB_TITLE = "Move staging to stg-02"
ANSWER = "Staging is stg-02.acme.internal; the backup fact awaits a review."
ALL_TOOLS = (
    "memory_recall",
    "memory_remember",
    "memory_history",
    "memory_timeline",
    "memory_correct",
    "memory_retire",
    "memory_projects",
    "review_list",
    "review_resolve",
    "hierarchy_status",
    "session_digest",
)
CLI_TIMEOUT_S = 300
"""Eleven tool calls, two waits for the service's indexing, on a loaded 2-core machine."""
_ID = re.compile(r"\[([0-9a-f-]{8,})\]")


Offered = Callable[[dict[str, Any]], list[str]]
Calls = Callable[[dict[str, Any]], list[CallMade]]


def short(name: str) -> str | None:
    """The nika tool a CLI's tool name is (``mcp__nika__memory_recall`` → ``memory_recall``)."""
    return next((t for t in ALL_TOOLS if name == t or name.endswith(f"_{t}")), None)


def _tool(offered: list[str], tool: str) -> str | None:
    return next((n for n in offered if short(n) == tool), None)


def indexed(svc: RunningService, tenant: str, query: str, text: str) -> bool:
    """True once a recall of ``query`` in the tenant returns a memory containing ``text``."""
    try:
        result = svc.client.recall(RecallQuery(tenant_id=tenant, query=query, limit=10))
    except ServiceNotRunning:
        return False  # its heartbeat lags while it embeds on a busy machine: ask again
    return any(text in h.record.text for h in result.hits)


def id_in(result: str | None, text: str) -> str:
    """The ``[id]`` on the line of a tool result that contains ``text``."""
    line = next(ln for ln in (result or "").splitlines() if text in ln)
    match = _ID.search(line)
    assert match, line
    return match.group(1)


def review_of(result: str | None) -> str:
    """The review id a retire or correction waiting for a person names: ``(review ID)``."""
    text = result or ""
    assert "(review " in text, text
    return text.rsplit("(review ", 1)[1].split(")", 1)[0]


Step = Callable[[RunningService, str, list[CallMade]], tuple[str, dict[str, Any]]]


def _after_indexed(text: str, tool: str, args: dict[str, Any]) -> Step:
    def step(svc: RunningService, tenant: str, done: list[CallMade]) -> tuple[str, dict[str, Any]]:
        assert "queued for ingestion" in (done[-1].result or ""), done[-1]
        # remember only queues: call the next tool once the real service has indexed the fact
        query = str(args["query"])
        retry_until(lambda: indexed(svc, tenant, query, text), timeout=90, interval=0.3, what=text)
        return tool, args

    return step


def _fixed(tool: str, args: dict[str, Any]) -> Step:
    return lambda _svc, _tenant, _done: (tool, args)


def _with(tool: str, make: Callable[[list[CallMade]], dict[str, Any]]) -> Step:
    return lambda _svc, _tenant, done: (tool, make(done))


STEPS: tuple[Step, ...] = (
    _fixed("memory_remember", {"text": OLD, "project_id": PROJECT}),
    _after_indexed("stg-01", "memory_recall", {"query": "which host is the staging server"}),
    _with(
        "memory_correct",
        lambda done: {"memory_id": id_in(done[1].result, "stg-01"), "corrected_text": NEW},
    ),
    _with(
        "review_resolve",
        lambda done: {
            "review_id": review_of(done[2].result),
            "decision": "approve",
            "note": NOTE,
        },
    ),
    _fixed("memory_timeline", {"query": "which host is the staging server"}),
    _fixed("memory_remember", {"text": BACKUP, "project_id": PROJECT}),
    _after_indexed("02:30 UTC", "memory_recall", {"query": "when is the billing db backed up"}),
    _with(
        "memory_retire",
        lambda done: {"memory_id": id_in(done[6].result, "02:30 UTC"), "reason": REASON},
    ),
    _fixed("review_list", {}),
    _fixed("memory_projects", {}),
    _fixed("session_digest", {"project_id": PROJECT}),
    _with("memory_history", lambda done: {"memory_id": id_in(done[1].result, "stg-01")}),
    _fixed("hierarchy_status", {"node_id": JOB}),
)
"""Thirteen calls over the eleven tools."""


def prepare_tenant(tenant: str) -> None:
    """The tenant lets its agents resolve reviews (retiring still waits for one: the default),
    and its hierarchy has the project and one job in progress."""
    config = load_tenant(tenant)
    assert config.agents.retire_needs_review  # the default, not set here
    save_tenant(config.model_copy(update={"agents": AgentPermissions(resolve_reviews=True)}))
    now = datetime.now(UTC)
    hierarchy = open_hierarchy(tenant)
    hierarchy.upsert(
        HierarchyNode(id=PROJECT, level=Level.PROJECT, title="Billing", updated_at=now)
    )
    hierarchy.upsert(
        HierarchyNode(
            id=JOB,
            level=Level.JOB,
            title=JOB_TITLE,
            parent_id=PROJECT,
            status=NodeStatus.IN_PROGRESS,
            updated_at=now,
        )
    )


def scripted(
    svc: RunningService,
    tenant: str,
    offered_of: Offered = tools_offered,
    calls_of: Calls = calls_made,
) -> Callable[[dict[str, Any]], Reply]:
    """Wait for the MCP servers, run :data:`STEPS` one call per request, then answer.

    ``offered_of`` / ``calls_of`` read a request of the CLI's API (default: Anthropic and
    Responses, :mod:`tests.agents.mock_anthropic_openai`).
    """

    def reply(body: dict[str, Any]) -> Reply:
        offered = offered_of(body)
        if not offered:
            return default_reply(body)  # a side request of the CLI (title, topic, ...)
        calls = calls_of(body)
        if _tool(offered, "memory_remember") is None:
            waits = [c for c in calls if c.name == "WaitForMcpServers"]
            if "WaitForMcpServers" in offered and len(waits) < 3:
                return ToolCall("WaitForMcpServers", {"servers": ["nika"]})
            return "The nika tools were not offered."
        done = [c for c in calls if short(c.name)]
        if len(done) < len(STEPS):
            tool, args = STEPS[len(done)](svc, tenant, done)
            name = _tool(offered, tool)
            return ToolCall(name, args) if name else f"The nika tool {tool} was not offered."
        return ANSWER

    return reply


def _record(svc: RunningService, tenant: str, memory_id: str) -> MemoryRecord:
    [record] = [r for r in svc.client.history(tenant, memory_id) if r.id == memory_id]
    return record


def assert_full_round_trip(
    svc: RunningService,
    bodies: list[dict[str, Any]],
    tenant: str,
    offered_of: Offered = tools_offered,
    calls_of: Calls = calls_made,
) -> None:
    """Every step's result reached the model (the requests' ``bodies``), and its effect is in
    the real service."""
    offered = {short(n) for body in bodies for n in offered_of(body)}
    assert set(ALL_TOOLS) <= offered, sorted(str(n) for n in offered)
    last = max(bodies, key=lambda body: len(calls_of(body)))
    done = [c for c in calls_of(last) if short(c.name)]
    assert [short(c.name) for c in done] == [
        "memory_remember",
        "memory_recall",
        "memory_correct",
        "review_resolve",
        "memory_timeline",
        "memory_remember",
        "memory_recall",
        "memory_retire",
        "review_list",
        "memory_projects",
        "session_digest",
        "memory_history",
        "hierarchy_status",
    ]
    results = [c.result or "" for c in done]
    remembered, recalled, corrected, resolved, timeline, _again, recalled2 = results[:7]
    retired, listed, projects, digest, history, status = results[7:]
    assert "queued for ingestion" in remembered, remembered
    old_id = id_in(recalled, "stg-01")
    assert OLD in recalled, recalled
    # correct: the new fact is stored at once; retiring the old one waits for a review (the
    # tenant's default), which the agent may resolve here (agents.resolve_reviews)
    assert f"retiring [{old_id}] waits for a person's review" in corrected, corrected
    new_id = corrected.split("[", 2)[1].split("]", 1)[0]
    review_id = review_of(corrected)
    # the CLI's framing around a tool's text varies: Codex puts "Wall time: … Output:" before
    # it, Gemini CLI wraps it in <untrusted_context>
    lines = resolved.splitlines()
    assert any(ln.endswith(f"review {review_id} approved") for ln in lines), resolved
    correction = get_item(svc.ctx.redis, tenant, review_id)
    assert correction is not None and correction.status is ReviewStatus.APPROVED, correction
    assert NOTE in (correction.note or "")
    old, new = _record(svc, tenant, old_id), _record(svc, tenant, new_id)
    assert old.status is Status.RETIRED and old.superseded_by == new_id  # never deleted
    assert new.status is Status.CURRENT and new.text == NEW and new.meta.project_id == PROJECT
    assert new.meta.parent_id == old_id
    assert timeline.index("stg-01") < timeline.index("stg-02"), timeline
    assert f"replaced by [{new_id}]" in timeline, timeline
    # retire: the tenant's default asks a person, so it waits in the review queue
    backup_id = id_in(recalled2, "02:30 UTC")
    assert f"retiring [{backup_id}] waits for a person's review" in retired, retired
    review_id = review_of(retired)
    assert _record(svc, tenant, backup_id).status is Status.CURRENT
    item = get_item(svc.ctx.redis, tenant, review_id)
    assert item is not None and item.status is ReviewStatus.PENDING, item
    assert item.old_id == backup_id and REASON in item.new_text, item
    assert f"[{review_id}]" in listed and f"(retire: {REASON})" in listed, listed
    counts = svc.client.projects(tenant)[PROJECT]["semantic"]
    assert counts == {"current": 2, "retired": 1}, counts
    assert f"{PROJECT} — semantic: 2 current, 1 retired" in projects, projects
    assert "stg-02.acme.internal" in digest and "stg-01" not in digest, digest
    assert "## Pending reviews: 1" in digest, digest
    assert f"- {JOB} [in_progress] {JOB_TITLE}" in digest, digest  # open jobs, from the hierarchy
    assert f"[{old_id}] (retired, superseded by {new_id}" in history, history
    assert f"[{new_id}]" in history, history
    # the hierarchy's node, as the tool's JSON (the CLI may frame it)
    node = json.loads(status[status.index("{") : status.rindex("}") + 1])
    assert (node["id"], node["status"], node["title"]) == (JOB, "in_progress", JOB_TITLE), node
    assert node["parent_id"] == PROJECT


def summary(mock: MockModelServer) -> str:
    """One line per model request: tools offered (nika / Wait ones) and calls so far."""
    lines = []
    for r in mock.model_requests():
        offered = [n for n in tools_offered(r.body) if "nika" in n or n.startswith("Wait")]
        calls = [(c.name, (c.result or "")[:160]) for c in calls_made(r.body)]
        lines.append(f"{r.path} tools={len(tools_offered(r.body))} {len(offered)} calls={calls}")
    return "\n".join(lines)


def run_cli(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the CLI headless; a timeout is returned (rc -9), so the assertion shows the log."""
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(argv, -9, str(exc.stdout), str(exc.stderr))
