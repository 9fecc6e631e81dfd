"""One tenant's inbox into its kernel, one message at a time, and the agent's answer back.

For each inbox entry, in order: make sure the kernel ``nika-tenant-{id}`` runs (spawned when
``spawn_kernels`` is on) and is idle, open the *turn* (a Redis hash naming the message, its
gateway and its NIKA_META), type the message into the kernel, then wait on the tenant's
replies stream for the answer of *this* message id, which the agent's Stop hook appends
(:mod:`nika_tui.hooks.bridge_turn`). The answer goes to the outbox and only then is the inbox
entry acknowledged. A kernel that cannot run leaves the entry pending and is retried with
capped doubling delays: the message waits, it is not lost. A kernel that dies mid-answer
gets the message again once it is back (at least once into the agent, at most once out).
A tenant in ``headless_tenants`` is answered by :mod:`nika_tui.bridge.headless` instead, with
the same turn and the same inbox and outbox guarantees.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.bridge import headless
from nika_tui.bridge.delivery import enqueue_reply, ensure_group
from nika_tui.bridge.records import record_error, record_message
from nika_tui.domain.bridge import InboundMessage, bridge_meta, kernel_line, retry_delay
from nika_tui.domain.kernel_state import KernelState
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.engine.kernels.results import session_name
from nika_tui.errors import KernelNotReady, NikaError
from nika_tui.services import bridge_keys as keys
from nika_tui.services.config_store import load_tenant

log = logging.getLogger("nika.bridge")
IDLE_WAIT_S = 30.0
NO_ANSWER = (
    "Your message reached the agent, but it gave no answer within {seconds:g} s. "
    "It may still be working; ask again later."
)


class TenantWorker:
    """Consumes one tenant's inbox; :meth:`run` in a thread, stop with :attr:`stop`.

    Its roots are its kernel manager's (``kernels.settings``); ``child_env`` is the
    environment a headless run starts from, as the kernels' own.
    """

    def __init__(
        self,
        tenant_id: str,
        client: redis.Redis,
        kernels: KernelManager,
        child_env: Mapping[str, str],
        *,
        spawn: bool,
        reply_timeout_s: float,
        headless: bool = False,
        on_reply: Callable[[], None] = lambda: None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.tenant_id = tenant_id
        self.client = client
        self.kernels = kernels
        self.child_env = child_env
        self.roots = kernels.settings.roots
        """Where the tenant's config and bus are: the settings its kernels run with."""
        self.spawn = spawn
        self.headless = headless
        self.reply_timeout_s = reply_timeout_s
        self.on_reply = on_reply
        self.clock = clock or (lambda: datetime.now(UTC))
        self.stop = threading.Event()
        self.attempts = 0

    def run(self) -> None:
        """Loop until stopped; Redis outages and bugs are logged and waited out, not fatal."""
        while not self.stop.is_set():
            try:
                self._loop()
            except (redis.RedisError, OSError) as exc:
                log.warning("tenant %s: Redis unavailable (%s); retrying", self.tenant_id, exc)
                self.stop.wait(2.0)
            except Exception:
                log.exception("tenant %s: delivery failed; retrying", self.tenant_id)
                self.stop.wait(5.0)

    def _loop(self) -> None:
        """Pending entries first (left by a crash or a down kernel), then new ones."""
        stream = keys.inbox(self.tenant_id)
        ensure_group(self.client, stream)
        while not self.stop.is_set():
            rows: Any = self.client.xreadgroup(keys.GROUP, "bridge", {stream: "0"}, count=1)
            entries = rows[0][1] if rows else []
            if not entries:
                rows = self.client.xreadgroup(
                    keys.GROUP, "bridge", {stream: ">"}, count=1, block=500
                )
                entries = rows[0][1] if rows else []
            for entry_id, fields in entries:
                self._one(stream, str(entry_id), fields)

    def _one(self, stream: str, entry_id: str, fields: Mapping[str, Any]) -> None:
        try:
            message = InboundMessage.from_fields(json.loads(str(fields["msg"])))
        except (KeyError, ValueError, TypeError) as exc:
            # Not ours to read (written by hand?): kept in the dead stream, out of the way.
            self.client.xadd(keys.DEAD, {"inbox": json.dumps(dict(fields)), "error": str(exc)})
            self.client.xack(stream, keys.GROUP, entry_id)
            self.client.xdel(stream, entry_id)
            return
        try:
            answer = self.deliver(message)
        except NikaError as exc:
            self.attempts += 1
            delay = retry_delay(self.attempts, base_s=0.5, cap_s=30.0)
            record_error(self.client, self.roots, self.tenant_id, message.gateway.value,
                         f"message kept, retry in {delay:g}s: {exc.message}", self.clock(),
                         message_id=message.message_id)  # fmt: skip
            self.stop.wait(delay)
            return
        self.attempts = 0
        enqueue_reply(self.client, self.tenant_id, "reply", message, answer)
        self.client.xack(stream, keys.GROUP, entry_id)
        self.client.xdel(stream, entry_id)
        self.on_reply()

    # --- one turn -----------------------------------------------------------------------------
    def _ready(self) -> str:
        """Make sure the kernel runs and is idle; its CLI name."""
        if not self.kernels.is_running(self.tenant_id):
            if not self.spawn:
                raise KernelNotReady(
                    f"kernel {self.tenant_id} is not running",
                    f"start it with `nika kernel spawn {self.tenant_id}`",
                )
            self.kernels.spawn(self.tenant_id, wait=True)
        deadline = time.monotonic() + IDLE_WAIT_S
        while time.monotonic() < deadline and not self.stop.is_set():
            status = self.kernels.poll(self.tenant_id)
            if not self.kernels.is_running(self.tenant_id):
                raise KernelNotReady(f"kernel {self.tenant_id} exited while starting")
            if status is not None and status.state is KernelState.IDLE:
                break
            self.stop.wait(0.05)
        return load_tenant(self.tenant_id, self.roots).agent_cli.value

    def deliver(self, message: InboundMessage) -> str:
        """Type the message into the kernel and return the agent's answer.

        Raises:
            KernelNotReady: the kernel is down (and may not or cannot be spawned) or died
                before answering.
            NikaError: spawning failed (KernelError, ConfigError, TenantNotFound).
        """
        cli = "claude-code" if self.headless else self._ready()
        now = self.clock()
        line = kernel_line(message.text)
        meta = bridge_meta(message, self.tenant_id, cli, session_name(self.tenant_id), now)
        replies = keys.replies(self.tenant_id)
        last = self.client.xrevrange(replies, count=1)
        cursor = str(last[0][0]) if last else "0-0"
        turn = {
            "message_id": message.message_id,
            "gateway": message.gateway.value,
            "conversation": message.conversation,
            "sender": message.sender,
            "line": line,
            "meta": meta.model_dump_json(),
            "opened_at": now.isoformat(),
        }
        pipe = self.client.pipeline()
        pipe.delete(keys.turn(self.tenant_id))
        pipe.hset(keys.turn(self.tenant_id), mapping=turn)  # type: ignore[arg-type]
        pipe.execute()
        record_message(self.client, self.roots, self.tenant_id, "in", message, message.text,
                       "delivered", now)  # fmt: skip
        if self.headless:
            try:
                return headless.answer(self.client, self.roots, self.child_env, self.tenant_id,
                                       message, line, self.reply_timeout_s)  # fmt: skip
            finally:
                self.client.delete(keys.turn(self.tenant_id))
        self.kernels.send_text(self.tenant_id, line)
        return self._await_answer(message, replies, cursor)

    def _await_answer(self, message: InboundMessage, replies: str, cursor: str) -> str:
        deadline = time.monotonic() + self.reply_timeout_s
        while not self.stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                self.client.delete(keys.turn(self.tenant_id))
                return NO_ANSWER.format(seconds=self.reply_timeout_s)
            rows: Any = self.client.xread(
                {replies: cursor}, count=10, block=int(min(left, 1) * 1000)
            )
            for entry_id, fields in rows[0][1] if rows else []:
                cursor = str(entry_id)
                if fields.get("message_id") == message.message_id:
                    return str(fields.get("text") or "")
            if not self.kernels.is_running(self.tenant_id):
                self.client.delete(keys.turn(self.tenant_id))
                raise KernelNotReady(f"kernel {self.tenant_id} stopped before answering")
        raise KernelNotReady("the bridge is stopping")
