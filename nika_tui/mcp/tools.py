"""The MCP tools beyond recall / remember / history (issue 21), registered by ``build_server``.

Every tool acts on the kernel's tenant only: the tenant comes from the server's environment
(``NIKA_TENANT_ID``), never from an argument, so an agent cannot name another tenant.
Agents never delete: ``memory_correct`` states the new fact (supersede applies) and
``memory_retire`` retires with a reason; both wait for a person's review when the tenant's
``agents.retire_needs_review`` says so. ``review_resolve`` works only when the tenant's
``agents.resolve_reviews`` allows agents to decide.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from nika_tui.domain.envelope import NikaMeta, Trigger, explain_validation_error
from nika_tui.domain.hierarchy import NodeStatus
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import MAX_RECALL_LIMIT, RecallQuery, RememberRequest
from nika_tui.domain.timeline import format_timelines, parse_as_of
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings

T = TypeVar("T")
InThread = Callable[[Callable[[], T]], Awaitable[T]]

DIGEST_HITS = 5
INGEST_WAIT_S = 60.0


def as_of_arg(value: str | None) -> datetime | None:
    """An ``as_of`` tool argument, or a tool error naming the accepted forms."""
    if not value:
        return None
    try:
        return parse_as_of(value)
    except ValueError as exc:
        raise ToolError(f"as_of: {exc}") from None


def layer_arg(value: str | None) -> Layer | None:
    """A ``layer`` tool argument (semantic, episodic, or empty for both)."""
    if not value:
        return None
    try:
        return Layer(value)
    except ValueError:
        raise ToolError(f"layer {value!r} is not allowed; use semantic or episodic") from None


def timelines_text(out: Mapping[str, Any]) -> str:
    """Each fact's versions, oldest first, with what replaced them and why."""
    return "\n".join(format_timelines(dict(out)))


