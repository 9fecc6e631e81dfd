"""The agent-cli tier writes the digest: the real ``claude -p``, headless, against the mock model.

Privacy ``default`` and ``compress.digest: llm``: ``nika compress`` runs the tenant's own Claude
Code (found on PATH, with the tenant's agent home, as the judge runs it) with the digest prompt
on stdin. The mock Anthropic server (:mod:`tests.agents.mock_anthropic_openai`) answers a digest
request from the node blocks it receives, citing each node's first candidate id; what the test
checks is ours: the prompt that reached the model, the strict reading of the CLI's answer, the
files written, and that the private tree never goes to the CLI.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.digest_prompt import DIGEST_SYSTEM_PROMPT
from nika_tui.domain.tenant import (
    AgentCli,
    CompressConfig,
    DigestMode,
    JudgeConfig,
    JudgeKind,
    KernelConfig,
    Privacy,
)
from nika_tui.engine.compress import compress
from nika_tui.engine.context import EngineContext
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.agents.mock_anthropic_openai import MockModelServer, default_reply
from tests.engine.strategy_a_seed import PRIVATE_TEXTS, seed_history

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]
TENANT = "acme"
_NODE = re.compile(r"^NODE (\S+) \((\w+),", re.M)
_IDS = re.compile(r"^- \[([^\]]+)\]", re.M)
MARK = "written by the agent CLI"


def _digest_reply(body: dict[str, Any]) -> str:
    """The stand-in model: a digest request gets one ``current`` line per node."""
    prompt = "\n".join(
        m["content"] if isinstance(m["content"], str)
        else "\n".join(b.get("text", "") for b in m["content"] if isinstance(b, dict))
        for m in body.get("messages") or [] if m.get("role") == "user"
    )  # fmt: skip
    if DIGEST_SYSTEM_PROMPT[:60] not in prompt:
        return default_reply(body)
    nodes = []
    for block in re.split(r"(?=^NODE )", prompt, flags=re.M):
        head, first = _NODE.search(block), _IDS.search(block)
        if head and first:
            line = {"text": f"{head.group(1)} {MARK}", "ids": [first.group(1).split(", ")[0]]}
            nodes.append({"node_id": head.group(1), "decided": [], "current": [line], "open": []})
    return json.dumps({"nodes": nodes})


def test_claude_writes_the_digest_headless(
    engine_ctx: EngineContext,
    make_tenant: Any,
    mock_model: MockModelServer,
    claude_bin: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant(TENANT)
    mock_model.reply = _digest_reply
    # The CLI's key is in the environment (never in the config); its base URL is a non-secret
    # kernel variable, so the judge's run inherits both as a kernel's would.
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-secret")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", f"{claude_bin.parent}{os.pathsep}{os.environ['PATH']}")
    config = load_tenant(TENANT)
    save_tenant(config.model_copy(update={
        "privacy": Privacy.DEFAULT,
        "agent_cli": AgentCli.CLAUDE_CODE,
        "judge": JudgeConfig(kind=JudgeKind.AGENT_CLI),
        "compress": CompressConfig(digest=DigestMode.LLM),
        "kernel": KernelConfig(env={"ANTHROPIC_BASE_URL": mock_model.url,
                                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                                    "DISABLE_AUTOUPDATER": "1"}),
    }))  # fmt: skip
    environ = dict(os.environ)
    ctx = dataclasses.replace(engine_ctx, child_env=environ, secrets_env=environ)
    seeded = seed_history(ctx, TENANT)

    result = compress(ctx, TENANT, tmp_path / "repo").to_dict()

    digest = result["digest"]
    assert digest["mode"] == "llm", digest["reason"]
    assert digest["reason"].startswith("agent-cli judge: ")
    assert digest["fallbacks"] == {} and digest["llm_nodes"], digest
    asked = [r for r in mock_model.model_requests("/messages") if DIGEST_SYSTEM_PROMPT[:60]
             in r.text()]  # fmt: skip
    assert len(asked) == digest["requests"]  # one CLI run, one model call, per level / chunk
    (path,) = (tmp_path / "repo" / "knowledge" / "digest").glob("*.jsonl")
    rows = {r["node_id"]: r for r in map(json.loads, path.read_text().splitlines())}
    for node_id in digest["llm_nodes"]:
        assert rows[node_id]["written_by"] == "llm"
        assert f"{node_id} {MARK}" in [line["text"] for line in rows[node_id]["current"]]
    # The private tree is not sent to the CLI's provider: offline, and said why.
    private = result["private"]["digest"]
    assert private["mode"] == "offline" and "agent CLI sends to its provider" in private["reason"]
    sent = "\n".join(r.text() for r in mock_model.model_requests())
    assert not any(text in sent for text in PRIVATE_TEXTS)
    assert seeded.ids["private"] not in sent and seeded.ids["secret"] not in sent
