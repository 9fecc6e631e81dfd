"""Relevance labels from the hits agents used (issue 20), written by the hooks.

When a hook injects recall hits for a prompt it notes them (:func:`note_shown`: the query, its
project, each hit's id and text) in a Redis list per session. When the agent's turn ends the
hook passes the reply to :func:`label_used`: every noted hit the reply used
(:func:`nika_tui.domain.used_hits.used`) becomes a ``useful`` mark of that query in the
tenant's relevance set (``source: "used"``), which `nika tune recall` reads with the marks
people made. A noted prompt is looked at for the next :data:`TURNS_LOOKED` replies, then
dropped; hits never used leave no label. No torch, no qdrant: hooks import this.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import redis

from nika_tui.domain.used_hits import used
from nika_tui.paths import Roots
from nika_tui.services import redis_keys
from nika_tui.services.relevance_log import append_jsonl, tuning_dir

SHOWN_TTL_S = 6 * 3600
TURNS_LOOKED = 2
"""Replies checked per noted prompt (the answer, and one follow-up turn)."""
MAX_NOTED = 20
MAX_TEXT = 600


def shown_key(tenant_id: str, session_id: str) -> str:
    """The session's noted prompts with the hits shown for them."""
    return redis_keys.tenant_key(tenant_id, f"recall_shown:{session_id}")


def note_shown(
    r: redis.Redis,
    tenant_id: str,
    session_id: str,
    query: str,
    project_id: str,
    hits: Sequence[tuple[str, str]],
) -> None:
    """Remember the ``(id, text)`` hits injected for ``query`` in this session."""
    if not session_id or not hits:
        return
    entry = {"query": query, "project_id": project_id, "turns": 0,
             "hits": [{"id": i, "text": t[:MAX_TEXT]} for i, t in hits]}  # fmt: skip
    key = shown_key(tenant_id, session_id)
    pipe = r.pipeline(transaction=True)
    pipe.rpush(key, json.dumps(entry))
    pipe.ltrim(key, -MAX_NOTED, -1)
    pipe.expire(key, SHOWN_TTL_S)
    pipe.execute()


def label_used(
    r: redis.Redis,
    tenant_id: str,
    session_id: str,
    reply: str,
    at: str,
    where: Roots | None = None,
) -> list[dict[str, Any]]:
    """Mark the noted hits ``reply`` used as useful; return the marks written."""
    if not session_id or not reply.strip():
        return []
    key = shown_key(tenant_id, session_id)
    pipe = r.pipeline(transaction=True)
    pipe.lrange(key, 0, -1)
    pipe.delete(key)
    raw_entries, _ = pipe.execute()
    marks: list[dict[str, Any]] = []
    keep: list[str] = []
    for raw in raw_entries:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        useful = [h["id"] for h in entry.get("hits", []) if used(h["text"], entry["query"], reply)]
        if useful:
            mark = {"at": at, "query": entry["query"], "project_id": entry.get("project_id", ""),
                    "useful": useful, "not_useful": [], "expect_none": False,
                    "source": "used"}  # fmt: skip
            append_jsonl(tuning_dir(tenant_id, where) / "relevance.jsonl", mark)
            marks.append(mark)
        left = [h for h in entry.get("hits", []) if h["id"] not in useful]
        entry["turns"] = int(entry.get("turns", 0)) + 1
        if left and entry["turns"] < TURNS_LOOKED:
            keep.append(json.dumps({**entry, "hits": left}))
    if keep:
        pipe = r.pipeline(transaction=True)
        pipe.lpush(key, *reversed(keep))
        pipe.expire(key, SHOWN_TTL_S)
        pipe.execute()
    return marks
