"""The kernel path of Gemini CLI and OpenCode with the real binaries (Codex and Claude Code are in
:mod:`tests.agents.test_kernels`): ``nika kernel spawn`` runs the CLI interactively in tmux
(private socket) with no first-run dialog in the way, a fact typed in the pane reaches the real
memory service through nika's hooks (Gemini) or plugin (OpenCode), the fill the CLI reports is
recorded, and ``nika kernel stop`` ends it on request with no process of the tenant left.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.kernel_state import KernelState, StateSource
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.engine.kernels.manager import KernelManager
from nika_tui.services import redis_keys
from nika_tui.services.config_store import save_tenant
from nika_tui.services.gemini_settings import gemini_home
from nika_tui.settings import Settings
from tests.agents.headless import stored_fact
from tests.agents.mock_gemini_openai_chat import MockModelServer
from tests.agents.opencode_home import WINDOW, OpenCode
from tests.helpers import retry_until
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.agents, pytest.mark.tmux, pytest.mark.embedder]

FACT = "The staging server moved to 10.0.9.30 last week, the old address is retired."
EARLIER = "The acme-api deploys to production every Thursday at 10:00."
# Screens a spawned kernel must never stop at (a person would have to answer them).
DIALOGS = ("Do you trust", "How would you like to authenticate", "Trust folder", "Select a model")


def _hook_log(env: dict[str, str], cli: str) -> list[str]:
    """The events ``cli``'s hook runs logged in ``{data}/logs/hooks.log``, in order."""
    path = Path(env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [e["event"] for e in map(json.loads, filter(None, lines)) if e.get("cli") == cli]


def _hook_notes(env: dict[str, str], cli: str) -> list[tuple[str, list[str]]]:
    """(event, notes) of each of ``cli``'s hook runs, in order."""
    path = Path(env["NIKA_OS_DATA_DIR"]) / "logs" / "hooks.log"
    lines = path.read_text().splitlines() if path.exists() else []
    entries = [e for e in map(json.loads, filter(None, lines)) if e.get("cli") == cli]
    return [(e["event"], list(e.get("notes") or [])) for e in entries]


def _hook_events(env: dict[str, str], cli: str) -> set[str]:
    return set(_hook_log(env, cli))


def tenant_processes(data_dir: str, tenant_id: str) -> list[tuple[int, str]]:
    """(pid, command line) of every live process started in the tenant's kernel: its
    environment names this test's data dir and the tenant. nika's hook server is left out:
    it serves every tenant of the data dir and exits by itself when idle (docs/agents.md)."""
    wanted = {f"NIKA_OS_DATA_DIR={data_dir}".encode(), f"NIKA_TENANT_ID={tenant_id}".encode()}
    out: list[tuple[int, str]] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = set((entry / "environ").read_bytes().split(b"\0"))
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue  # gone meanwhile, or not readable
        if wanted <= environ and state != "Z" and "nika_tui.hookd.server" not in cmdline:
            out.append((int(entry.name), cmdline))
    return out


def _seed_earlier_fact(service: RunningService, tenant_id: str) -> None:
    """What an earlier session of the tenant left: the new session's opening must bring it."""
    meta = NikaMeta(timestamp=datetime.now(UTC), project_id="acme-api")
    req = RememberRequest(tenant_id=tenant_id, text=EARLIER, meta=meta)
    service.client.wait_ingested(tenant_id, service.client.remember(req), timeout=60)


def _opening_reached_the_model(server: MockModelServer) -> None:
    """A request of the new session that carries the typed line also carries the seeded fact,
    in one of nika's blocks (Gemini CLI: SessionStart; OpenCode: the plugin's opening on the
    first prompt, or the tenant's AGENTS.md once auto-memory has synced it, decision 464).
    The CLIs' side requests (OpenCode's title generator, Gemini CLI's task router) carry the
    typed line too, at their own pace, without the agent's context: they are not it."""
    asked = [r.text() for r in server.generations() if "10.0.9.30" in r.last_user()]
    assert asked, "the typed line never reached the model"
    fact = EARLIER.rstrip(".")
    opened = [t for t in asked if ("nika-memory" in t or "nika:memory begin" in t) and fact in t]
    assert opened, asked[-1][-2000:]


def _run_kernel(
    manager: KernelManager,
    tenant_id: str,
    ready: Callable[[str], bool],
    what: str,
    check: Callable[[], None],
) -> None:
    """Spawn, wait for the CLI's input prompt (no dialog), run ``check``, stop; then no
    process of the tenant is left."""
    spawned = manager.spawn(tenant_id)
    assert spawned.spawned, spawned.message
    try:
        screen = retry_until(
            lambda: (s := manager.screen(tenant_id)) and ready(s) and s,
            timeout=90,
            what=what,
        )
        assert not any(d in screen for d in DIALOGS), screen
        # The check after the stop sees the kernel's processes while it runs (the CLI's own).
        running = tenant_processes(manager.child_env["NIKA_OS_DATA_DIR"], tenant_id)
        assert any(str(spawned.command[0]) in cmd for _, cmd in running), running
        manager.send_text(tenant_id, f"Please remember this for the team: {FACT}")
        check()
        # The answered turn leaves the kernel idle, decided by the CLI's own hook / plugin.
        status = retry_until(
            lambda: (st := manager.poll(tenant_id)) and st.state is KernelState.IDLE and st,
            timeout=30,
            what="the kernel idle after the answer",
        )
        assert status.source is StateSource.HOOK, status
    finally:
        stopped = manager.stop(tenant_id, timeout_s=12)
    assert stopped.stopped and not stopped.forced, stopped.message
    data_dir = manager.child_env["NIKA_OS_DATA_DIR"]
    left = retry_until(
        lambda: not tenant_processes(data_dir, tenant_id) or None,
        timeout=15,
        what="every process of the tenant's kernel ended",
    )
    assert left


def _wm(redis_client: Any, tenant_id: str) -> dict[str, str]:
    return retry_until(
        lambda: redis_client.hgetall(redis_keys.working_memory(tenant_id)) or None,
        timeout=60,
        what="working memory (fill) recorded",
    )


def test_gemini_cli_kernel_runs_interactively_with_live_hooks_and_stops_cleanly(
    gemini_bin: Path,
    gemini_chat_model: MockModelServer,
    isolated_env: dict[str, str],
    redis_url: str,
    redis_client: Any,
    running_service: RunningService,
    tmux_server: Any,
    tmp_path: Path,
) -> None:
    tenant_id = "acme"
    project = tmp_path / "acme-api"
    (project / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    home.mkdir()
    # A person's API-key login (the auth choice Gemini CLI asks once); the spawn installs the rest.
    settings = gemini_home(tenant_id) / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, mode=0o700)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    # The key where Gemini CLI reads it from its home (not the tenant config, not tmux's env).
    key_file = settings.parent / ".env"
    key_file.touch(mode=0o600)
    key_file.write_text("GEMINI_API_KEY=test-key-not-a-secret\n")
    save_tenant(
        TenantConfig(
            tenant_id=tenant_id,
            display_name="Acme",
            agent_cli=AgentCli.GEMINI_CLI,
            kernel=KernelConfig(
                workdir=str(project),
                command=[str(gemini_bin)],
                env={
                    "HOME": str(home),
                    "GOOGLE_GEMINI_BASE_URL": gemini_chat_model.url,
                },
            ),
        )
    )
    gemini_chat_model.prompt_tokens = 52_429  # 5% of Gemini CLI's 1,048,576-token window
    env = {**os.environ, **isolated_env, "REDIS_URL": redis_url}
    _seed_earlier_fact(running_service, tenant_id)
    manager = KernelManager(Settings.from_env(env), child_env=env, redis_client=redis_client)

    def check() -> None:
        stored = stored_fact(running_service, tenant_id, "10.0.9.30")
        assert stored.meta.agent_type == "gemini-cli"
        assert stored.meta.project_id == "acme-api"
        retry_until(
            lambda: {"SessionStart", "BeforeAgent", "AfterAgent"} <= _hook_events(env, "gemini"),
            timeout=60,
            what="Gemini CLI's SessionStart, BeforeAgent and AfterAgent hooks from the kernel",
        )
        wm = _wm(redis_client, tenant_id)
        assert wm["format"] == "gemini-cli"
        assert int(wm["window"]) == 1_048_576
        assert float(wm["fill_percent"]) == pytest.approx(5.0, abs=0.01)
        _opening_reached_the_model(gemini_chat_model)
        # nika's compaction policy types Gemini CLI's /compress: it runs as /compress (the
        # manual PreCompress), not as whatever its completion list highlighted.
        assert manager.send_compact(tenant_id) == "/compress"
        retry_until(
            lambda: any(
                "compression due" in " ".join(n)
                for e, n in _hook_notes(env, "gemini")
                if e == "PreCompress"
            ),
            timeout=60,
            what="Gemini CLI's manual PreCompress after /compress typed by nika",
        )

    _run_kernel(
        manager,
        tenant_id,
        lambda s: "Type your message" in s,
        "Gemini CLI's input prompt in the kernel pane",
        check,
    )
    # The stop quit Gemini CLI its own way (SessionEnd ran), and ran no other command on the
    # way out: a /clear would have ended the session and started a second one.
    events = _hook_log(env, "gemini")
    assert events.count("SessionStart") == 1 and events[-1] == "SessionEnd", events


def test_opencode_kernel_runs_interactively_with_live_plugin_and_stops_cleanly(
    opencode: OpenCode,
    isolated_env: dict[str, str],
    redis_client: Any,
    running_service: RunningService,
    tmux_server: Any,
) -> None:
    tenant_id = "acme"
    # The person's setup the fixture made (provider in opencode.json, HOME and XDG dirs apart);
    # OPENCODE_CONFIG_DIR and the plugin come from the spawn itself.
    keep = ("HOME", "XDG_", "OPENCODE_DISABLE_")
    kernel_env = {k: v for k, v in opencode.env.items() if k.startswith(keep)}
    save_tenant(
        TenantConfig(
            tenant_id=tenant_id,
            display_name="Acme",
            agent_cli=AgentCli.OPENCODE,
            kernel=KernelConfig(
                workdir=str(opencode.project), command=[str(opencode.binary)], env=kernel_env
            ),
        )
    )
    opencode.server.prompt_tokens = 20_000  # 10% of the model's 200,000-token limit
    env = {**os.environ, **isolated_env, "REDIS_URL": opencode.env["REDIS_URL"]}
    _seed_earlier_fact(running_service, tenant_id)
    manager = KernelManager(Settings.from_env(env), child_env=env, redis_client=redis_client)

    def check() -> None:
        stored = stored_fact(running_service, tenant_id, "10.0.9.30")
        assert stored.meta.agent_type == "opencode"
        assert stored.meta.project_id == "acme-api"
        retry_until(
            lambda: {"UserPromptSubmit", "Stop"} <= _hook_events(env, "opencode"),
            timeout=60,
            what="OpenCode's plugin events (first prompt, idle) from the kernel",
        )
        wm = _wm(redis_client, tenant_id)
        assert wm["format"] == "opencode"
        assert int(wm["window"]) == WINDOW
        assert float(wm["fill_percent"]) == pytest.approx(10.0, abs=0.01)
        _opening_reached_the_model(opencode.server)

    _run_kernel(
        manager,
        tenant_id,
        lambda s: "ctrl+p commands" in s,
        "OpenCode's input prompt in the kernel pane",
        check,
    )
