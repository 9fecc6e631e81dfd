"""The RPC side of the service loop: the writes it answers (reads are the readers').

With readers (:mod:`.reads`), they take the RPC stream and pass the writes on to the loop;
without, the loop reads the RPC stream itself. A write is answered after it was flushed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain.protocol import READ_ONLY_OPS, SYNC_AFTER_OPS, Op
from nika_tui.engine.context import EngineContext
from nika_tui.engine.server.pipeline import GROUP
from nika_tui.engine.server.reads import ReadPool
from nika_tui.engine.server.reset_hold import IN_FLIGHT
from nika_tui.engine.server.rpc import OpHandler, acknowledge, dispatch, rpc_tenant
from nika_tui.engine.tenant_configs import TenantConfigSync
from nika_tui.engine.worker import Worker
from nika_tui.services import redis_keys

if TYPE_CHECKING:
    from nika_tui.automemory.runner import AutoMemoryScheduler


class RpcServing:
    """The loop's RPC handling (``MemoryService`` mixes it in)."""

    ctx: EngineContext
    r: redis.Redis
    worker: Worker | None
    consumer: str
    ops: dict[str, OpHandler]
    reads: ReadPool | None
    automemory: AutoMemoryScheduler
    configs: TenantConfigSync
    _has_deferred: bool

    _reset_entry: str | None = None
    """The ``compress.reset`` RPC entry being served (acknowledged when the reset ends)."""

    if TYPE_CHECKING:  # the pipeline's and ResetHold's; for the type checker only

        def _flush(self) -> None: ...

        def _held_reply(
            self, entry_id: str, request_id: str, fields: Mapping[str, str]
        ) -> dict[str, Any] | None: ...

    def _drain_pending_rpc(self) -> None:
        reply: Any = self.r.xreadgroup(
            GROUP, self.consumer, {redis_keys.RPC_STREAM: "0"}, count=1000
        )
        for entry_id, fields in reply[0][1] if reply else []:
            if entry_id != self._reset_entry:  # answered when its reset ends
                self._handle_rpc(entry_id, fields or {})

    def _serve_waiting_rpc(self) -> None:
        """Answer RPCs that arrived during a long ingest batch (with readers: the writes they
        passed on; reads never wait here)."""
        if self.reads is not None:
            entries = self.reads.take_writes()
        else:
            reply: Any = self.r.xreadgroup(GROUP, self.consumer, {redis_keys.RPC_STREAM: ">"})
            entries = reply[0][1] if reply else []
        for entry_id, fields in entries:
            self._handle_rpc(entry_id, fields)

    def _handle_rpc(self, entry_id: str, fields: Mapping[str, str]) -> None:
        tenant = rpc_tenant(fields)
        if self.worker is not None:
            ours, waiting = self.worker.keep(redis_keys.RPC_STREAM, GROUP, [(entry_id, tenant)])
            self._has_deferred |= waiting
            if entry_id not in ours:
                return  # handed to the tenant's holder, or left for our lapsing lease
        request_id = fields.get("id", "")
        try:
            deadline = float(fields.get("deadline", "0"))
        except ValueError:
            deadline = 0.0
        reply: dict[str, Any] | None = None
        live = bool(request_id) and deadline >= time.time()
        if live and tenant is not None and self.configs.keeps_rpc(entry_id, tenant, self.consumer):
            self._has_deferred = True  # retried when its config comes (decision 511)
            return
        if live:
            op = fields.get("op", "")
            reply = self._held_reply(entry_id, request_id, fields)
            if reply is IN_FLIGHT:
                return  # acknowledged and answered when the reset ends
            reply = reply or self._dispatch(op, fields.get("body", "{}"))
            if op not in READ_ONLY_OPS:
                self._flush()
        acknowledge(self.r, entry_id, request_id, reply)

    def _dispatch(self, op: str, raw_body: str) -> dict[str, Any]:
        holds = self.worker.holds if self.worker is not None else None
        reply = dispatch(self.ctx, self.ops, op, raw_body, holds)
        if op == Op.REM_RUN and reply["ok"]:
            self.automemory.touch(reply["result"].get("tenants", {}) or [])
        elif op in SYNC_AFTER_OPS and reply["ok"] and (tenant := rpc_tenant({"body": raw_body})):
            self.automemory.touch([tenant])
        return reply
