"""Helpers for the hook tests: run ``nika hook`` as the agent CLIs do, read the ingest stream."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.requests import RememberRequest
from nika_tui.hooks.dispatch import wait_settled
from nika_tui.services import redis_keys

DATA = Path(__file__).resolve().parents[1] / "data"
TENANT = "acme"


@dataclass
class HookRun:
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Workspace:
    """A project checkout (with .git) and a copy of a transcript for the payloads to point at."""

    project: Path
    transcript: Path

    def payload(self, sample: str, **overrides: Any) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((DATA / sample).read_text())
        if "transcript_path" in data:
            data["transcript_path"] = str(self.transcript)
        if "cwd" in data:
            data["cwd"] = str(self.project / "worker")
        data.update(overrides)
        return data


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    (project / "worker").mkdir()
    transcript = tmp_path / "session.jsonl"
    shutil.copy(DATA / "claude" / "transcript_session.jsonl", transcript)
    return Workspace(project, transcript)


@pytest.fixture
def run_hook(redis_url: str) -> Callable[..., HookRun]:
    """Run ``nika hook CLI EVENT`` with stdin (or an argv payload), as the agent would."""

    def run(
        cli: str,
        event: str,
        stdin: bytes | str | dict[str, Any] | None = None,
        arg: str | None = None,
        tenant: str | None = TENANT,
        extra_env: dict[str, str] | None = None,
    ) -> HookRun:
        env = dict(os.environ)
        env.pop("NIKA_TENANT_ID", None)
        if tenant:
            env["NIKA_TENANT_ID"] = tenant
        env.update(extra_env or {})
        if isinstance(stdin, dict):
            stdin = json.dumps(stdin)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        argv = [sys.executable, "-m", "nika_tui", "hook", cli, event]
        if arg is not None:
            argv.append(arg)
        proc = subprocess.run(argv, input=data, capture_output=True, env=env, timeout=60)
        if tenant:
            # The agent has its answer; wait for the run's deferred work (captures, bookkeeping).
            assert wait_settled(env, tenant, cli, timeout_s=30), "the hook run never finished"
        return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())

    return run


def ingested(client: redis.Redis) -> list[RememberRequest]:
    """Every request on the ingest stream, oldest first."""
    return [
        RememberRequest.model_validate_json(fields["req"])
        for _id, fields in client.xrange(redis_keys.INGEST_STREAM)  # type: ignore[union-attr]
    ]


def hook_log(env: dict[str, str]) -> list[dict[str, Any]]:
    path = Path(env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
