"""The LLM-written digest (``compress.digest: llm``) against a real OpenAI-compatible stand-in.

The stand-in is an HTTP server on 127.0.0.1 that answers ``/v1/chat/completions`` from the
prompt it receives: one ``current`` line per node citing the node's first candidate id, or, for
the nodes a test names, an unknown id, a malformed entry, or no JSON at all. For a non-loopback
endpoint the stand-in is reached as the HTTP proxy (``HTTP_PROXY``): a request the privacy mode
forbids would land there, so "no request" is checked where it would be seen.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.digest_prompt import DIGEST_SYSTEM_PROMPT
from nika_tui.domain.tenant import CompressConfig, DigestMode, JudgeConfig, JudgeKind, Privacy
from nika_tui.engine.compress import compress
from nika_tui.engine.context import EngineContext
from nika_tui.services.config_store import load_tenant, save_tenant
from tests.engine.strategy_a_seed import PRIVATE_TEXTS, seed_history

pytestmark = pytest.mark.embedder
TENANT = "acme"
_NODE = re.compile(r"^NODE (\S+) \((\w+),", re.M)
_IDS = re.compile(r"^- \[([^\]]+)\]", re.M)


class StandIn:
    """OpenAI-compatible chat completions on 127.0.0.1 that writes digests from the prompt."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.bad: dict[str, str] = {}
        """node id → ``unknown-id`` | ``id:ID`` (cite ``ID``) | ``malformed``."""
        self.garbage_levels: set[str] = set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body})
                user = body["messages"][-1]["content"]
                content = server.answer(user)
                raw = json.dumps(
                    {"id": "c1", "object": "chat.completion", "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": content}}]}
                ).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def answer(self, user: str) -> str:
        blocks = re.split(r"(?=^NODE )", user, flags=re.M)
        nodes = []
        for block in blocks:
            head = _NODE.search(block)
            if head is None:
                continue
            node_id, level = head.group(1), head.group(2)
            if level in self.garbage_levels:
                return "Sure! Here is the digest you asked for."
            first = _IDS.search(block)
            assert first is not None, block
            ids = [first.group(1).split(", ")[0]]
            entry: dict[str, Any] = {
                "node_id": node_id,
                "decided": [],
                "current": [{"text": f"LLM digest of {node_id}", "ids": ids}],
                "open": [],
            }
            if self.bad.get(node_id, "").startswith("id:"):  # an id of another node
                entry["current"][0]["ids"] = [*ids, self.bad[node_id][3:]]
            elif self.bad.get(node_id) == "unknown-id":
                entry["current"][0]["ids"] = [*ids, "not-a-memory-of-this-node"]
            elif self.bad.get(node_id) == "malformed":
                entry["decided"] = "everything"
            nodes.append(entry)
        return "```json\n" + json.dumps({"nodes": nodes}) + "\n```"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stand_in() -> Iterator[StandIn]:
    server = StandIn()
    yield server
    server.close()


def _configure(privacy: Privacy, endpoint: str, digest: DigestMode = DigestMode.LLM) -> None:
    config = load_tenant(TENANT)
    save_tenant(
        config.model_copy(
            update={
                "privacy": privacy,
                "judge": JudgeConfig(kind=JudgeKind.HTTP, endpoint=endpoint, model="digest-1"),
                "compress": CompressConfig(digest=digest),
            }
        )
    )