def register_tools(
    server: MCPServer[Any],
    tenant_of: Callable[[], str],
    settings: Settings,
    make_client: Callable[[bool], MemoryClient],
    in_thread: InThread[Any],
) -> None:
    """Add the timeline, correction, retirement, project, review, hierarchy and digest tools."""
    agent = settings.agent_type or "mcp"

    @server.tool(structured_output=False)
    async def memory_timeline(query: str, project_id: str | None = None, limit: int = 3) -> str:
        """How a fact changed: each version, when it held, what replaced it and why."""
        tenant = tenant_of()
        try:
            q = RecallQuery(
                tenant_id=tenant,
                query=query,
                project_id=project_id or None,
                limit=max(1, min(limit, MAX_RECALL_LIMIT)),
                include_retired=True,
            )
        except ValidationError as exc:
            raise ToolError(explain_validation_error(exc)) from exc
        out = await in_thread(lambda: make_client(False).timeline(q))
        return timelines_text(out)

    @server.tool(structured_output=False)
    async def memory_correct(
        memory_id: str, corrected_text: str, project_id: str | None = None
    ) -> str:
        """State the corrected fact that replaces memory MEMORY_ID (never deletes anything).

        The new fact is ingested (supersede applies); if the old one is still current after
        that, its retirement is applied or, when the tenant asks for it, queued for review.
        """
        tenant = tenant_of()

        def run() -> str:
            client = make_client(True)
            chain = client.history(tenant, memory_id)
            old = next((r for r in chain if r.id == memory_id), None)
            if old is None:
                return f"no memory with id {memory_id}"
            now = datetime.now(UTC)
            try:
                meta = NikaMeta(
                    timestamp=now,
                    trigger=Trigger.AUTONOMOUS,
                    agent_type=agent,
                    session_id=settings.session_id,
                    project_id=old.meta.project_id if project_id is None else project_id,
                    parent_id=old.id,
                )
                req = RememberRequest(
                    tenant_id=tenant, text=corrected_text, layer=old.layer, meta=meta
                )
            except ValidationError as exc:
                raise ToolError(explain_validation_error(exc)) from exc
            outcome = client.wait_ingested(tenant, client.remember(req), timeout=INGEST_WAIT_S)
            new_id = str(outcome["id"])
            if memory_id in outcome.get("retired", []):
                return f"corrected: [{new_id}] replaces [{memory_id}] (supersede retired it)"
            done = client.agent_retire(
                tenant, memory_id, f"corrected: {corrected_text}"[:400], new_id, agent
            )
            return _retire_line(done, new_id)

        return str(await in_thread(run))

    @server.tool(structured_output=False)
    async def memory_retire(memory_id: str, reason: str) -> str:
        """Retire memory MEMORY_ID with a REASON (it stays in history; nothing is deleted).

        When the tenant's settings ask for it, a person's review decides instead.
        """
        tenant = tenant_of()
        if not reason.strip():
            raise ToolError("a reason is required: say why the memory is no longer true")
        done = await in_thread(
            lambda: make_client(False).agent_retire(tenant, memory_id, reason, "", agent)
        )
        return _retire_line(done, "")

    @server.tool(structured_output=False)
    async def memory_projects() -> str:
        """This tenant's projects with their memory counts (current / retired, per layer)."""
        tenant = tenant_of()
        projects = await in_thread(lambda: make_client(False).projects(tenant))
        if not projects:
            return "no memories stored for this tenant yet"
        lines = []
        for project, layers in projects.items():
            counts = ", ".join(
                f"{layer}: {c.get('current', 0)} current, {c.get('retired', 0)} retired"
                for layer, c in layers.items()
            )
            lines.append(f"{project or '(no project)'} — {counts}")
        return "\n".join(lines)

    @server.tool(structured_output=False)
    async def review_list() -> str:
        """Pending review items: contradictions (or retire requests) waiting for a decision."""
        tenant = tenant_of()
        items = await in_thread(lambda: make_client(False).review_list(tenant))
        if not items:
            return "no pending review"
        return "\n".join(
            f"[{i['id']}] old [{i['old_id']}] {i['old_text']!r} vs new "
            f"[{i['new_id'] or '-'}] {i['new_text']!r} — {i['reason']}"
            for i in items
        )

    @server.tool(structured_output=False)
    async def review_resolve(review_id: str, decision: str, note: str = "") -> str:
        """Approve (retire the old memory) or reject (keep both) one review item.

        Refused unless the tenant lets agents resolve reviews (agents.resolve_reviews).
        """
        tenant = tenant_of()
        item = await in_thread(
            lambda: make_client(False).agent_review_resolve(
                tenant, review_id, decision, note, agent
            )
        )
        return f"review {item['id']} {item['status']}"

    @server.tool(structured_output=False)
    async def hierarchy_status(node_id: str) -> str:
        """Status of a job or task from the tenant's hierarchy (the source of truth)."""
        tenant = tenant_of()

        def run() -> str:
            from nika_tui.services.hierarchy import open_hierarchy

            hierarchy = open_hierarchy(tenant, settings.roots)
            node = hierarchy.get(node_id)
            if node is None:
                return f"{node_id}: not in the hierarchy"
            info = node.model_dump(mode="json")
            info["children"] = {c.id: c.status.value for c in hierarchy.children(node_id)}
            return json.dumps(info, ensure_ascii=False)

        return str(await in_thread(run))

    @server.tool(structured_output=False)
    async def session_digest(project_id: str | None = None) -> str:
        """What to know at the start of a session: decisions and conventions recalled for the
        project, open jobs and tasks from the hierarchy, pending reviews and memory counts."""
        tenant = tenant_of()

        def run() -> str:
            from nika_tui.services.hierarchy import open_hierarchy

            client = make_client(False)
            q = RecallQuery(
                tenant_id=tenant,
                query=f"decisions, conventions and open tasks for project {project_id or tenant}",
                project_id=project_id or None,
                limit=DIGEST_HITS,
                session_id=settings.session_id,
            )
            recalled = client.recall(q)
            recent = client.recent(tenant, project_id or "", DIGEST_HITS)
            lines = [f"# {tenant}" + (f" / {project_id}" if project_id else "")]
            lines.append("## Newest facts")
            lines += [
                f"- [{r.id}] (valid from {r.valid_from:%Y-%m-%d}) {r.text}" for r in recent
            ] or ["- none stored yet"]
            shown = {r.id for r in recent}
            extra = [h for h in recalled.hits if h.record.id not in shown]
            if extra:
                lines.append("## Decisions and conventions recalled")
                lines += [f"- [{h.record.id}] {h.record.text}" for h in extra]
            open_nodes = [
                n
                for n in open_hierarchy(tenant, settings.roots).all()
                if n.status in (NodeStatus.TODO, NodeStatus.IN_PROGRESS, NodeStatus.BLOCKED)
            ]
            lines.append("## Open jobs and tasks (hierarchy)")
            lines += [f"- {n.id} [{n.status.value}] {n.title}" for n in open_nodes] or ["- none"]
            reviews = client.review_list(tenant)
            lines.append(f"## Pending reviews: {len(reviews)}")
            projects = client.projects(tenant)
            total = sum(
                c.get("current", 0) for layers in projects.values() for c in layers.values()
            )
            lines.append(f"## Memory: {total} current memories in {len(projects)} projects")
            return "\n".join(lines)

        return str(await in_thread(run))


def _retire_line(done: Mapping[str, Any], new_id: str) -> str:
    status = done.get("status")
    replaced = f" by [{new_id}]" if new_id else ""
    if status == "retired":
        return f"retired [{done['id']}]{replaced}"
    if status == "review":
        return (
            f"stored{replaced}; retiring [{done['id']}] waits for a person's review "
            f"(review {done['review_id']})"
        )
    return f"[{done['id']}] was already retired"
