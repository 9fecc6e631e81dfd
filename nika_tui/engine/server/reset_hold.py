"""The loop's side of a tenant's fresh start: hold the tenant, start, answer, release.

The reset itself runs on a thread (:mod:`.resets`, which tells the whole story); this mixin is
what the loop (``server/loop.py``) does around it: the ``compress.reset`` RPC and the debt
audit's autonomous reset start it, the tenant's write RPCs are answered "busy" while it runs, and
when it ends the RPC is answered and acknowledged and the tenant's pending entries replayed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.protocol import READ_ONLY_OPS, Op
from nika_tui.domain.protocol_codec import Message
from nika_tui.engine.context import EngineContext
from nika_tui.engine.server.resets import Done, TenantResets
from nika_tui.engine.server.rpc import dispatch, error_body, rpc_tenant
from nika_tui.engine.worker import Worker
from nika_tui.errors import NikaError
from nika_tui.services import redis_keys

if TYPE_CHECKING:
    from nika_tui.automemory.runner import AutoMemoryScheduler
    from nika_tui.engine.server.pipeline import _Parsed

IN_FLIGHT: dict[str, Any] = {"in_flight": True}
""":meth:`ResetHold._reset_reply`'s answer for a reset started: its reply comes when it ends."""


class ResetHold:
    """The loop's half of a concurrent reset (``MemoryService`` mixes it in)."""

    ctx: EngineContext
    r: redis.Redis
    worker: Worker | None
    resets: TenantResets
    automemory: AutoMemoryScheduler
    _retry_pending: bool
    _reset_entry: str | None

    if TYPE_CHECKING:  # the pipeline's; for the type checker only

        def _commit(self) -> None: ...

    def _touch(self, tenant_id: str) -> None:
        self.automemory.touch([tenant_id])

    def _writes_here(self, tenant_id: str) -> bool:
        """True for a tenant whose state this loop writes now: held here, not being reset
        (the debt tick's audits, REM passes, index builds and tuning skip the others)."""
        owned = self.worker is None or self.worker.owns(tenant_id)
        return owned and not self.resets.holds(tenant_id)

    def _end_resets(self) -> None:
        """On stop: a running reset's switch needs the loop's thread, so serve it to its end."""
        while self.resets.running():
            self.resets.wait(1.0)
            self._poll_resets()

    def _start_reset(self, tenant_id: str, repo: Path | None, done: Done) -> None:
        """Commit what is stored (the tenant's writes included), then hold it and start."""
        self._commit()
        self.resets.start(tenant_id, repo, done)

    def start_autonomous_reset(self, tenant_id: str, done: Done) -> None:
        """The debt audit's reset (``engine/reset_trigger.py``), run as an RPC's is."""

        def finished(outcome: dict[str, Any] | NikaError) -> None:
            done(outcome)
            self._touch(tenant_id)

        self._start_reset(tenant_id, None, finished)

    def _held_reply(self, entry_id: str, request_id: str, fields: Mapping[str, str]) -> Any:
        """The reply of an RPC the running reset decides, or None to dispatch it as usual.

        ``compress.reset`` starts a reset (:data:`IN_FLIGHT`: answered when it ends); a write of
        the held tenant is refused with "busy, retry after the reset"; reads go on.
        """
        op = fields.get("op", "")
        if op == Op.COMPRESS_RESET:
            return self._reset_reply(entry_id, request_id, fields.get("body", "{}"))
        tenant = rpc_tenant(fields)
        if op in READ_ONLY_OPS or tenant is None or not self.resets.holds(tenant):
            return None
        return {"ok": False, **error_body(self.resets.busy(tenant))}

    def _reset_reply(self, entry_id: str, request_id: str, raw_body: str) -> dict[str, Any]:
        started: list[str] = []

        def begin(ctx: EngineContext, request: req.CompressResetRequest) -> Message:
            def finished(outcome: dict[str, Any] | NikaError) -> None:
                self._finish_rpc(entry_id, request_id, outcome)
                self._touch(request.tenant_id)

            self._start_reset(request.tenant_id, Path(request.repo) if request.repo else None,
                              finished)  # fmt: skip
            started.append(request.tenant_id)
            return rep.PingReply(0, "", [])  # not sent: the reply comes when the reset ends

        holds = self.worker.holds if self.worker is not None else None
        reply = dispatch(self.ctx, {Op.COMPRESS_RESET: begin}, Op.COMPRESS_RESET, raw_body, holds)
        if started:
            self._reset_entry = entry_id
            return IN_FLIGHT
        return reply

    def _finish_rpc(
        self, entry_id: str, request_id: str, outcome: dict[str, Any] | NikaError
    ) -> None:
        """Answer the ``compress.reset`` RPC and acknowledge its entry (never before the end)."""
        if isinstance(outcome, NikaError):
            reply: dict[str, Any] = {"ok": False, **error_body(outcome)}
        else:
            reply = {"ok": True, "result": rep.CompressResetReply(outcome).to_body()}
        pipe = self.r.pipeline(transaction=True)
        pipe.xack(redis_keys.RPC_STREAM, redis_keys.RPC_GROUP, entry_id)
        pipe.xdel(redis_keys.RPC_STREAM, entry_id)
        key = redis_keys.rpc_reply(request_id)
        pipe.lpush(key, json.dumps(reply, default=str))
        pipe.expire(key, 60)
        pipe.execute()
        self._reset_entry = None

    def _without_held(
        self, parsed: list[_Parsed], vectors: list[list[float]] | None
    ) -> tuple[list[_Parsed], list[list[float]] | None]:
        """Leave out (pending) the entries of a tenant whose reset began after they were
        admitted: its RPC is served between a batch's admission and its store."""
        keep = [i for i, (_, _, r) in enumerate(parsed) if not self.resets.holds(r.tenant_id)]
        if len(keep) == len(parsed):
            return parsed, vectors
        return [parsed[i] for i in keep], None if vectors is None else [vectors[i] for i in keep]

    def _poll_resets(self) -> None:
        """Run the switch the reset handed over; once it ended, replay the held entries."""
        if self.resets.poll():
            self._retry_pending = True  # the tenant's pending entries, into its new store
