"""OpenCode's handoff packet from its own sessions database, and its manual compaction, with the
real OpenCode (pinned 1.18.33) against the mock Chat Completions server (issue 13).

OpenCode writes no transcript: nika reads the session from OpenCode's SQLite database
(read-only) for the packet — its prompts, the agent's decisions, the files its tools wrote and
its todo list — where the plugin alone gave the last ask only:

- a kernel's OpenCode, killed mid-task (SIGKILL while the model is still answering: no idle,
  no compaction), leaves the packet the kernel watcher builds from that database; a new
  ``opencode run`` session gets it once, with the last ask, an earlier turn's decision, the
  file written and the todo left;
- a compaction by OpenCode's own overflow rule hands off the same richer packet;
- ``/compact`` typed into OpenCode's interactive TUI in a nika kernel (tmux, private socket)
  commits the packet once, counted once as ``manual``, and the session's next prompt gets it
  once.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.engine.kernel_watch import KernelWatcher
from nika_tui.hooks.inject import HANDOFF_OTHER_TITLE, HANDOFF_TITLE
from nika_tui.services import redis_keys
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from tests.agents.headless import run_ok
from tests.agents.mock_gemini_openai_chat import Logged
from tests.agents.opencode_home import TENANT, WINDOW, OpenCode
from tests.agents.test_kernels_gemini_opencode import tenant_processes
from tests.helpers import retry_until

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.tmux, pytest.mark.slow]

DECIDE = "Decide the deploy window for acme-api, please."
DECISION = "Decision: acme-api deploys move to Tuesdays at 09:00 from now on."
TASK = "Task gamma continues: move the staging server to 10.0.9.30 and update the deploy notes."
TODO = "Update the deploy notes for 10.0.9.30"
NOTES = "deploy-notes.md"


def _tools_since_ask(entry: Logged) -> int:
    """Tool results after the request's last user message (the steps of this turn so far)."""
    messages = entry.body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return sum(1 for m in messages[last_user + 1 :] if m.get("role") == "tool")


def _agent(entry: Logged) -> bool:
    """The agent's own turn (not the title generator, not the compaction's summarizer)."""
    head = entry.system()[:400].lower()
    return "title generator" not in entry.system() and "summar" not in head


def _summarized(opencode: OpenCode) -> bool:
    """OpenCode asked its summarizer (a compaction ran, after the compacting hook)."""
    return any("summar" in r.system()[:400].lower() for r in opencode.server.generations())


def _steps(project: Path) -> list[dict[str, Any]]:
    """The task's tool calls, in order: the todo list, the notes written, then edited."""
    notes = str(project / NOTES)
    first = {"id": "1", "content": "Move staging", "status": "completed", "priority": "high"}
    todos = [first, {"id": "2", "content": TODO, "status": "pending", "priority": "medium"}]
    edit = {"filePath": notes, "oldString": "10.0.9.12", "newString": "10.0.9.30"}
    return [
        {"name": "todowrite", "args": {"todos": todos}},
        {"name": "write", "args": {"filePath": notes, "content": "staging: 10.0.9.12\n"}},
        {"name": "edit", "args": edit},
    ]


def _replies(project: Path, last: Callable[[Logged], str]) -> Callable[[Logged], Any]:
    """A decision for DECIDE; for the task, its tool calls, then ``last`` for its final step."""
    steps = _steps(project)

    def reply(entry: Logged) -> Any:
        if not _agent(entry):
            return "A summary of the work so far: staging moves to 10.0.9.30."
        if DECIDE in entry.last_user():
            return DECISION
        if "Task gamma" in entry.last_user():
            done = _tools_since_ask(entry)
            return steps[done] if done < len(steps) else last(entry)
        return "Noted. I have recorded that and I am ready for the next step of the task."

    return reply


def _asked(opencode: OpenCode, needle: str, before: int) -> list[str]:
    generations = [r for r in opencode.server.generations()[before:] if _agent(r)]
    return [r.text() for r in generations if needle in r.last_user()]


def _packet_is_rich(text: str) -> None:
    """What the database gives the packet beyond the last ask."""
    assert "Last ask:" in text and "Task gamma continues: move the staging server" in text
    assert "deploys move to Tuesdays at 09:00" in text  # the earlier turn's decision
    assert f"{NOTES}: 2 edits, +2/-1" in text  # written, then edited
    assert TODO in text  # the todo left pending


@pytest.fixture
def kernel(
    opencode: OpenCode, isolated_env: dict[str, str], tmux_server: Any
) -> Iterator[KernelWatcher]:
    """The tenant's OpenCode kernel (the person's provider and HOME from the fixture)."""
    keep = ("HOME", "XDG_", "OPENCODE_DISABLE_")
    kernel_env = {k: v for k, v in opencode.env.items() if k.startswith(keep)}
    save_tenant(
        TenantConfig(
            tenant_id=TENANT,
            display_name="Acme",
            agent_cli=AgentCli.OPENCODE,
            kernel=KernelConfig(
                workdir=str(opencode.project), command=[str(opencode.binary)], env=kernel_env
            ),
        )
    )
    env = {**os.environ, **isolated_env, "REDIS_URL": opencode.env["REDIS_URL"]}
    watcher = KernelWatcher(Settings.from_env(env), env)
    manager = watcher.manager
    assert manager.spawn(TENANT).spawned
    try:
        retry_until(
            lambda: "ctrl+p commands" in manager.screen(TENANT),
            timeout=90,
            what="OpenCode's input prompt in the kernel pane",
        )
        yield watcher
    finally:
        if manager.is_running(TENANT):
            manager.stop(TENANT, timeout_s=12)
        # A killed OpenCode may leave its own children behind: end those this test started.
        for pid, _cmd in tenant_processes(env["NIKA_OS_DATA_DIR"], TENANT):
            os.kill(pid, signal.SIGKILL)


