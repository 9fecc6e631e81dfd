"""The RPC side of the memory service: the op table, dispatch, and errors as replies.

The table is built explicitly by :func:`build_rpc_table` (no registration at import): one
line per :class:`~nika_tui.domain.protocol.Op`, so what the service answers is read here.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain.protocol import Op
from nika_tui.domain.protocol_codec import Message
from nika_tui.domain.protocol_requests import REQUESTS
from nika_tui.engine.context import EngineContext
from nika_tui.engine.tenant_scope import check_rpc_tenant
from nika_tui.errors import NikaError, StoreUnavailable, ValidationFailed
from nika_tui.services import redis_keys

log = logging.getLogger("nika.service")

OpHandler = Callable[[EngineContext, Any], Message]
"""An op: ``handler(ctx, request) -> reply``, the models of :mod:`nika_tui.domain.protocol_requests`
and :mod:`~nika_tui.domain.protocol_replies` for its :class:`Op` (the dispatcher parses the body
into the request and sends the reply's body back)."""


def build_rpc_table() -> dict[str, OpHandler]:
    """Every op the service answers, by :class:`Op` name."""
    # Imported here, not at module level: the handlers pull in the whole engine (judges,
    # stores), which the clients reading :func:`error_body` or the op names do not need.
    from nika_tui.automemory.runner import automemory_sync_op
    from nika_tui.engine import agent_ops, browse, memory_ops, purge, snapshot
    from nika_tui.engine.audit.history import audit_history_op
    from nika_tui.engine.compress import compress_op
    from nika_tui.engine.debt.actions import debt_apply_op
    from nika_tui.engine.debt.run import audit_op
    from nika_tui.engine.rem.schedule import rem_run_op
    from nika_tui.engine.reset import compress_reset_op
    from nika_tui.engine.timeline import timeline_op
    from nika_tui.tuning.tuner import tune_adopt_op, tune_recall_op

    table: dict[str, OpHandler] = {
        Op.RECALL: memory_ops.recall_op,
        Op.HISTORY: memory_ops.history_op,
        Op.TIMELINE: timeline_op,
        Op.STATS: memory_ops.stats_op,
        Op.PROJECTS: agent_ops.projects_op,
        Op.RECENT: agent_ops.recent_op,
        Op.REVIEW_LIST: memory_ops.review_list_op,
        Op.REVIEW_RESOLVE: memory_ops.review_resolve_op,
        Op.MEMORY_LIST: browse.list_memories,
        Op.MEMORY_RETIRE: browse.person_retire,
        Op.MEMORY_RESTORE: browse.restore,
        Op.MEMORY_SEND_REVIEW: browse.send_to_review,
        Op.AGENT_RETIRE: agent_ops.agent_retire_op,
        Op.AGENT_REVIEW_RESOLVE: agent_ops.agent_review_resolve_op,
        Op.AUDIT: audit_op,
        Op.AUDIT_HISTORY: audit_history_op,
        Op.DEBT_APPLY: debt_apply_op,
        Op.PURGE_PLAN: purge.purge_plan_op,
        Op.PURGE_APPLY: purge.purge_apply_op,
        Op.PURGE_RESTORE: purge.purge_restore_op,
        Op.REM_RUN: rem_run_op,
        Op.COMPRESS: compress_op,
        Op.COMPRESS_RESET: compress_reset_op,
        Op.SNAPSHOT_EXPORT: snapshot.snapshot_export_op,
        Op.SNAPSHOT_IMPORT: snapshot.snapshot_import_op,
        Op.AUTOMEMORY_SYNC: automemory_sync_op,
        Op.TUNE_RECALL: tune_recall_op,
        Op.TUNE_ADOPT: tune_adopt_op,
    }

    def ping(ctx: EngineContext, _: object) -> rep.PingReply:
        return rep.PingReply(os.getpid(), ctx.embedder.name, sorted(table))

    table[Op.PING] = ping
    return table


def error_body(exc: NikaError) -> dict[str, Any]:
    """The reply of a failed request: the class by name and its plain extra fields (a
    ``BridgeRefused``'s ``status``, a ``ProviderError``'s ``kind``), so the client rebuilds it."""
    fields = {
        name: value
        for name, value in vars(exc).items()
        if name not in ("message", "hint") and isinstance(value, str | int | float | bool)
    }
    return {"error": exc.message, "hint": exc.hint, "kind": type(exc).__name__, "fields": fields}


def body_text(fields: Mapping[str, str], name: str) -> str | None:
    """A non-empty text field of an RPC entry's JSON body (None if absent or unparsable)."""
    try:
        body = json.loads(fields.get("body", "{}"))
    except json.JSONDecodeError:
        return None
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) and value else None


