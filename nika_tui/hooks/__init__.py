"""Agent hooks: short processes Claude Code and Codex run at lifecycle events.

``nika hook claude EVENT`` / ``nika hook codex EVENT`` read one JSON payload on stdin (Codex's
``notify`` program gets it as its last argument instead) and:

- SessionStart → recall for the tenant/project (+ the handoff packet after a compaction),
  printed as ``hookSpecificOutput.additionalContext``, bounded and labelled as data;
- UserPromptSubmit / Stop → what is worth keeping goes onto the ingest stream with a full
  NIKA_META envelope;
- PreCompact → the handoff packet, ingested in the episodic layer;
- every event → fill reading, kernel state, a ``hook.fired`` record.

A hook must never block or break the agent: :func:`run_hook` never raises, answers within a
time budget (Redis sockets time out after 1 s, an alarm bounds the whole run), and on any
failure logs one line to ``{data}/logs/hooks.log`` and prints nothing. Subagent events
(``agent_id`` in the payload) are skipped. This package imports no torch, textual or qdrant.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

import redis
from pydantic import ValidationError

from nika_tui.domain.tenant_id import is_valid_tenant_id
from nika_tui.errors import NikaError
from nika_tui.paths import (
    FILE_MODE,
    data_dir,
    ensure_private_dir,
    tenant_config_path,
    tmux_socket_name,
)
from nika_tui.services.redis_server import redis_url

MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""Larger payloads are refused unread beyond this (a transcript is read from its file)."""
HOOK_BUDGET_S = 8.0
"""Whole-run budget; the installed hook timeout is larger (see agent_settings)."""
REDIS_CONNECT_TIMEOUT_S = 1.0
REDIS_TIMEOUT_S = 1.5
"""Socket read timeout: above the memory client's 1 s BLPOP poll, so a poll never trips it."""
RPC_TIMEOUT_S = 2.5
MAX_CONTEXT_BYTES = 8 * 1024
LOG_MAX_BYTES = 5 * 1024 * 1024
PREVIEW_CHARS = 40

AGENT_TYPES = {
    "claude": "claude-code",
    "codex": "codex",
    "gemini": "gemini-cli",
    "opencode": "opencode",
}

# Failures a step may meet and survive (the next step still runs); anything else ends the run.
STEP_ERRORS: tuple[type[BaseException], ...] = (
    NikaError,
    redis.RedisError,
    OSError,
    ValueError,
    KeyError,
    TypeError,
)


class HookTimeout(Exception):
    """The run's time budget is spent (raised by the alarm)."""


