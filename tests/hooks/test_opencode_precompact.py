"""OpenCode's PreCompact reads the session from OpenCode's database; a database it cannot use —
not OpenCode's, or without the session — loses nothing: the hook exits 0, says why in its log,
and the packet is built from what the plugin sent (issue 13)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.services import redis_keys
from tests.hooks.conftest import TENANT, HookRun, Workspace, hook_log
from tests.importer.sessions_on_disk import opencode_db

Run = Callable[..., HookRun]
ASK = "Split the invoicing service into two workers."


@pytest.mark.parametrize("database", ["garbage", "other-session"])
def test_a_database_that_cannot_serve_falls_back_to_the_plugins_last_ask(
    database: str,
    run_hook: Run,
    workspace: Workspace,
    make_tenant: Callable[..., Any],
    redis_client: redis.Redis,
    isolated_env: dict[str, str],
    tmp_path: Path,
) -> None:
    make_tenant(TENANT)
    data = tmp_path / "xdg-data"
    if database == "garbage":
        (data / "opencode").mkdir(parents=True)
        (data / "opencode" / "opencode.db").write_bytes(b"not a database at all\n" * 50)
    else:
        opencode_db(data / "opencode", [])  # OpenCode's tables, no such session
    payload = {
        "session_id": "ses_oc1",
        "cwd": str(workspace.project),
        "trigger": "auto",
        "last_prompt": ASK,
        "last_assistant_message": "Both workers run.",
    }
    run = run_hook("opencode", "PreCompact", payload, extra_env={"XDG_DATA_HOME": str(data)})
    assert run.returncode == 0 and run.stdout == ""
    packet = json.loads(str(redis_client.get(redis_keys.handoff_latest(TENANT, "ses_oc1"))))
    assert f"Last ask: {ASK}" in packet["text"]
    entry = [e for e in hook_log(isolated_env) if e["event"] == "PreCompact"][-1]
    assert entry["outcome"] == "ok"
    if database == "garbage":
        assert any("not a readable OpenCode database" in n for n in entry["notes"]), entry
