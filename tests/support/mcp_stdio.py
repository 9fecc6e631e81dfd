"""An MCP client session (the official SDK) on a fresh ``nika mcp`` process over stdio.

The SDK is imported when a session opens, not at module load: it costs seconds of collection.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters

TENANT = "acme"
TOOLS = {
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
}
"""Every tool ``nika mcp`` lists."""


def server_params(tenant: str | None = TENANT) -> StdioServerParameters:
    """``python -m nika_tui mcp`` with the test's NIKA_/REDIS_/HF_ environment and the tenant."""
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("NIKA_", "REDIS_", "HF_", "TRANS"))}
    env.pop("NIKA_TENANT_ID", None)
    if tenant:
        env["NIKA_TENANT_ID"] = tenant
    return StdioServerParameters(command=sys.executable, args=["-m", "nika_tui", "mcp"], env=env)


def tool_text(result: Any) -> str:
    """The text parts of a tool result, joined."""
    return "".join(getattr(c, "text", "") for c in result.content)


@asynccontextmanager
async def open_session(tenant: str | None = TENANT) -> AsyncIterator[ClientSession]:
    """An initialized session on a fresh server process, closed on exit."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    async with (
        stdio_client(server_params(tenant)) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
