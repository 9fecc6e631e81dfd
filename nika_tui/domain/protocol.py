"""The memory service's RPC protocol: operation names and the wire shape of a request/reply.

Shared by the client (:mod:`nika_tui.services.memory_client`, the CLI, the dashboard read side)
and the server (:mod:`nika_tui.engine.server.rpc`, whose table maps each :class:`Op` to its
handler), so an op name is written once. The body and result of each op are the request and
reply models of :mod:`nika_tui.domain.protocol_requests` and
:mod:`~nika_tui.domain.protocol_replies` (codec in :mod:`~nika_tui.domain.protocol_codec`), so a
field name is written once too.

Wire shape (Redis stream ``RPC_STREAM``): a request is ``{id, op, body, deadline}`` with ``body``
a JSON object; the reply, pushed on ``rpc_reply(id)``, is ``{"ok": true, "result": {...}}`` or
``{"ok": false, "error", "hint", "kind", "fields"}`` (``kind`` names the
:class:`~nika_tui.errors.NikaError` subclass, ``fields`` its plain extra attributes).
"""

from __future__ import annotations

from enum import StrEnum


class Op(StrEnum):
    """Every operation the memory service answers."""

    PING = "ping"
    RECALL = "recall"
    HISTORY = "history"
    TIMELINE = "timeline"
    STATS = "stats"
    PROJECTS = "projects"
    RECENT = "recent"
    REVIEW_LIST = "review.list"
    REVIEW_RESOLVE = "review.resolve"
    MEMORY_LIST = "memory.list"
    MEMORY_RETIRE = "memory.retire"
    MEMORY_RESTORE = "memory.restore"
    MEMORY_SEND_REVIEW = "memory.review"
    AGENT_RETIRE = "agent.retire"
    AGENT_REVIEW_RESOLVE = "agent.review.resolve"
    AUDIT = "audit"
    AUDIT_HISTORY = "audit.history"
    DEBT_APPLY = "debt.apply"
    PURGE_PLAN = "purge.plan"
    PURGE_APPLY = "purge.apply"
    PURGE_RESTORE = "purge.restore"
    REM_RUN = "rem.run"
    COMPRESS = "compress"
    COMPRESS_RESET = "compress.reset"
    SNAPSHOT_EXPORT = "snapshot.export"
    SNAPSHOT_IMPORT = "snapshot.import"
    AUTOMEMORY_SYNC = "automemory.sync"
    TUNE_RECALL = "tune.recall"
    TUNE_ADOPT = "tune.adopt"


READ_ONLY_OPS: frozenset[Op] = frozenset(
    {
        Op.RECALL,
        Op.HISTORY,
        Op.TIMELINE,
        Op.PROJECTS,
        Op.RECENT,
        Op.REVIEW_LIST,
        Op.STATS,
        Op.PING,
        Op.MEMORY_LIST,
    }
)
"""Ops that write nothing: the service's readers answer them beside the writer loop, with no
store flush. Any other op goes through the loop, which flushes the store before replying (an
op missing here is slow, not wrong: SessionStart's ``recent`` waited ~190 ms for a flush)."""


SYNC_AFTER_OPS: frozenset[Op] = frozenset(
    {
        Op.MEMORY_RETIRE,
        Op.MEMORY_RESTORE,
        Op.AGENT_RETIRE,
        Op.REVIEW_RESOLVE,
        Op.AGENT_REVIEW_RESOLVE,
        Op.DEBT_APPLY,
        Op.PURGE_APPLY,
        Op.PURGE_RESTORE,
        Op.COMPRESS_RESET,
        Op.SNAPSHOT_IMPORT,
    }
)
"""Ops that can change which of a tenant's memories are current without an ingest: the
service syncs the agents' native memories after them (as after an ingest batch or a REM pass),
so a retired fact leaves ``MEMORY.md`` and the instruction files."""
