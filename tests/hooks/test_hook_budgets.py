"""A hook never blocks the agent on a memory service that is up but hung (issue 13).

The real ``nika hook`` processes run as the agent CLIs run them, against two stand-ins
(:mod:`tests.hooks.hung_service`): a service that keeps its heartbeat and takes the RPCs off the
stream but never answers, and a Redis that accepts connections and never answers. Each hook
exits 0, prints nothing or the CLI's hook JSON, says in its log what it could not reach, and
loses nothing: the prompt stays queued (or spooled), the handoff packet committed. The bounds
are checked by what the hook itself reports (its step notes, its "timeout" outcome), never by a
clock in the test: the subprocess timeout below is only a generous backstop.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from nika_tui.hooks.inject import HANDOFF_TITLE, PROMPT_TITLE
from nika_tui.services.hook_spool import pending
from tests.helpers import retry_until
from tests.hooks.conftest import TENANT, HookRun, Workspace, hook_log, ingested
from tests.hooks.hookd_pid import _server_pid
from tests.hooks.hung_service import HungMemoryService, HungRedis

pytestmark = pytest.mark.slow  # each hook waits out its budget

Run = Callable[..., HookRun]
PROMPT = "The staging server moved to 10.0.9.30 last week, use that address from now on."
IN_PROCESS = {"NIKA_HOOKD": "0"}


@pytest.fixture
def hung_service(redis_url: str, make_tenant: Callable[..., Any]) -> Iterator[HungMemoryService]:
    make_tenant(TENANT)
    with HungMemoryService(redis_url) as service:
        yield service


def _asked(service: HungMemoryService) -> list[str]:
    """The ops the stand-in took (its reader thread notes them as it reads them)."""
    return retry_until(lambda: list(service.ops), timeout=30, what="an RPC taken by the service")


def _last(env: dict[str, str], event: str) -> dict[str, Any]:
    return [e for e in hook_log(env) if e["event"] == event][-1]


def _answer(run: HookRun, event: str) -> str:
    """The injected context of a hook's JSON answer for ``event`` ("" when it printed nothing)."""
    assert run.returncode == 0, run.stderr
    if not run.stdout.strip():
        return ""
    out = json.loads(run.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == event
    return str(out["additionalContext"])


def _compacted(run_hook: Run, workspace: Workspace, session: str) -> None:
    """This session compacted: PreCompact built its packet, PostCompact committed it."""
    pre = workspace.payload("claude/hook_pre_compact.json", session_id=session)
    assert run_hook("claude", "PreCompact", pre, extra_env=IN_PROCESS).returncode == 0
    post = dict(pre, hook_event_name="PostCompact")
    assert run_hook("claude", "PostCompact", post, extra_env=IN_PROCESS).returncode == 0


def test_claude_prompt_on_a_hung_service_gets_its_handoff_and_stays_queued(
    run_hook: Run,
    workspace: Workspace,
    hung_service: HungMemoryService,
    redis_client: redis.Redis,
    isolated_env: dict[str, str],
) -> None:
    session = "hung-prompt-1"
    _compacted(run_hook, workspace, session)
    payload = workspace.payload(
        "claude/hook_user_prompt_submit.json", session_id=session, prompt=PROMPT
    )
    run = run_hook("claude", "UserPromptSubmit", payload, extra_env=IN_PROCESS)
    context = _answer(run, "UserPromptSubmit")
    # What needs no service still reaches the agent: this session's packet, read from Redis.
    assert HANDOFF_TITLE in context and PROMPT_TITLE not in context
    assert "recall" in _asked(hung_service)  # the service was asked, and never answered
    entry = _last(isolated_env, "UserPromptSubmit")
    assert entry["outcome"] == "ok"  # returned by its own recall budget, not the 8 s alarm
    assert any("did not answer 'recall' within 2s" in n for n in entry["notes"]), entry["notes"]
    # Nothing lost: the prompt waits on the ingest stream for the service.
    assert PROMPT in [r.text for r in ingested(redis_client)]


def test_claude_session_start_on_a_hung_service_gets_its_handoff_within_one_budget(
    run_hook: Run,
    workspace: Workspace,
    hung_service: HungMemoryService,
    redis_client: redis.Redis,
    isolated_env: dict[str, str],
) -> None:
    session = "hung-start-1"
    pre = workspace.payload("claude/hook_pre_compact.json", session_id=session)
    assert run_hook("claude", "PreCompact", pre, extra_env=IN_PROCESS).returncode == 0
    start = workspace.payload(
        "claude/hook_session_start_compact.json", session_id=session, cwd=pre["cwd"]
    )
    run = run_hook("claude", "SessionStart", start, extra_env=IN_PROCESS)
    context = _answer(run, "SessionStart")
    assert HANDOFF_TITLE in context
    # One 2.5 s budget for the digest: the project's ask used it all, the tenant's was not made.
    assert _asked(hung_service) == ["recent"]
    entry = _last(isolated_env, "SessionStart")
    assert entry["outcome"] == "ok"
    assert any("did not answer 'recent' within 2.5s" in n for n in entry["notes"]), entry["notes"]
    # Nothing lost: the compaction's packet was committed (queued for the service).
    packets = [r for r in ingested(redis_client) if "handoff-packet" in r.meta.produces]
    assert len(packets) == 1 and packets[0].meta.session_id == session


@pytest.mark.parametrize(
    ("cli", "event"), [("codex", "UserPromptSubmit"), ("gemini", "BeforeAgent")]
)
def test_other_clis_prompt_on_a_hung_service_returns_and_stays_queued(
    run_hook: Run,
    workspace: Workspace,
    hung_service: HungMemoryService,
    redis_client: redis.Redis,
    isolated_env: dict[str, str],
    cli: str,
    event: str,
) -> None:
    payload = {
        "session_id": f"hung-{cli}-1",
        "cwd": str(workspace.project / "worker"),
        "hook_event_name": event,
        "prompt": PROMPT,
    }
    run = run_hook(cli, event, payload, extra_env=IN_PROCESS)
    assert PROMPT_TITLE not in _answer(run, event)
    assert "recall" in _asked(hung_service)
    entry = _last(isolated_env, event)
    assert entry["outcome"] == "ok"
    assert any("did not answer 'recall' within 2s" in n for n in entry["notes"]), entry["notes"]
    [queued] = [r for r in ingested(redis_client) if r.text == PROMPT]
    assert queued.meta.agent_type == {"codex": "codex", "gemini": "gemini-cli"}[cli]


def test_prompt_through_the_hook_server_on_a_hung_service_returns_and_stays_queued(
    run_hook: Run,
    workspace: Workspace,
    hung_service: HungMemoryService,
    redis_client: redis.Redis,
    isolated_env: dict[str, str],
) -> None:
    env = {**isolated_env, "NIKA_HOOKD_IDLE_S": "30"}
    # A first run (in-process) starts the server; the prompt then runs in its forked child.
    run_hook("claude", "Notification", {"session_id": "warm-up"}, extra_env=env)
    server = retry_until(lambda: _server_pid(env), timeout=120, what="the hook server started")
    try:
        payload = workspace.payload("claude/hook_user_prompt_submit.json", prompt=PROMPT)
        run = run_hook("claude", "UserPromptSubmit", payload, extra_env=env)
    finally:
        os.kill(server, signal.SIGTERM)
    assert _answer(run, "UserPromptSubmit") == ""
    entry = _last(isolated_env, "UserPromptSubmit")
    assert entry["outcome"] == "ok"
    assert any("did not answer 'recall' within 2s" in n for n in entry["notes"]), entry["notes"]
    assert PROMPT in [r.text for r in ingested(redis_client)]


@pytest.mark.parametrize("event", ["UserPromptSubmit", "SessionStart"])
def test_claude_hook_on_a_hung_redis_is_cut_by_its_alarm_and_spools_the_prompt(
    run_hook: Run,
    workspace: Workspace,
    make_tenant: Callable[..., Any],
    isolated_env: dict[str, str],
    event: str,
) -> None:
    make_tenant(TENANT)
    sample = {"UserPromptSubmit": "hook_user_prompt_submit", "SessionStart": "hook_session_start"}
    payload = workspace.payload(f"claude/{sample[event]}.json")
    if event == "UserPromptSubmit":
        payload["prompt"] = PROMPT
    with HungRedis() as hung:
        env = {**IN_PROCESS, "REDIS_URL": hung.url}
        run = run_hook("claude", event, payload, extra_env=env)
        assert hung.received > 0  # the hook did reach it
    assert _answer(run, event) == ""  # nothing could be read: nothing injected
    entry = _last(isolated_env, event)
    # Every Redis call waits out its socket timeout; the 8 s alarm ends what is left.
    assert entry["outcome"] == "timeout" and "hook budget of 8.0s spent" in entry["detail"]
    assert any("Timeout reading from socket" in n for n in entry["notes"]), entry
    if event == "UserPromptSubmit":
        # Nothing lost: the prompt is in the tenant's spool, replayed once Redis answers.
        [spooled] = pending(TENANT)
        assert PROMPT in spooled.read_text()
