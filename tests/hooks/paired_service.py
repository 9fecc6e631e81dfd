"""A memory service stand-in that answers a hook's two requests only when both are in flight.

On the real Redis, with the service's own stream and consumer group (as
:class:`~tests.hooks.hung_service.HungMemoryService`): it keeps every request it took and
answers none until it holds a ``recent`` *and* a ``recall`` at the same time; then it answers
both, as the real service's readers would (``LPUSH`` to the reply list), with one fact each.
A hook that waits for one reply before it sends the other request never gets its first answer.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, MemoryRecord, content_hash
from nika_tui.domain.requests import RecallHit, RecallResult
from nika_tui.services import redis_keys
from tests.hooks.hung_service import HungMemoryService

DIGEST_FACT = "The acme-api deploys to production every Thursday at 10:00."
RECALLED_FACT = "The staging server of acme-api moved to 10.0.9.30 on Monday."


def _record(tenant_id: str, n: int, text: str) -> MemoryRecord:
    now = datetime.now(UTC)
    return MemoryRecord(
        id=f"00000000-0000-4000-8000-00000000000{n}",
        tenant_id=tenant_id,
        text=text,
        meta=NikaMeta(timestamp=now, project_id="acme-api"),
        valid_from=now,
        asserted_at=now,
        content_hash=content_hash(tenant_id, Layer.SEMANTIC, text, "acme-api"),
    )


class PairedMemoryService(HungMemoryService):
    """Answers a held ``recent`` and ``recall`` together; :attr:`ops` lists what it took."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self._held: dict[str, dict[str, str]] = {}
        self.answered: list[str] = []
        """The ops answered, in order."""

    def took(self, own: redis.Redis, requests: list[dict[str, str]]) -> None:
        super().took(own, requests)
        for fields in requests:
            self._held[str(fields.get("op"))] = fields
        if {"recent", "recall"} <= set(self._held):
            for op in ("recent", "recall"):
                self._answer(own, self._held.pop(op))

    def _answer(self, own: redis.Redis, fields: dict[str, str]) -> None:
        body = json.loads(fields["body"])
        tenant = str(body["tenant_id"])
        result: dict[str, Any]
        if fields["op"] == "recent":
            result = {"records": [_record(tenant, 1, DIGEST_FACT).model_dump(mode="json")]}
        else:
            hit = RecallHit(record=_record(tenant, 2, RECALLED_FACT), score=0.9, cosine=0.8)
            result = RecallResult(query=str(body["query"]), tenant_id=tenant, hits=[hit])
            result = result.model_dump(mode="json")
        key = redis_keys.rpc_reply(fields["id"])
        own.lpush(key, json.dumps({"ok": True, "result": result}))
        own.expire(key, 60)
        self.answered.append(fields["op"])
