"""The demo's replay agent: plays a scripted Claude Code session for real.

``python -m nika_tui.demo.replay_agent [--speed F] [--exit-when-done]``

It writes a Claude Code transcript (``$CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl``, the
real line format) turn by turn, and at each lifecycle event runs the hooks configured in
``$CLAUDE_CONFIG_DIR/settings.json`` exactly as Claude Code does (``/bin/sh -c COMMAND``, JSON
payload on stdin, the hook's timeout): SessionStart, UserPromptSubmit, Stop, PreCompact when
the context passes 61%, SessionStart(source=compact) after it, SessionEnd on exit. Everything
it prints is labelled DEMO. ``--speed`` divides every pause (tests use 1000).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from nika_tui.demo.script import MODEL, PROJECT, WINDOW, Turn, compaction_summary, turns
from nika_tui.domain.context_fill import COMPACTION_THRESHOLD_PERCENT, fill_percent

VERSION = "2.0.14"
HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd")
DEFAULT_HOOK_TIMEOUT_S = 60.0


def say(text: str) -> None:
    """One labelled line in the kernel's pane."""
    print(f"[DEMO] {text}", flush=True)


def project_dir_name(cwd: str) -> str:
    """Claude Code's folder name for a working directory (every non-alphanumeric → ``-``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


class Transcript:
    """Appends Claude Code transcript lines (uuid chain, session id, cwd, timestamps)."""

    def __init__(self, path: Path, session_id: str, cwd: str) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.parent: str | None = None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)

    def _base(self, kind: str) -> dict[str, Any]:
        line_id = str(uuid.uuid4())
        base = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": VERSION,
            "gitBranch": "main",
            "type": kind,
            "uuid": line_id,
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        }
        self.parent = line_id
        return base

    def _write(self, line: Mapping[str, Any]) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")

    def summary(self, text: str) -> None:
        self._write({"type": "summary", "summary": text, "leafUuid": str(uuid.uuid4())})

    def user(self, content: str | list[dict[str, Any]], **extra: Any) -> None:
        self._write(
            {**self._base("user"), "message": {"role": "user", "content": content}, **extra}
        )

    def assistant(self, content: list[dict[str, Any]], tokens: int, stop: str) -> None:
        # Most of the context is a cache read; the rest split as Claude Code reports it.
        cache_read = int(tokens * 0.93)
        cache_create = tokens - cache_read - 6
        message = {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 6,
                "cache_creation_input_tokens": cache_create,
                "cache_read_input_tokens": cache_read,
                "output_tokens": 180,
                "service_tier": "standard",
            },
        }
        base = self._base("assistant")
        self._write({**base, "message": message, "requestId": f"req_{uuid.uuid4().hex[:20]}"})

    def compact_boundary(self, pre_tokens: int) -> None:
        line = self._base("system")
        line.update(
            {
                "parentUuid": None,
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
                "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": pre_tokens},
            }
        )
        self._write(line)


class HookRunner:
    """Runs the hooks of ``settings.json`` the way Claude Code does."""

    def __init__(self, config_dir: Path | None, fallback: Sequence[str]) -> None:
        self.groups: dict[str, list[dict[str, Any]]] = {}
        settings = config_dir / "settings.json" if config_dir else None
        if settings is not None and settings.is_file():
            data = json.loads(settings.read_text(encoding="utf-8") or "{}")
            hooks = data.get("hooks") if isinstance(data, dict) else None
            self.groups = hooks if isinstance(hooks, dict) else {}
        self.fallback = list(fallback)

    def commands(self, event: str, match: str = "") -> list[tuple[str, float]]:
        """Commands (and timeouts) of the groups whose matcher accepts ``match``."""
        if not self.groups:
            return [(shlex.join([*self.fallback, "hook", "claude", event]), DEFAULT_HOOK_TIMEOUT_S)]
        out: list[tuple[str, float]] = []
        for group in self.groups.get(event, []):
            matcher = str(group.get("matcher") or "")
            if matcher not in ("", "*") and not re.fullmatch(matcher, match):
                continue
            for hook in group.get("hooks", []):
                if hook.get("type") == "command" and hook.get("command"):
                    timeout = float(hook.get("timeout") or DEFAULT_HOOK_TIMEOUT_S)
                    out.append((str(hook["command"]), timeout))
        return out

    def fire(self, event: str, payload: Mapping[str, Any], cwd: str, match: str = "") -> str:
        """Run every matching hook with the payload on stdin; their joined stdout."""
        outputs: list[str] = []
        env = {**os.environ, "CLAUDE_PROJECT_DIR": cwd}
        for command, timeout in self.commands(event, match):
            try:
                proc = subprocess.run(
                    ["/bin/sh", "-c", command],
                    input=json.dumps(payload).encode(),
                    capture_output=True,
                    timeout=timeout,
                    env=env,
                    cwd=cwd if Path(cwd).is_dir() else None,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                say(f"hook {event} timed out after {timeout:.0f}s")
                continue
            outputs.append(proc.stdout.decode("utf-8", "replace"))
        return "".join(outputs)


def _payload(session: str, path: Path, cwd: str, event: str, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(path),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": event,
        **extra,
    }


def _wait(seconds: float, speed: float) -> None:
    time.sleep(max(0.0, seconds / max(speed, 1e-6)))


def play(
    cwd: str,
    config_dir: Path,
    speed: float,
    fallback: Sequence[str],
    script: Sequence[Turn],
    only: frozenset[int] = frozenset(),
) -> Path:
    """Play the session (only the turn numbers in ``only`` when given); the transcript path."""
    session = str(uuid.uuid4())
    path = config_dir / "projects" / project_dir_name(cwd) / f"{session}.jsonl"
    tr = Transcript(path, session, cwd)
    hooks = HookRunner(config_dir, fallback)
    tr.summary(f"[DEMO] replayed session: checkout rate limiting for {PROJECT}")
    say(f"replayed Claude Code session {session} — not a real agent")
    say(f"transcript: {path}")
    out = hooks.fire(
        "SessionStart", _payload(session, path, cwd, "SessionStart", source="startup", model=MODEL),
        cwd, "startup",
    )  # fmt: skip
    if out.strip():
        say(f"SessionStart hook injected {len(out.encode())} bytes of recalled memory")
    compacted = False
    for number, turn in enumerate(script, start=1):
        if only and number not in only:
            continue
        _wait(turn.pause_s, speed)
        say(f"turn {number}: {turn.prompt[:70]}")
        tr.user(turn.prompt)
        hooks.fire(
            "UserPromptSubmit",
            _payload(session, path, cwd, "UserPromptSubmit", prompt=turn.prompt),
            cwd,
        )
        tokens_before = max(turn.context_tokens - 9_000, 20_000)
        for i, tool in enumerate(turn.tools):
            tool_id = f"toolu_{uuid.uuid4().hex[:24]}"
            step = tokens_before + (turn.context_tokens - tokens_before) * i // max(
                len(turn.tools), 1
            )
            tr.assistant(
                [{"type": "tool_use", "id": tool_id, "name": tool.name, "input": tool.input}],
                step,
                "tool_use",
            )
            tr.user([{"tool_use_id": tool_id, "type": "tool_result", "content": tool.result}])
        tr.assistant([{"type": "text", "text": turn.reply}], turn.context_tokens, "end_turn")
        fill = fill_percent(turn.context_tokens, WINDOW)
        say(f"context {fill:.1f}% of {WINDOW:,} tokens")
        hooks.fire("Stop", _payload(session, path, cwd, "Stop", stop_hook_active=False), cwd)
        if fill >= COMPACTION_THRESHOLD_PERCENT and not compacted:
            say(f"context past {COMPACTION_THRESHOLD_PERCENT:.0f}%: automatic compaction")
            hooks.fire(
                "PreCompact",
                _payload(session, path, cwd, "PreCompact", trigger="auto", custom_instructions=""),
                cwd, "auto",
            )  # fmt: skip
            tr.compact_boundary(turn.context_tokens)
            tr.user(compaction_summary(), isCompactSummary=True, isVisibleInTranscriptOnly=True)
            out = hooks.fire(
                "SessionStart", _payload(session, path, cwd, "SessionStart", source="compact"),
                cwd, "compact",
            )  # fmt: skip
            if out.strip():
                say(f"after compaction, {len(out.encode())} bytes came back by one search")
            compacted = True
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point (``python -m nika_tui.demo.replay_agent``)."""
    parser = argparse.ArgumentParser(prog="replay_agent", description="DEMO replay agent")
    parser.add_argument("--speed", type=float, default=1.0, help="divide every pause by this")
    parser.add_argument("--cwd", default=os.getcwd(), help="the project directory it works in")
    parser.add_argument("--exit-when-done", action="store_true", help="do not wait for input")
    parser.add_argument(
        "--turns", default="", help="play only these turn numbers, e.g. 1,10 (a quick look)"
    )
    args = parser.parse_args(argv)
    try:
        only = frozenset(int(n) for n in args.turns.split(",") if n.strip())
    except ValueError:
        parser.error("--turns takes comma-separated turn numbers, e.g. 1,10")
    config_dir = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
    cwd = str(Path(args.cwd).resolve())
    fallback = [sys.executable, "-m", "nika_tui"]
    path = play(cwd, config_dir, args.speed, fallback, turns(cwd), only)
    say("replay finished; the agent is idle" + ("" if args.exit_when_done else " (Ctrl-D exits)"))
    if not args.exit_when_done and sys.stdin is not None and sys.stdin.isatty():
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.readline()
    session = path.stem
    HookRunner(config_dir, fallback).fire(
        "SessionEnd", _payload(session, path, cwd, "SessionEnd", reason="prompt_input_exit"), cwd
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