def _rows(root: Path) -> dict[str, dict[str, Any]]:
    (path,) = (root / "knowledge" / "digest").glob("*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["node_id"]: r for r in rows}


def _md(root: Path) -> str:
    (path,) = (root / "knowledge" / "digest").glob("*.md")
    return path.read_text()


def _sent(stand_in: StandIn) -> str:
    return "\n".join(m["content"] for r in stand_in.requests for m in r["body"]["messages"])


def test_llm_lines_land_in_the_digest_with_their_ids(
    engine_ctx: EngineContext, make_tenant: Any, stand_in: StandIn, tmp_path: Path
) -> None:
    make_tenant(TENANT)
    _configure(Privacy.LOCAL, stand_in.url)  # a loopback endpoint: allowed even under local
    seed_history(engine_ctx, TENANT)
    offline = _rows(_offline(engine_ctx, tmp_path))
    result = compress(engine_ctx, TENANT, tmp_path / "repo").to_dict()

    digest = result["digest"]
    assert digest["mode"] == "llm" and digest["fallbacks"] == {}
    rows = _rows(tmp_path / "repo")
    assert digest["llm_nodes"] and set(digest["llm_nodes"]) <= set(rows)
    for node_id in digest["llm_nodes"]:
        row = rows[node_id]
        llm_lines = [x for x in row["current"] if x["text"] == f"LLM digest of {node_id}"]
        assert len(llm_lines) == 1 and row["written_by"] == "llm"
        candidates = {i for s in ("decided", "current", "open") for x in offline[node_id][s]
                      for i in x["ids"]}  # fmt: skip
        assert llm_lines[0]["ids"] and set(llm_lines[0]["ids"]) <= candidates
        # the status line comes from the hierarchy, never from the LLM
        assert row["current"][0] == offline[node_id]["current"][0]
        assert row["current"][0]["text"].startswith("status: ")
    md = _md(tmp_path / "repo")
    assert "Digest: llm (http judge at" in md and "Fell back" not in md
    shop_id = rows["shop"]["current"][1]["ids"][0]
    assert f"- LLM digest of shop `{shop_id}`" in md
    # one batched call per level and tree (strategy, project, job, task: ≤ 8 nodes each)
    levels = {r["level"] for r in rows.values()}
    private = result["private"]["digest"]
    assert digest["requests"] == len(levels)
    assert len(stand_in.requests) == digest["requests"] + private["requests"]
    first = stand_in.requests[0]["body"]
    assert first["messages"][0]["content"] == DIGEST_SYSTEM_PROMPT
    assert first["model"] == "digest-1" and first["temperature"] == 0


def _offline(engine_ctx: EngineContext, tmp_path: Path) -> Path:
    """The same store compressed with the offline digest (to compare against)."""
    config = load_tenant(TENANT)
    save_tenant(config.model_copy(update={"compress": CompressConfig()}))
    compress(engine_ctx, TENANT, tmp_path / "offline")
    save_tenant(config)
    return tmp_path / "offline"


@pytest.mark.parametrize(
    ("bad", "garbage", "fallen", "reason"),
    [
        ({"shop": "unknown-id"}, set(), {"shop"}, "not-a-memory-of-this-node"),
        ({"search": "id:gamma"}, set(), {"search"}, "not among the node's memories"),
        ({"search": "malformed"}, set(), {"search"}, "section decided is not a list"),
        ({}, {"task"}, {"search-index"}, "the answer is not JSON"),
    ],
)
def test_a_bad_answer_falls_back_for_that_node_only(
    engine_ctx: EngineContext,
    make_tenant: Any,
    stand_in: StandIn,
    tmp_path: Path,
    bad: dict[str, str],
    garbage: set[str],
    fallen: set[str],
    reason: str,
) -> None:
    make_tenant(TENANT)
    _configure(Privacy.LOCAL, stand_in.url)
    seeded = seed_history(engine_ctx, TENANT)
    offline = _rows(_offline(engine_ctx, tmp_path))
    # ``id:gamma``: a real memory, but of the infra project, not of the shop's search job
    bad = {k: f"id:{seeded.ids['gamma']}" if v == "id:gamma" else v for k, v in bad.items()}
    stand_in.bad, stand_in.garbage_levels = bad, garbage
    digest = compress(engine_ctx, TENANT, tmp_path / "repo").to_dict()["digest"]

    assert set(digest["fallbacks"]) == fallen
    assert all(reason in why for why in digest["fallbacks"].values())
    rows = _rows(tmp_path / "repo")
    for node_id, row in rows.items():
        sections = {s: row[s] for s in ("decided", "current", "open")}
        if node_id in fallen:
            assert row["written_by"] == "offline" and reason in row["fallback"]
            assert sections == {s: offline[node_id][s] for s in sections}
        else:
            assert row["written_by"] == "llm" and row["fallback"] is None
    assert len(digest["llm_nodes"]) == len(rows) - len(fallen) > 0
    md = _md(tmp_path / "repo")
    assert "Fell back to the offline digest:" in md
    assert all(f"- `{node_id}`: " in md for node_id in fallen)


def test_local_privacy_without_a_local_endpoint_stays_offline_and_sends_nothing(
    engine_ctx: EngineContext,
    make_tenant: Any,
    stand_in: StandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant(TENANT)
    # A remote endpoint whose traffic would reach the stand-in (as the proxy): see the next test.
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{stand_in.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    _configure(Privacy.LOCAL, "http://llm.example.test/v1")
    seed_history(engine_ctx, TENANT)
    offline = _offline(engine_ctx, tmp_path)
    result = compress(engine_ctx, TENANT, tmp_path / "repo").to_dict()

    assert stand_in.requests == []
    for digest in (result["digest"], result["private"]["digest"]):
        assert digest["mode"] == "offline" and digest["requests"] == 0
        assert "privacy local allows no LLM tier" in digest["reason"]
    assert "Digest: offline (privacy local" in _md(tmp_path / "repo")
    rows, before = _rows(tmp_path / "repo"), _rows(offline)
    assert {k: {s: r[s] for s in ("decided", "current", "open")} for k, r in rows.items()} == {
        k: {s: r[s] for s in ("decided", "current", "open")} for k, r in before.items()
    }


def test_private_memories_never_reach_a_remote_llm(
    engine_ctx: EngineContext,
    make_tenant: Any,
    stand_in: StandIn,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant(TENANT)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{stand_in.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    _configure(Privacy.CLOUD, "http://llm.example.test/v1")
    seeded = seed_history(engine_ctx, TENANT)
    result = compress(engine_ctx, TENANT, tmp_path / "repo").to_dict()

    # cloud privacy: the shareable tree's digest goes to the remote endpoint (the proxy sees it)
    assert result["digest"]["mode"] == "llm" and result["digest"]["requests"] > 0
    assert stand_in.requests[0]["path"] == "http://llm.example.test/v1/chat/completions"
    # the private tree stays offline: no private text or id is in any request
    private = result["private"]["digest"]
    assert private["mode"] == "offline" and "loopback LLM only" in private["reason"]
    assert len(stand_in.requests) == result["digest"]["requests"]
    sent = _sent(stand_in)
    assert not any(text in sent for text in PRIVATE_TEXTS)
    assert seeded.ids["private"] not in sent and seeded.ids["secret"] not in sent


def test_offline_setting_writes_the_offline_digest_unmarked(
    engine_ctx: EngineContext, make_tenant: Any, stand_in: StandIn, tmp_path: Path
) -> None:
    make_tenant(TENANT)
    _configure(Privacy.LOCAL, stand_in.url, DigestMode.OFFLINE)
    seed_history(engine_ctx, TENANT)
    result = compress(engine_ctx, TENANT, tmp_path / "repo").to_dict()
    assert stand_in.requests == [] and result["digest"]["mode"] == "offline"
    assert "Digest:" not in _md(tmp_path / "repo")
    assert all("written_by" not in row for row in _rows(tmp_path / "repo").values())


def test_a_failed_call_falls_back_for_every_node_of_that_call(stand_in: StandIn) -> None:
    from nika_tui.domain.synthesis import DigestLine, NodeDigest
    from nika_tui.services.digest_writer import llm_digests
    from nika_tui.services.judges.http import HttpJudge

    def node(node_id: str, level: str, memory: str) -> NodeDigest:
        d = NodeDigest(node_id, level, "", "todo", None)
        d.current = [
            DigestLine("status: todo (from the hierarchy)", ()),
            DigestLine("x", (memory,)),
        ]
        return d

    digests = [node("p1", "project", "m1"), node("j1", "job", "m2")]
    url = stand_in.url
    stand_in.close()  # nothing listens there any more
    out, outcome = llm_digests(HttpJudge(endpoint=url, timeout_s=2), digests, "test")
    assert out == digests and outcome.llm_nodes == [] and outcome.requests == 2
    assert set(outcome.fallbacks) == {"p1", "j1"}
    assert all("cannot reach" in why for why in outcome.fallbacks.values())
