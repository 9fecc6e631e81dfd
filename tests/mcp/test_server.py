"""``nika mcp`` driven over stdio by the official MCP client SDK."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.memory import Layer
from nika_tui.domain.requests import RememberRequest
from tests.support.mcp_stdio import TENANT, TOOLS, open_session, tool_text


def call(tool: str, arguments: dict[str, Any], tenant: str | None = TENANT) -> tuple[bool, str]:
    """(is_error, text) of one tool call on a fresh server process."""

    async def go() -> tuple[bool, str]:
        async with open_session(tenant) as session:
            listed = await session.list_tools()
            assert {t.name for t in listed.tools} == TOOLS
            result = await session.call_tool(tool, arguments)
            return bool(result.is_error), tool_text(result)

    return anyio.run(go)


def test_recall_with_service_down_is_a_clear_tool_error(redis_url: str) -> None:
    is_error, text = call("memory_recall", {"query": "deploy day"})
    assert is_error
    assert "memory service is not running" in text and "nika up" in text


def test_missing_tenant_is_a_clear_tool_error(redis_url: str) -> None:
    is_error, text = call("memory_history", {"memory_id": "x"}, tenant=None)
    assert is_error and "NIKA_TENANT_ID is not set" in text


def test_remember_queues_even_with_service_down(redis_url: str, redis_client: Any) -> None:
    is_error, text = call(
        "memory_remember", {"text": "Deploys happen on Tuesdays.", "project_id": "acme-api"}
    )
    assert not is_error and "queued" in text
    [(_id, fields)] = redis_client.xrange("nika:ingest")
    req = RememberRequest.model_validate_json(fields["req"])
    assert (req.tenant_id, req.text, req.meta.project_id) == (
        TENANT,
        "Deploys happen on Tuesdays.",
        "acme-api",
    )


def test_remember_rejects_a_value_outside_the_enumerations(redis_url: str) -> None:
    is_error, text = call("memory_remember", {"text": "x is y", "domain": "cooking"})
    assert is_error and "allowed values" in text


@pytest.mark.embedder
@pytest.mark.slow
def test_recall_round_trip_and_palace_with_running_service(
    running_service: Any, make_tenant: Any
) -> None:
    make_tenant(TENANT)
    client = running_service.client
    req = RememberRequest(
        tenant_id=TENANT,
        text="The acme staging database runs on db-staging-2.",
        layer=Layer.SEMANTIC,
        meta=NikaMeta(timestamp=datetime.now(UTC), trigger=Trigger.USER, project_id="acme-api"),
    )
    client.wait_ingested(TENANT, client.remember(req), timeout=60)

    async def go() -> tuple[str, str, str]:
        async with open_session() as session:
            hit = await session.call_tool(
                "memory_recall", {"query": "which host runs the staging database?"}
            )
            hit_text = tool_text(hit)
            memory_id = hit_text.split("]")[0].lstrip("[")
            chain = await session.call_tool("memory_history", {"memory_id": memory_id})
            miss = await session.call_tool("memory_recall", {"query": "zebra migration to Mars"})
            assert not (hit.is_error or chain.is_error or miss.is_error)
            return hit_text, tool_text(chain), tool_text(miss)

    hit, history, palace = anyio.run(go)
    assert "db-staging-2" in hit and "(semantic," in hit
    assert "db-staging-2" in history and "current" in history
    assert palace == "no memory for zebra migration to Mars"  # PALACE: exactly, no guess
