"""Each kernel window's open agent session, so that a session that ends without SessionEnd
(the agent crashed, was killed, or stopped on a quota) still gets its handoff packet.

The hooks run inside a kernel record their session here on every event and remove it at
SessionEnd (which publishes the packet itself); the kernel watcher :func:`take`s what is left
for a window it saw die and builds the packet from the transcript (decision 442).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace

import redis

from nika_tui.services import redis_keys


@dataclass(frozen=True)
class OpenSession:
    """An agent session a kernel window was running, as its last hook saw it."""

    window: str
    """The kernel window (agent CLI kind: ``claude-code``, ``codex``, ``gemini-cli``, …)."""
    session_id: str
    cli: str
    """The ``nika hook`` CLI name (``claude``, ``codex``, ``gemini``, ``opencode``)."""
    transcript_path: str
    cwd: str
    last_prompt: str = ""
    """The session's last prompt as its hook saw it (masked): the packet's last ask when the
    transcript lost its tail (a CLI killed before it flushed its writes)."""


PROMPT_FIELD = "prompt:"
"""Field prefix of a window's last prompt (its own field: other events do not rewrite it)."""


def record_open(client: redis.Redis, tenant_id: str, session: OpenSession) -> None:
    """The window's agent runs ``session`` (an earlier session of the window is replaced)."""
    body = {k: v for k, v in asdict(session).items() if k not in ("window", "last_prompt")}
    key = redis_keys.agent_sessions(tenant_id)
    pipe = client.pipeline(transaction=False)
    pipe.hset(key, session.window, json.dumps(body))
    if session.last_prompt:
        prompt = {"session_id": session.session_id, "prompt": session.last_prompt}
        pipe.hset(key, PROMPT_FIELD + session.window, json.dumps(prompt))
    pipe.execute()


def record_closed(client: redis.Redis, tenant_id: str, window: str, session_id: str) -> None:
    """The session ended cleanly (SessionEnd): nothing left to hand off for it."""
    key = redis_keys.agent_sessions(tenant_id)
    raw = client.hget(key, window)
    parsed = _parse(window, str(raw)) if raw else None
    if parsed is not None and parsed.session_id == session_id:
        client.hdel(key, window, PROMPT_FIELD + window)


def take(
    client: redis.Redis, tenant_id: str, windows: Iterable[str] | None = None
) -> list[OpenSession]:
    """Remove and return the open sessions of ``windows`` (all when None). Each one is
    returned to one caller only (``HDEL`` decides), so a packet is never built twice."""
    key = redis_keys.agent_sessions(tenant_id)
    fields = {str(k): str(v) for k, v in client.hgetall(key).items()}
    sessions = {w: v for w, v in fields.items() if not w.startswith(PROMPT_FIELD)}
    wanted = sessions if windows is None else {w: sessions[w] for w in windows if w in sessions}
    out: list[OpenSession] = []
    for window, raw in wanted.items():
        if not client.hdel(key, window):
            continue  # another watcher took it
        client.hdel(key, PROMPT_FIELD + window)
        session = _parse(window, raw)
        if session is not None:
            out.append(_with_prompt(session, fields.get(PROMPT_FIELD + window)))
    return out


def _with_prompt(session: OpenSession, raw: str | None) -> OpenSession:
    try:
        data = json.loads(raw or "{}")
    except ValueError:
        return session
    if not isinstance(data, dict) or data.get("session_id") != session.session_id:
        return session  # an earlier session's prompt
    return replace(session, last_prompt=str(data.get("prompt") or ""))


def _parse(window: str, raw: str) -> OpenSession | None:
    try:
        data = json.loads(raw)
        return OpenSession(
            window=window,
            session_id=str(data["session_id"]),
            cli=str(data["cli"]),
            transcript_path=str(data.get("transcript_path") or ""),
            cwd=str(data.get("cwd") or ""),
        )
    except (ValueError, KeyError, TypeError):
        return None  # a malformed entry hands nothing off