def rpc_tenant(fields: Mapping[str, str]) -> str | None:
    """The tenant an RPC is addressed to (its body's ``tenant_id``), if any."""
    return body_text(fields, "tenant_id")


def dispatch(
    ctx: EngineContext,
    table: Mapping[str, OpHandler],
    op: str,
    raw_body: str,
    holds: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Run ``op`` on its JSON body and return the reply (``ok`` with a result, or an error).

    ``holds``: the worker's lease check (``None``: this service serves every tenant). Every op
    but ``ping`` must name a configured tenant held here (decision 243).
    """
    handler = table.get(op)
    if handler is None:
        return {"ok": False, **error_body(ValidationFailed(
            f"unknown memory-service operation {op!r}",
            "upgrade the caller or the service (`nika down && nika up`)",
        ))}  # fmt: skip
    try:
        body = json.loads(raw_body)
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        check_rpc_tenant(ctx, op, body, holds)
        request = REQUESTS[Op(op)].from_body(body)
        return {"ok": True, "result": handler(ctx, request).to_body()}
    except NikaError as exc:
        return {"ok": False, **error_body(exc)}
    except ValueError as exc:
        return {"ok": False, **error_body(ValidationFailed(f"bad {op} request: {exc}"))}
    except redis.RedisError as exc:
        return {"ok": False, **error_body(StoreUnavailable(f"redis failed: {exc}"))}
    except Exception as exc:
        # RPC edge: one failing op must not stop the single writer; the caller gets the
        # error and the traceback goes to the log.
        log.exception("op %s failed", op)
        return {"ok": False, **error_body(NikaError(f"{op} failed: {exc!r}", "see the log"))}


def acknowledge(
    r: redis.Redis,
    entry_id: str,
    request_id: str,
    reply: dict[str, Any] | None,
    after: Sequence[Callable[[Any], None]] = (),
) -> None:
    """Acknowledge and delete an RPC entry and push its reply (none for an expired request),
    in one transaction: the writer loop and the read pool answer the same way.

    ``after``: writes the reply does not depend on (see ``EngineContext.defer``), queued
    behind the reply in the same round trip; one that fails is logged, never raised (the
    reply is out)."""
    pipe = r.pipeline(transaction=True)
    pipe.xack(redis_keys.RPC_STREAM, redis_keys.RPC_GROUP, entry_id)
    pipe.xdel(redis_keys.RPC_STREAM, entry_id)
    if reply is not None:
        key = redis_keys.rpc_reply(request_id)
        pipe.lpush(key, json.dumps(reply, default=str))
        pipe.expire(key, 60)
    own = len(pipe)
    for writes in after:
        try:
            writes(pipe)
        except Exception:
            # As dispatch's edge: a query log that cannot be built must not cost the reply.
            log.exception("writes after a reply failed")
    results = pipe.execute(raise_on_error=False)
    for result in results[:own]:
        if isinstance(result, Exception):
            raise result
    for result in results[own:]:
        if isinstance(result, Exception):
            log.error("a write after a reply failed: %s", result)
