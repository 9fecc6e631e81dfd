"""One hook run: ``nika hook CLI EVENT`` (and the hook daemon's children) call :func:`run_hook`,
which picks the agent's handler, bounds the run in time and logs one line; it never raises.

The agent waits for a hook (Claude Code sends no prompt before UserPromptSubmit returns), but
only for its answer. So a run answers first and does the rest after (:meth:`HookContext.defer`):
an event whose answer the CLI ignores is deferred whole, an injecting event defers its capture
and bookkeeping. The hook server hands the answer back before the deferred work runs; an
in-process run prints it at the end, as before. One agent's runs stay in order: each holds an
exclusive lock per tenant and CLI from start to end (deferred work included), so a hook never
overtakes the unfinished work of the previous one (a packet committed before it is read, a
kernel state written in event order); a wait longer than :data:`ORDER_WAIT_S` goes on without it.
The run's log line is written before the lock is released (or, for a skipped run, before the
answer), so whoever waits for a run (:func:`wait_settled`, the agent's next hook) finds it logged.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from nika_tui.domain.tenant_id import is_valid_tenant_id
from nika_tui.hooks import claude, codex, gemini, opencode
from nika_tui.hooks.context import (
    HOOK_BUDGET_S,
    MAX_PAYLOAD_BYTES,
    HookContext,
    describe,
    parse_payload,
    write_log,
)
from nika_tui.paths import FILE_MODE, data_dir, ensure_private_dir

ORDER_WAIT_S = 3.0
"""How long a run waits for the previous run of the same agent to finish its deferred work."""
_ORDER_POLL_S = 0.005

HANDLERS: dict[str, Callable[[HookContext], str]] = {
    "claude": claude.handle,
    "codex": codex.handle,
    "gemini": gemini.handle,
    "opencode": opencode.handle,
}
ANSWERS: dict[str, frozenset[str]] = {
    "claude": claude.ANSWERS,
    "codex": codex.ANSWERS,
    "gemini": gemini.ANSWERS,
    "opencode": opencode.ANSWERS,
}
"""Per CLI, the events whose stdout the CLI reads; every other event is deferred whole."""


class HookTimeout(Exception):
    """The run's time budget is spent (raised by the alarm)."""


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`HookTimeout` in the main thread after ``seconds``."""
    if threading.current_thread() is not threading.main_thread() or seconds <= 0:
        yield
        return

    def _expire(_sig: int, _frame: FrameType | None) -> None:
        raise HookTimeout(f"hook budget of {seconds:.1f}s spent")

    previous = signal.signal(signal.SIGALRM, _expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def order_lock_path(env: Mapping[str, str], tenant_id: str, cli: str) -> str:
    """The lock that keeps one agent's hook runs in order (``{data}/run/``)."""
    return str(data_dir(env) / "run" / f"hook-order-{tenant_id}-{cli}.lock")


def _take_order_lock(env: Mapping[str, str], tenant_id: str, cli: str) -> int | None:
    """The held lock's fd, or None when the previous run did not finish within the wait."""
    path = order_lock_path(env, tenant_id, cli)
    ensure_private_dir(data_dir(env) / "run")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    deadline = time.monotonic() + ORDER_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            # A blocking flock could not be bounded without a second alarm; the wait is rare
            # (the previous run's deferred work, a few ms) and short.
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(_ORDER_POLL_S)


def wait_settled(env: Mapping[str, str], tenant_id: str, cli: str, timeout_s: float) -> bool:
    """Wait until no run of this agent holds its order lock (its deferred work is done).

    Returns:
        True when settled, False when ``timeout_s`` passed first.
    """
    path = order_lock_path(env, tenant_id, cli)
    if not os.path.exists(path):
        return True
    fd = os.open(path, os.O_RDONLY)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(_ORDER_POLL_S)
    finally:
        os.close(fd)