@dataclass
class HookContext:
    """One hook run: the payload, who it is for, and lazily opened connections."""

    cli: str
    event: str
    payload: dict[str, Any]
    env: Mapping[str, str]
    tenant_id: str
    now: datetime
    notes: list[str] = field(default_factory=list)
    spooled: int = 0
    """Writes that went to the spool because Redis was down (the log then says "spooled")."""
    _redis: redis.Redis | None = None

    @property
    def agent_type(self) -> str:
        """``claude-code`` or ``codex`` (the NIKA_META agent_type)."""
        return AGENT_TYPES.get(self.cli, self.cli)

    @property
    def configured(self) -> bool:
        """True when the tenant has a config: per-tenant files are written only then (a hook
        for an unknown tenant must not create ``data/tenants/<id>/``)."""
        return tenant_config_path(self.tenant_id, self.env).is_file()

    @property
    def session_id(self) -> str:
        """The agent's session id (Codex notify: the thread id)."""
        return str(self.payload.get("session_id") or self.payload.get("thread-id") or "")

    @property
    def cwd(self) -> str:
        """The agent's working directory."""
        return str(self.payload.get("cwd") or "")

    @property
    def transcript_path(self) -> Path | None:
        """The transcript file, when the payload names one that exists."""
        raw = self.payload.get("transcript_path")
        if not isinstance(raw, str) or not raw:
            return None
        path = Path(raw)
        if not path.is_file():
            return None
        # Another tenant's transcript (its agent home lies under its data dir) is never read.
        tenants_root = (data_dir(self.env) / "tenants").resolve()
        resolved = path.resolve()
        if tenants_root in resolved.parents:
            owner = resolved.relative_to(tenants_root).parts[0]
            if owner != self.tenant_id:
                self.notes.append(f"transcript_path refused: it belongs to tenant {owner}")
                return None
        return path

    @property
    def project_id(self) -> str:
        """The project, from the working directory (its git root's name)."""
        return project_from_cwd(self.cwd)

    @property
    def tmux(self) -> str:
        """The kernel's tmux session name."""
        return tmux_session(self.env, self.tenant_id)

    @property
    def redis(self) -> redis.Redis:
        """A client with short socket timeouts (never starts a server from a hook)."""
        if self._redis is None:
            self._redis = redis.Redis.from_url(
                redis_url(self.env, start=False),
                decode_responses=True,
                socket_timeout=REDIS_TIMEOUT_S,
                socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S,
            )
        return self._redis

    def step(self, name: str, fn: Callable[[], Any]) -> Any:
        """Run one independent step; a known failure is noted and the run goes on."""
        try:
            return fn()
        except STEP_ERRORS as exc:
            self.notes.append(f"{name}: {describe(exc)}")
            return None

    def close(self) -> None:
        """Release the Redis connection."""
        if self._redis is not None:
            with contextlib.suppress(redis.RedisError, OSError):
                self._redis.close()


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def project_from_cwd(cwd: str, max_depth: int = 12) -> str:
    """The project id for a working directory: the name of its git root, else its own name."""
    if not cwd:
        return ""
    path = Path(cwd)
    probe = path
    for _ in range(max_depth):
        if (probe / ".git").exists():
            path = probe
            break
        if probe.parent == probe:
            break
        probe = probe.parent
    return _SAFE.sub("-", path.name).strip("-")[:200]


def tmux_session(env: Mapping[str, str], tenant_id: str) -> str:
    """The tmux session the agent runs in: set by the kernel, or inferred from ``$TMUX``."""
    if env.get("NIKA_TMUX_SESSION"):
        return env["NIKA_TMUX_SESSION"][:200]
    tmux = env.get("TMUX", "")
    if not tmux:
        return ""
    socket = Path(tmux.split(",", 1)[0]).name
    if socket == tmux_socket_name(env):
        return f"nika-tenant-{tenant_id}"
    return socket[:200]


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """A log-safe one-line description (a validation error names fields, never their values)."""
    if isinstance(exc, ValidationError):
        fields = sorted({".".join(str(p) for p in e["loc"]) or "(root)" for e in exc.errors()})
        return f"ValidationError: invalid {', '.join(fields)}"
    return f"{type(exc).__name__}: {_one_line(str(exc))}"


def preview(text: str) -> str:
    """A short preview of user text for the log (never the whole prompt)."""
    return _one_line(text, PREVIEW_CHARS)


def parse_payload(raw: bytes | str | None) -> dict[str, Any] | None:
    """The JSON object of a payload, or None when empty, malformed or not an object."""
    if raw is None:
        return None
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def log_path(env: Mapping[str, str]) -> Path:
    """``{data}/logs/hooks.log``."""
    return data_dir(env) / "logs" / "hooks.log"


def write_log(env: Mapping[str, str], entry: Mapping[str, Any]) -> None:
    """Append one JSON line to the hooks log (0600, rotated once past 5 MB); never raises."""
    try:
        path = log_path(env)
        ensure_private_dir(path.parent)
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_size > LOG_MAX_BYTES:
                os.replace(path, path.with_suffix(".log.1"))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
    except (OSError, ValueError, TypeError):
        pass  # the log is best effort: a hook never fails because of it


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
    from nika_tui.hooks import claude, codex, gemini, opencode

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
