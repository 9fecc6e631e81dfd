"""The real Codex compacts its own context (``codex exec`` / ``exec resume``, the mock model),
and nika's hooks hand off across it.

Codex compacts before a turn when the last answer's usage passed
``model_auto_compact_token_limit``: it asks the model for a summary (a "CONTEXT CHECKPOINT
COMPACTION" prompt), runs PreCompact, replaces its history, runs PostCompact and SessionStart
(twice: once for the compaction, once for the resumed thread), then the turn. Asserted, as the
model and nika see it: two compactions counted; the request after the second carries the newest
handoff packet of the session once (its last ask is the second task's, not the first's); no
``<nika-memory>`` block twice; the fill nika shows is Codex's own reading over the window Codex
reports (95% of ``model_context_window``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nika_tui.services import redis_keys
from nika_tui.services.agent_homes import codex_home
from nika_tui.services.wm_store import read_working_memory
from tests.agents.conftest import CLI_TIMEOUT_S, AgentTenant
from tests.agents.headless import run_ok
from tests.agents.mock_anthropic_openai import default_reply

pytestmark = [pytest.mark.agents, pytest.mark.slow]

WINDOW = 100_000
COMPACT_AT = 20_000
BELOW, ABOVE = 1_000, 50_000  # the usage the mock reports: under / over COMPACT_AT
COMPACTION_PROMPT = "CONTEXT CHECKPOINT COMPACTION"


def _reply(body: dict[str, Any]) -> str:
    items = body.get("input") or []
    last = json.dumps(items[-1] if isinstance(items, list) and items else "")
    if COMPACTION_PROMPT in last:
        return "<summary>Renaming billing to invoicing, then the CSV export queue.</summary>"
    return default_reply({"input": "a turn"})  # never the summary for an ordinary turn


def _turn(tenant: AgentTenant, binary: Path, prompt: str, usage: int, resume: bool = True) -> str:
    """One ``codex exec resume --last`` turn (``codex exec`` when not ``resume``), the mock
    reporting ``usage`` input tokens; returns Codex's output."""
    tenant.mock.input_tokens = usage
    env = {**tenant.env, "CODEX_HOME": str(codex_home(tenant.tenant_id)), "MOCK_API_KEY": "x"}
    argv = [str(binary), "exec", *(["resume", "--last"] if resume else []), prompt]
    proc = run_ok(argv, tenant.project, env, CLI_TIMEOUT_S, stdin=subprocess.DEVNULL)
    return proc.stdout + proc.stderr


def test_newest_handoff_after_two_codex_compactions_reaches_the_model_once(
    codex_bin: Path, agent_tenant: Any, redis_client: Any
) -> None:
    tenant = agent_tenant(["codex"])
    tenant.mock.reply = _reply
    config = codex_home(tenant.tenant_id) / "config.toml"
    limits = f"model_context_window = {WINDOW}\nmodel_auto_compact_token_limit = {COMPACT_AT}\n"
    config.write_text(limits + config.read_text())  # top-level keys go before the first table

    _turn(tenant, codex_bin, "Task alpha: rename the billing module to invoicing.", BELOW, False)
    _turn(tenant, codex_bin, "Task alpha continues: update the imports too.", ABOVE)
    first = _turn(tenant, codex_bin, "Task beta: move the CSV export to a worker queue.", BELOW)
    assert "context compacted" in first
    _turn(tenant, codex_bin, "Task beta continues: add a retry on failure.", ABOVE)
    tenant.mock.clear()
    second = _turn(tenant, codex_bin, "Where were we with the export?", BELOW)
    assert "context compacted" in second
    assert redis_client.xlen(redis_keys.compactions(tenant.tenant_id)) == 2

    session = _session_id(tenant)
    requests = tenant.mock.model_requests("/responses")
    assert any(COMPACTION_PROMPT in r.text() for r in requests)  # Codex's own compaction
    text = requests[-1].text()  # the turn after the second compaction
    assert text.count(f"HANDOFF PACKET session {session}") == 1
    assert "Last ask: Task beta continues: add a retry on failure." in text
    assert "Last ask: Task alpha continues" not in text  # not the older packet
    assert text.count("<nika-memory") == text.count("</nika-memory>") == 1

    # The fill: Codex's last reading (BELOW input tokens + the answer) over the window Codex
    # reports in its rollout: 95% of the configured one (it keeps 5% in reserve, and its own
    # "context left" is computed on that), not the configured 100,000.
    wm = read_working_memory(redis_client, tenant.tenant_id)
    assert wm is not None and wm.window == WINDOW * 95 // 100
    assert BELOW <= wm.tokens < BELOW + 100
    assert wm.fill_percent == pytest.approx(100.0 * wm.tokens / wm.window, abs=0.01)


def _session_id(tenant: AgentTenant) -> str:
    starts = [e for e in tenant.hook_log() if e.get("event") == "SessionStart"]
    assert starts, "no SessionStart hook ran"
    return str(starts[-1]["session"])
