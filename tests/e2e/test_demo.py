"""The demo: the replay agent writes a real-format transcript and its hooks land in Redis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
import yaml

from nika_tui.demo import DEMO_DISPLAY_NAME, DEMO_TENANT_ID
from nika_tui.domain.requests import RememberRequest
from nika_tui.paths import tenant_config_path
from nika_tui.services import redis_keys
from nika_tui.services.agent_settings import agent_home, install_claude_hooks
from nika_tui.services.transcripts.read import read_fill
from nika_tui.services.wm_store import read_stream, read_working_memory
from tests.helpers import retry_until

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux


def ingested(client: redis.Redis) -> list[RememberRequest]:
    return [
        RememberRequest.model_validate_json(f["req"])
        for _i, f in client.xrange(redis_keys.INGEST_STREAM)  # type: ignore[union-attr]
    ]


def fired(client: redis.Redis) -> list[str]:
    entries = read_stream(client, redis_keys.hooks_fired(DEMO_TENANT_ID), 200)
    return [f["event"] for _i, f in reversed(entries)]


def run_replay(tmp_path: Path, *extra: str) -> tuple[Path, Path]:
    """Install the real hooks in the demo's agent home, then replay at high speed."""
    install_claude_hooks(DEMO_TENANT_ID)
    home = agent_home(DEMO_TENANT_ID, "claude")
    project = tmp_path / "acme-shop"
    project.mkdir()
    env = {**os.environ, "NIKA_TENANT_ID": DEMO_TENANT_ID, "CLAUDE_CONFIG_DIR": str(home)}
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "nika_tui.demo.replay_agent", "--speed", "1000"),
            *("--cwd", str(project), "--exit-when-done", *extra),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert all(line.startswith("[DEMO] ") for line in proc.stdout.splitlines())
    [transcript] = list((home / "projects").rglob("*.jsonl"))
    return transcript, project


@pytest.mark.slow
def test_replay_agent_writes_transcript_and_hooks_land_on_the_stream(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    transcript, project = run_replay(tmp_path)
    # The transcript is a Claude Code one: the fill reader understands it.
    final = read_fill(transcript)
    assert (final.format.value, final.tokens, final.fill_percent) == ("claude-code", 40_500, 20.25)
    wm = read_working_memory(redis_client, DEMO_TENANT_ID)
    assert wm is not None
    assert max(s.fill_percent for s in wm.history) >= 61.0  # it climbed past 61%
    assert [c.trigger for c in wm.compactions] == ["auto"]
    # Every hook fired, in Claude Code's order around the compaction.
    events = fired(redis_client)
    assert events[0] == "SessionStart" and events[-1] == "SessionEnd"
    assert events.count("UserPromptSubmit") == 11 and events.count("Stop") == 11
    i = events.index("PreCompact")
    assert events[i - 1] == "Stop" and events[i + 1] == "SessionStart"
    requests = ingested(redis_client)
    texts = [r.text for r in requests]
    assert any(t.startswith("Production deploys happen on Fridays") for t in texts)
    assert any(t.startswith("Maybe production deploys happen on Thursdays") for t in texts)
    [packet] = [r for r in requests if "handoff-packet" in r.meta.produces]
    assert "Store limiter state in Redis" in packet.text
    assert {r.meta.project_id for r in requests} == {project.name}
    assert {r.meta.agent_type for r in requests} == {"claude-code"}


def test_nika_demo_creates_the_labelled_demo_tenant(isolated_env: dict[str, str]) -> None:
    argv = [sys.executable, "-m", "nika_tui", "demo", "--no-service", "--no-spawn", "--json"]
    for _ in range(2):  # idempotent
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["tenant_id"] == "demo" and out["demo"] is True
    config = yaml.safe_load(tenant_config_path(DEMO_TENANT_ID).read_text())
    assert config["demo"] is True and config["display_name"] == DEMO_DISPLAY_NAME
    assert config["agent_cli"] == "claude-code"
    assert config["kernel"]["command"][1:3] == ["-m", "nika_tui.demo.replay_agent"]


def test_nika_demo_refuses_to_overwrite_a_real_tenant_named_demo(
    isolated_env: dict[str, str],
) -> None:
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.services.config_store import save_tenant

    save_tenant(TenantConfig(tenant_id="demo", display_name="Real team"))
    proc = subprocess.run(
        [sys.executable, "-m", "nika_tui", "demo", "--no-service", "--no-spawn"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "not the demo" in proc.stderr
    assert "Real team" in tenant_config_path("demo").read_text()


@pytest.mark.slow
@pytest.mark.tmux
def test_demo_kernel_runs_the_replay_in_tmux(
    redis_client: redis.Redis, tmux_server: libtmux.Server
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nika_tui", "demo", "--no-service", "--speed", "1000", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["spawned"] is True
    # The kernel's replay agent fires the real hooks: the first prompt reaches Redis.
    retry_until(
        lambda: "UserPromptSubmit" in fired(redis_client), timeout=60, what="the demo's hooks"
    )
    first = ingested(redis_client)[0]
    assert first.meta.tmux == f"nika-tenant-{DEMO_TENANT_ID}"  # from $TMUX inside the kernel
    assert first.meta.project_id == "acme-shop"
    settings = json.loads((agent_home(DEMO_TENANT_ID, "claude") / "settings.json").read_text())
    assert "PreCompact" in settings["hooks"]  # spawn installed the real hooks


@pytest.mark.slow
@pytest.mark.embedder
def test_demo_contradiction_lands_in_the_review_queue(
    redis_client: redis.Redis, running_service: Any, tmp_path: Path
) -> None:
    from nika_tui.demo import create_demo_tenant

    create_demo_tenant()
    run_replay(tmp_path, "--turns", "1,10")  # the two turns that contradict each other
    client = running_service.client
    items = retry_until(lambda: client.review_list(DEMO_TENANT_ID), timeout=180, what="a review")
    pair = json.dumps(items)
    assert "Fridays" in pair and "Thursdays" in pair
