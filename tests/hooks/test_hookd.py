"""The lean hook entry and its fork server: same outcomes as an in-process run, never worse.

Each test runs ``python -m nika_tui hook …`` as an agent CLI would; the first run finds no server,
runs in-process and starts one; later runs go through it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis

from nika_tui.hookd.client import decode_env, encode_env, socket_path
from nika_tui.hookd.server import _changed
from tests.helpers import retry_until
from tests.hooks.conftest import TENANT, HookRun, Workspace, hook_log, ingested
from tests.hooks.hookd_pid import _server_pid


@pytest.fixture
def server_env(isolated_env: dict[str, str], redis_url: str) -> dict[str, str]:
    return {**os.environ, "NIKA_HOOKD_IDLE_S": "30"}


@pytest.fixture(autouse=True)
def _stop_server(server_env: dict[str, str]) -> object:
    yield
    pid = _server_pid(server_env)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)


def test_runs_through_the_server_store_what_in_process_runs_store(
    run_hook: Callable[..., HookRun],
    workspace: Workspace,
    redis_client: redis.Redis,
    server_env: dict[str, str],
) -> None:
    prompts = [f"Deploys of the billing worker need a feature flag, case {i}" for i in range(3)]
    payload = workspace.payload("claude/hook_user_prompt_submit.json", prompt=prompts[0])
    first = run_hook("claude", "UserPromptSubmit", payload, extra_env={"NIKA_HOOKD_IDLE_S": "30"})
    assert first.returncode == 0 and first.stdout == ""
    retry_until(lambda: _server_pid(server_env), timeout=120, what="the hook server started")
    for prompt in prompts[1:]:
        payload = workspace.payload("claude/hook_user_prompt_submit.json", prompt=prompt)
        run = run_hook("claude", "UserPromptSubmit", payload)
        assert run.returncode == 0 and run.stdout == ""
    assert [r.text for r in ingested(redis_client)] == prompts
    entries = [e for e in hook_log(server_env) if e["event"] == "UserPromptSubmit"]
    assert [e["outcome"] for e in entries] == ["ok", "ok", "ok"]
    assert all(e["tenant"] == TENANT for e in entries)


def test_bad_payloads_through_the_server_exit_0_and_print_nothing(
    run_hook: Callable[..., HookRun], server_env: dict[str, str]
) -> None:
    run_hook("claude", "Stop", "{}")
    retry_until(lambda: _server_pid(server_env), timeout=120, what="the hook server started")
    for raw in ("", "not json", "[1, 2]", "\udcff".encode("utf-8", "surrogatepass")):
        run = run_hook("claude", "SessionStart", raw)
        assert (run.returncode, run.stdout) == (0, "")
    run = run_hook("nonexistent-cli", "SessionStart", "{}")
    assert (run.returncode, run.stdout) == (0, "")
    outcomes = [e["outcome"] for e in hook_log(server_env)]
    assert outcomes.count("skipped") >= 5


def test_a_server_killed_mid_run_costs_the_agent_nothing(
    run_hook: Callable[..., HookRun], workspace: Workspace, server_env: dict[str, str]
) -> None:
    run_hook("claude", "Stop", "{}")
    pid = retry_until(lambda: _server_pid(server_env), timeout=120, what="server started")
    os.kill(pid, signal.SIGKILL)
    retry_until(lambda: _server_pid(server_env) != pid or None, timeout=10, what="server gone")
    # The socket file is left behind by a killed server: the client falls back in-process.
    payload = workspace.payload(
        "claude/hook_user_prompt_submit.json", prompt="A prompt after the server was killed"
    )
    run = run_hook("claude", "UserPromptSubmit", payload)
    assert run.returncode == 0 and run.stdout == ""
    assert hook_log(server_env)[-1]["outcome"] == "ok"


def test_the_server_exits_when_idle(server_env: dict[str, str]) -> None:
    path = socket_path(server_env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui.hookd.server", path],
        env={**server_env, "NIKA_HOOKD_IDLE_S": "2"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        retry_until(lambda: os.path.exists(path) or proc.poll() is not None, timeout=120)
        assert os.path.exists(path), proc.stderr.read() if proc.stderr else ""
        assert proc.wait(timeout=120) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not os.path.exists(path)


def test_nika_hookd_0_runs_every_hook_in_process(
    run_hook: Callable[..., HookRun], server_env: dict[str, str]
) -> None:
    run = run_hook("claude", "Stop", "{}", extra_env={"NIKA_HOOKD": "0"})
    assert run.returncode == 0
    assert _server_pid(server_env) is None


def test_environment_round_trip_keeps_every_variable() -> None:
    env = {"A": "1", "EMPTY": "", "WITH_EQUALS": "x=y=z", "UNICODE": "café ☕", "PATH": "/bin"}
    assert decode_env(encode_env(env)) == env


def test_a_changed_source_file_makes_the_server_stale(tmp_path: Path) -> None:
    source = tmp_path / "module.py"
    source.write_text("x = 1\n")
    seen = {str(source): source.stat().st_mtime}
    assert not _changed(seen)
    later = time.time() + 5
    os.utime(source, (later, later))
    assert _changed(seen)
    source.unlink()
    assert _changed(seen)


def test_a_new_server_takes_over_while_a_run_of_the_old_one_is_still_going(
    server_env: dict[str, str],
) -> None:
    """A forked run must not keep the old server's lock: it outlives the server (its deferred
    captures go on), and a server started meanwhile found the lock held and quit at once, so
    every hook ran in-process until that run ended (seen as a benchmark's server "exiting at
    start")."""
    import socket

    path = socket_path(server_env)

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "nika_tui.hookd.server", path],
            env=server_env,
            stderr=subprocess.PIPE,
            text=True,
        )

    def serving(proc: subprocess.Popen[str]) -> bool | None:
        if proc.poll() is not None:
            return None
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(path)
            except OSError:
                return False
        return True

    old = start()
    new: subprocess.Popen[str] | None = None
    # A run in flight: a connection that sends nothing keeps its forked child waiting (up to
    # the server's request timeout) while the test goes on.
    in_flight = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        retry_until(lambda: serving(old), timeout=120, what="the first server listening")
        before = _children(old.pid)
        in_flight.connect(path)
        retry_until(lambda: _children(old.pid) - before, timeout=30, what="the run forked for it")
        old.send_signal(signal.SIGTERM)
        assert old.wait(timeout=30) is not None
        new = start()
        retry_until(
            lambda: serving(new) or new.poll() is not None,  # type: ignore[union-attr]
            timeout=120,
            what="the second server listening, or gone",
        )
        assert new.poll() is None, "the new server quit: the old run still held the lock"
    finally:
        in_flight.close()
        for proc in (old, new):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()


def _children(pid: int) -> set[int]:
    """The live child processes of ``pid``."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found |= {int(c) for c in task.read_text().split()}
    return found
