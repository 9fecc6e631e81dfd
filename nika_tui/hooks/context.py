"""What every hook handler shares: the run's :class:`HookContext` (payload, tenant, lazily opened
connections), the payload parser, the hook log and the limits of a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import redis
from pydantic import ValidationError

from nika_tui.errors import NikaError
from nika_tui.paths import (
    FILE_MODE,
    Roots,
    data_dir,
    ensure_private_dir,
    roots,
    tmux_socket_name,
)
from nika_tui.services.redis_server import redis_target

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
    deferred: list[Callable[[], Any]] = field(default_factory=list)
    """Work that the answer does not wait for (see :meth:`defer`)."""
    _redis: redis.Redis | None = None

    @property
    def agent_type(self) -> str:
        """``claude-code`` or ``codex`` (the NIKA_META agent_type)."""
        return AGENT_TYPES.get(self.cli, self.cli)

    @cached_property
    def roots(self) -> Roots:
        """Where the tenant's files are, resolved once per run from the event's environment
        (under the hook server, the client's: decision 300)."""
        return roots(self.env)

    @property
    def configured(self) -> bool:
        """True when the tenant has a config: per-tenant files are written only then (a hook
        for an unknown tenant must not create ``data/tenants/<id>/``)."""
        return self.roots.tenant_config_path(self.tenant_id).is_file()

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
        tenants_root = (self.roots.data / "tenants").resolve()
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
                # REDIS_URL of the event's environment, as its roots (decision 300).
                redis_target(self.env.get("REDIS_URL", ""), self.roots, start=False),
                decode_responses=True,
                socket_timeout=REDIS_TIMEOUT_S,
                socket_connect_timeout=REDIS_CONNECT_TIMEOUT_S,
                # No CLIENT SETINFO: its default reads redis-py's package metadata (an email
                # parse) and costs two round trips on every connection, i.e. every hook run.
                driver_info=None,
            )
        return self._redis

    def defer(self, fn: Callable[[], Any]) -> None:
        """Run ``fn`` after the answer has been handed to the agent (still within the run's
        budget, before the next hook of this agent: see :mod:`.dispatch`)."""
        self.deferred.append(fn)

    def run_deferred(self) -> None:
        """Run the deferred work in the order it was deferred (work may defer more)."""
        while self.deferred:
            self.deferred.pop(0)()

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
    """The tmux session the agent runs in: ``NIKA_TMUX_SESSION`` when given, else from ``$TMUX``."""
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