def _events(env: dict[str, str]) -> list[str]:
    path = Path(env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e["event"] for e in map(json.loads, lines) if e.get("cli") == "opencode"]


def test_a_killed_opencode_kernel_hands_off_its_session_from_the_database(
    opencode: OpenCode, kernel: KernelWatcher, isolated_env: dict[str, str]
) -> None:
    manager = kernel.manager
    hanging = threading.Event()
    release = threading.Event()

    def hang(_entry: Logged) -> str:
        hanging.set()  # the model is asked for the task's last step: OpenCode is mid-task
        release.wait(timeout=120)
        return "Done."

    opencode.server.reply = _replies(opencode.project, hang)
    opencode.server.prompt_tokens = 20_000  # 10% of the model's window, at the first idle
    manager.send_text(TENANT, DECIDE)
    retry_until(
        lambda: "Stop" in _events(isolated_env) or None, timeout=90, what="the first turn's idle"
    )
    manager.send_text(TENANT, TASK)
    retry_until(hanging.is_set, timeout=120, what="the task's tools run, its last step asked")
    pid = manager.tmux.pane_agent_pid(manager.tmux.pane(f"nika-tenant-{TENANT}"))
    assert pid is not None
    os.kill(pid, signal.SIGKILL)  # no idle, no compaction: the process is gone at once
    release.set()
    retry_until(
        lambda: (
            kernel.tick() is not None
            and (s := manager.status(TENANT)) is not None
            and s.state in (KernelState.ERROR, KernelState.EXITED)
        ),
        timeout=30,
        what="the watcher sees OpenCode dead",
    )

    opencode.server.reply = _replies(opencode.project, lambda _e: "Done.")
    before = len(opencode.server.generations())
    opencode.run("Where did we leave off?")
    given = _asked(opencode, "Where did we leave off?", before)
    assert given, "the new session's question never reached the model"
    for text in given:  # its first request and any follow-up of the turn: once each
        assert text.count(f"## {HANDOFF_OTHER_TITLE}") == 1
    packet = given[0][given[0].index(HANDOFF_OTHER_TITLE) :][:3000]
    assert "ended without SessionEnd" in packet and "status 137" in packet, packet
    assert "context fill 10.0%" in packet  # what the plugin last reported (no file holds it)
    _packet_is_rich(packet.replace("\\n", "\n"))


def test_an_overflow_compactions_packet_carries_the_sessions_decisions_files_and_todos(
    opencode: OpenCode, redis_url: str
) -> None:
    overflow = int(WINDOW * 0.975)

    def usage(entry: Logged) -> int:
        # The task's final answer overflows the window: OpenCode compacts after it.
        done = _agent(entry) and "Task gamma" in entry.last_user() and _tools_since_ask(entry)
        return overflow if done and done >= 3 else 1_000

    opencode.server.reply = _replies(opencode.project, lambda _e: "Staging moved, notes updated.")
    opencode.server.usage = usage
    opencode.run(DECIDE)
    run_ok([str(opencode.binary), "run", "--continue", TASK], opencode.project, opencode.env, 240)
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    [(_id, compaction)] = client.xrange(redis_keys.compactions(TENANT))
    assert compaction["trigger"] == "auto"  # OpenCode's own rule, not a person's /compact
    project = json.loads(client.get(redis_keys.handoff_project(TENANT, "acme-api")) or "{}")
    _packet_is_rich(project["text"])
    assert "context fill 97.5%" in project["text"]  # the plugin's usage over the window


def test_compact_typed_in_the_opencode_tui_commits_once_and_the_next_prompt_gets_it_once(
    opencode: OpenCode, kernel: KernelWatcher, isolated_env: dict[str, str], redis_url: str
) -> None:
    manager = kernel.manager
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    opencode.server.reply = _replies(opencode.project, lambda _e: "Staging moved, notes updated.")
    manager.send_text(TENANT, TASK)
    retry_until(
        lambda: "Stop" in _events(isolated_env) or None, timeout=120, what="the task's idle"
    )
    manager.send_text(TENANT, "/compact")
    retry_until(
        lambda: client.xlen(redis_keys.compactions(TENANT)) == 1 or None,
        timeout=120,
        what="the /compact committed (one compaction counted)",
    )
    [(_id, compaction)] = client.xrange(redis_keys.compactions(TENANT))
    assert compaction["trigger"] == "manual"  # the person's /compact
    retry_until(
        lambda: _summarized(opencode) or None, timeout=60, what="OpenCode's compaction summary"
    )
    assert not client.keys(redis_keys.handoff_packet(TENANT, "*"))  # nothing left pending
    own = [k for k in client.keys(redis_keys.handoff_latest(TENANT, "*"))]
    assert len(own) == 1  # the session's own newest packet

    before = len(opencode.server.generations())
    manager.send_text(TENANT, "What is next on the list?")
    asked = retry_until(
        lambda: _asked(opencode, "What is next on the list?", before) or None,
        timeout=90,
        what="the session's next prompt at the model",
    )
    for text in asked:
        assert text.count(f"## {HANDOFF_TITLE}") == 1  # this session's packet, once
        assert "Task gamma continues: move the staging server" in text
    retry_until(
        lambda: _events(isolated_env).count("Stop") >= 2 or None,
        timeout=90,
        what="the next prompt's idle",
    )
    assert client.xlen(redis_keys.compactions(TENANT)) == 1  # counted once
