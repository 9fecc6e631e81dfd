"""One hook run: ``nika hook CLI EVENT`` (and the hook daemon's children) call :func:`run_hook`,
which picks the agent's handler, bounds the run in time and logs one line; it never raises.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator, Mapping
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


def run_hook(
    cli: str,
    event: str,
    raw: bytes | str | None,
    env: Mapping[str, str] | None = None,
    now: datetime | None = None,
    budget_s: float = HOOK_BUDGET_S,
) -> str:
    """Handle one hook event; return what to print on stdout ("" for nothing). Never raises.

    Args:
        cli: ``claude`` or ``codex``.
        event: The event name (``SessionStart``, …; Codex's notify program: ``notify``).
        raw: The payload (stdin, or the notify argument).
        env: The process environment (``NIKA_TENANT_ID`` names the tenant).
        now: The event time (defaults to the clock).
        budget_s: The whole run's time budget.
    """
    environ: Mapping[str, str] = os.environ if env is None else env
    started = time.monotonic()
    entry: dict[str, Any] = {
        "at": (now or datetime.now(UTC)).isoformat(),
        "cli": cli,
        "event": event,
    }
    output = ""
    ctx: HookContext | None = None
    try:
        with time_budget(budget_s):
            output, ctx = _run(cli, event, raw, environ, now, entry)
    except HookTimeout as exc:
        entry["outcome"], entry["detail"], output = "timeout", str(exc), ""
    except Exception as exc:  # noqa: BLE001 — the agent's edge: nothing may escape a hook
        entry["outcome"], output = "error", ""
        entry["detail"] = describe(exc)
    finally:
        if ctx is not None:
            entry["notes"] = ctx.notes
            ctx.close()
        entry["ms"] = round(1000 * (time.monotonic() - started), 1)
        write_log(environ, entry)
    return output


def _run(
    cli: str,
    event: str,
    raw: bytes | str | None,
    env: Mapping[str, str],
    now: datetime | None,
    entry: dict[str, Any],
) -> tuple[str, HookContext | None]:
    handlers = {
        "claude": claude.handle,
        "codex": codex.handle,
        "gemini": gemini.handle,
        "opencode": opencode.handle,
    }
    if cli not in handlers:
        entry["outcome"], entry["detail"] = "skipped", f"unknown cli {cli!r}"
        return "", None
    if isinstance(raw, bytes | str) and len(raw) > MAX_PAYLOAD_BYTES:
        entry["outcome"], entry["detail"] = "skipped", f"payload over {MAX_PAYLOAD_BYTES} bytes"
        return "", None
    payload = parse_payload(raw)
    if payload is None:
        entry["outcome"], entry["detail"] = "skipped", "empty or malformed payload"
        return "", None
    entry["session"] = str(payload.get("session_id") or payload.get("thread-id") or "")[:80]
    if payload.get("agent_id"):
        entry["outcome"], entry["detail"] = "skipped", "subagent event"
        return "", None
    tenant = env.get("NIKA_TENANT_ID", "")
    if not is_valid_tenant_id(tenant):
        entry["outcome"], entry["detail"] = "skipped", "NIKA_TENANT_ID is not set or invalid"
        return "", None
    entry["tenant"] = tenant
    ctx = HookContext(cli, event, payload, env, tenant, now or datetime.now(UTC))
    output = handlers[cli](ctx)
    entry["outcome"] = "spooled" if ctx.spooled else "ok"
    return output, ctx
