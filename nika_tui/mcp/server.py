"""``nika mcp``: the memory tools for any MCP-capable agent, over stdio.

A thin client of the memory service (:class:`~nika_tui.services.memory_client.MemoryClient`):
no store, no embedder here. The tenant comes from ``NIKA_TENANT_ID`` (set by the kernel).
Tools:

- ``memory_recall`` — hybrid recall; PALACE rules: zero relevant hits answers exactly
  ``no memory for {X}`` (French tenants: ``aucun souvenir en RAG pour {X}``), never a guess;
  the YAML hierarchy's status of named jobs/tasks is shown beside the memories (golden rule).
- ``memory_remember`` — queue one memory (durable once queued, even while the service is down).
- ``memory_history`` — the supersede chain of one memory.
- the rest of the toolset (timeline, correct, retire, projects, review queue, hierarchy
  status, session digest) is in :mod:`nika_tui.mcp.tools`; docs/mcp.md lists every tool.

Failures come back as tool errors with the one-line message and hint (e.g. "memory service
is not running — start it with `nika up`").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from nika_tui.domain.envelope import NikaMeta, Trigger, explain_validation_error
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import MAX_RECALL_LIMIT, RecallQuery, RecallResult, RememberRequest
from nika_tui.domain.tenant_id import is_valid_tenant_id
from nika_tui.errors import NikaError
from nika_tui.mcp.tools import as_of_arg, layer_arg, register_tools
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings

T = TypeVar("T")

INSTRUCTIONS = (
    "Shared memory of this tenant (nika-os). Before answering a factual question about a "
    "client, a project, a past decision or a remembered entity, call memory_recall. If it "
    "answers 'no memory for …', say so: do not guess. Job and task status comes from the "
    "hierarchy shown with the hits, not from a remembered summary."
)


def _tenant(settings: Settings) -> str:
    tenant = settings.tenant_id
    if not is_valid_tenant_id(tenant):
        raise ToolError(
            "NIKA_TENANT_ID is not set — run `nika mcp` from a tenant's kernel, or export "
            "NIKA_TENANT_ID=<tenant id> in the MCP server's environment"
        )
    return tenant


def _as_tool_error(exc: NikaError) -> ToolError:
    return ToolError(f"{exc.message} — {exc.hint}" if exc.hint else exc.message)


def format_recall(result: RecallResult) -> str:
    """Text an agent reads: the PALACE line alone, or one line per hit (+ hierarchy status)."""
    if not result.hits:
        return result.palace or f"no memory for {result.query}"
    lines = []
    for hit in result.hits:
        rec = hit.record
        lines.append(
            f"[{rec.id}] ({rec.layer.value}, valid from {rec.valid_from:%Y-%m-%d}, "
            f"project {rec.meta.project_id or '-'}, score {hit.score:.3f}) {rec.text}"
        )
    if result.hierarchy:
        lines.append("hierarchy status (source of truth): " + json.dumps(result.hierarchy))
    return "\n".join(lines)


def build_server(
    settings: Settings,
    client_factory: Callable[[bool], MemoryClient] | None = None,
) -> MCPServer[Any]:
    """The MCP server with its tools (all scoped to ``NIKA_TENANT_ID``).

    Args:
        settings: The knobs (tenant, session, agent), built once by :func:`run_stdio`.
        client_factory: ``(start_redis) -> MemoryClient`` (default: on the settings' Redis).
    """

    def make_client(start_redis: bool) -> MemoryClient:
        if client_factory is not None:
            return client_factory(start_redis)
        return MemoryClient.open(settings, start_redis=start_redis)

    async def in_thread(fn: Callable[[], T]) -> T:
        # The client blocks on Redis; keep the stdio event loop free.
        try:
            return await anyio.to_thread.run_sync(fn)
        except NikaError as exc:
            raise _as_tool_error(exc) from exc

    server: MCPServer[Any] = MCPServer(name="nika-memory", instructions=INSTRUCTIONS)

    @server.tool(structured_output=False)
    async def memory_recall(
        query: str,
        project_id: str | None = None,
        job_id: str | None = None,
        task_id: str | None = None,
        limit: int = 5,
        include_retired: bool = False,
        layer: str | None = None,
        as_of: str | None = None,
    ) -> str:
        """Recall this tenant's memories relevant to QUERY (current ones unless include_retired).

        layer: semantic or episodic (default both). as_of: a date or ISO time: answer with
        what was current then, by valid time. Answers exactly 'no memory for QUERY' when
        nothing relevant is stored: then say so, do not guess.
        """
        tenant = _tenant(settings)
        when, which = as_of_arg(as_of), layer_arg(layer)
        try:
            q = RecallQuery(
                tenant_id=tenant,
                query=query,
                project_id=project_id or None,
                job_id=job_id or None,
                task_id=task_id or None,
                limit=max(1, min(limit, MAX_RECALL_LIMIT)),
                include_retired=include_retired,
                session_id=settings.session_id,
                layer=which,
                as_of=when,
            )
        except ValidationError as exc:
            raise ToolError(explain_validation_error(exc)) from exc
        result = await in_thread(lambda: make_client(False).recall(q))
        return format_recall(result)

    @server.tool(structured_output=False)
    async def memory_remember(
        text: str,
        project_id: str = "",
        layer: str = "semantic",
        domain: str | None = None,
        action_type: str | None = None,
        intent: str | None = None,
        valid_from: str | None = None,
    ) -> str:
        """Remember one fact for this tenant (semantic) or one event (episodic).

        A newer fact on the same subject supersedes the older one; doubtful contradictions go
        to a human review queue. valid_from: ISO-8601 time the fact became true (default now).
        """
        tenant = _tenant(settings)
        now = datetime.now(UTC)
        try:
            meta = NikaMeta.model_validate(
                {
                    "timestamp": now,
                    "trigger": Trigger.AUTONOMOUS,
                    "agent_type": settings.agent_type,
                    "session_id": settings.session_id,
                    "project_id": project_id,
                    "domain": domain,
                    "action_type": action_type,
                    "intent": intent,
                }
            )
            req = RememberRequest(
                tenant_id=tenant,
                text=text,
                layer=Layer(layer),
                meta=meta,
                valid_from=datetime.fromisoformat(valid_from) if valid_from else None,
            )
        except ValidationError as exc:
            raise ToolError(explain_validation_error(exc)) from exc
        except ValueError as exc:
            raise ToolError(f"{exc} (layer: semantic or episodic; valid_from: ISO-8601)") from exc
        key = await in_thread(lambda: make_client(True).remember(req))
        return f"queued for ingestion (idempotency key {key})"

    @server.tool(structured_output=False)
    async def memory_history(memory_id: str) -> str:
        """The supersede chain of one memory, oldest first (retired versions included)."""
        tenant = _tenant(settings)
        records = await in_thread(lambda: make_client(False).history(tenant, memory_id))
        if not records:
            return f"no memory with id {memory_id}"
        lines = []
        for rec in records:
            status = rec.status.value
            if rec.superseded_by:
                status += f", superseded by {rec.superseded_by}"
            lines.append(f"[{rec.id}] ({status}, valid from {rec.valid_from:%Y-%m-%d}) {rec.text}")
        return "\n".join(lines)

    register_tools(server, lambda: _tenant(settings), settings, make_client, in_thread)
    return server


def run_stdio(env: Mapping[str, str] | None = None) -> None:
    """Serve over stdio until the client closes the stream."""
    build_server(Settings.from_env(env)).run("stdio")