def run_hook(
    cli: str,
    event: str,
    raw: bytes | str | None,
    env: Mapping[str, str] | None = None,
    now: datetime | None = None,
    budget_s: float = HOOK_BUDGET_S,
    reply: Callable[[str], None] | None = None,
) -> str:
    """Handle one hook event; return what to print on stdout ("" for nothing). Never raises.

    Args:
        cli: ``claude``, ``codex``, ``gemini`` or ``opencode``.
        event: The event name (``SessionStart``, …; Codex's notify program: ``notify``).
        raw: The payload (stdin, or the notify argument).
        env: The process environment (``NIKA_TENANT_ID`` names the tenant).
        now: The event time (defaults to the clock).
        budget_s: The whole run's time budget.
        reply: Called once with the answer as soon as it is known, before the deferred work
            (the hook server sends it to the waiting client); not called when the run fails
            before answering.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    started = time.monotonic()
    entry: dict[str, Any] = {
        "at": (now or datetime.now(UTC)).isoformat(),
        "cli": cli,
        "event": event,
    }
    output = ""
    answered = False
    ctx: HookContext | None = None
    lock: int | None = None
    try:
        with time_budget(budget_s):
            ctx, lock = _prepare(cli, event, raw, environ, now, entry)
            if ctx is not None:
                output = _answer(ctx)
            answered = True
            entry["answer_ms"] = round(1000 * (time.monotonic() - started), 1)
            if ctx is not None:
                if reply is not None:
                    reply(output)
                ctx.run_deferred()
                entry["outcome"] = "spooled" if ctx.spooled else "ok"
    except HookTimeout as exc:
        entry["outcome"], entry["detail"] = "timeout", str(exc)
    except Exception as exc:  # noqa: BLE001 — the agent's edge: nothing may escape a hook
        entry["outcome"] = "error"
        entry["detail"] = describe(exc)
    finally:
        if ctx is not None:
            entry["notes"] = ctx.notes
            ctx.close()
        entry["ms"] = round(1000 * (time.monotonic() - started), 1)
        write_log(environ, entry)
        # Released once the line is written: a run is over, for the next run of this agent
        # and for `wait_settled`, when its log says so.
        if lock is not None:
            os.close(lock)
    if answered and ctx is None and reply is not None:
        # A skipped run has no deferred work and takes no order lock: answering after its log
        # line (a fraction of a ms) means the client's exit marks the end of the whole run.
        reply(output)
    # A failure after the answer (in deferred work) is logged; the answer stands.
    return output if answered else ""


def _prepare(
    cli: str,
    event: str,
    raw: bytes | str | None,
    env: Mapping[str, str],
    now: datetime | None,
    entry: dict[str, Any],
) -> tuple[HookContext | None, int | None]:
    """The run's context and its held order lock; (None, None) when the run is skipped."""
    if cli not in HANDLERS:
        entry["outcome"], entry["detail"] = "skipped", f"unknown cli {cli!r}"
        return None, None
    if isinstance(raw, bytes | str) and len(raw) > MAX_PAYLOAD_BYTES:
        entry["outcome"], entry["detail"] = "skipped", f"payload over {MAX_PAYLOAD_BYTES} bytes"
        return None, None
    payload = parse_payload(raw)
    if payload is None:
        entry["outcome"], entry["detail"] = "skipped", "empty or malformed payload"
        return None, None
    entry["session"] = str(payload.get("session_id") or payload.get("thread-id") or "")[:80]
    if payload.get("agent_id"):
        entry["outcome"], entry["detail"] = "skipped", "subagent event"
        return None, None
    tenant = env.get("NIKA_TENANT_ID", "")
    if not is_valid_tenant_id(tenant):
        entry["outcome"], entry["detail"] = "skipped", "NIKA_TENANT_ID is not set or invalid"
        return None, None
    entry["tenant"] = tenant
    ctx = HookContext(cli, event, payload, env, tenant, now or datetime.now(UTC))
    lock: int | None = None
    try:
        lock = _take_order_lock(env, tenant, cli)
        if lock is None:
            ctx.notes.append("order lock not taken: ran beside the previous run")
    except OSError as exc:
        ctx.notes.append(f"order lock: {describe(exc)}")
    return ctx, lock


def _answer(ctx: HookContext) -> str:
    """The handler's answer; an event whose answer the CLI ignores is deferred whole."""
    handler = HANDLERS[ctx.cli]
    if ctx.event in ANSWERS[ctx.cli]:
        return handler(ctx)
    ctx.defer(lambda: handler(ctx))
    return ""
