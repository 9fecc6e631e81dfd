"""Model-backed judges against protocol-level stand-ins, and the privacy-mode factory.

- agent-cli: a stand-in ``claude`` / ``codex`` executable placed first on PATH that speaks the
  real output format (Claude Code's ``--output-format json`` result envelope; Codex's final
  message on stdout, progress on stderr).
- http: a local HTTP server on 127.0.0.1 speaking OpenAI chat completions.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.judge_rules import RulesJudge
from nika_tui.domain.tenant import (
    AgentCli,
    JudgeConfig,
    JudgeKind,
    Privacy,
    SecretRef,
    SecretSource,
    TenantConfig,
)
from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.errors import ConfigError
from nika_tui.paths import Roots
from nika_tui.services.judges import judge_by_name, judge_for, select_judge
from nika_tui.services.judges.agent_cli import AgentCliJudge, CliFlavor
from nika_tui.services.judges.cascade import CascadeJudge
from nika_tui.services.judges.factory import is_loopback
from nika_tui.services.judges.http import HttpJudge, completions_url
from nika_tui.services.judges.offline import OfflineJudge
from nika_tui.settings import Settings
from tests.support.agent_cli_standin import install_standin as _install

T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
OLD = Fact("The staging host is stg-1.corp.", T0)
NEW = Fact("Staging moved to stg-2.corp; secret-canary-7731.", T0 + timedelta(days=3))


@pytest.fixture
def cli_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stand-in claude and codex first on PATH; records go to tmp_path/record.json."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _install(bin_dir, "claude")
    _install(bin_dir, "codex")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("NIKA_STANDIN_RECORD", str(tmp_path / "record.json"))
    return bin_dir


def _record(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "record.json").read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("flavor", list(CliFlavor), ids=[f.value for f in CliFlavor])
def test_agent_cli_reads_the_verdict_facts_on_stdin_only(
    flavor: CliFlavor, cli_bin: Path, tmp_path: Path
) -> None:
    judgement = AgentCliJudge(flavor=flavor).judge(OLD, NEW)
    assert judgement.verdict is Verdict.REPLACE
    assert judgement.reason == "the staging host moved"
    assert judgement.judge == "agent-cli"
    record = _record(tmp_path)
    assert "secret-canary-7731" in record["stdin"]
    assert OLD.text in record["stdin"]
    assert not any("secret-canary" in arg or "stg-1" in arg for arg in record["argv"])
    if flavor is CliFlavor.CLAUDE:
        assert record["argv"][1:] == ["-p", "--output-format", "json"]
    else:
        assert record["argv"][1] == "exec" and record["argv"][-1] == "-"


def test_agent_cli_keep_passes_through(cli_bin: Path) -> None:
    quiet = Fact("Staging data refreshes on Sundays.", T0 + timedelta(days=3))
    assert AgentCliJudge(flavor=CliFlavor.CLAUDE).judge(OLD, quiet).verdict is Verdict.KEEP


@pytest.mark.parametrize(
    ("flavor", "mode", "fragment"),
    [
        (CliFlavor.CLAUDE, "garbage", "unparsable"),
        (CliFlavor.CODEX, "garbage", "unparsable"),
        (CliFlavor.CLAUDE, "error", "reported an error"),
        (CliFlavor.CLAUDE, "bad-json", "JSON envelope"),
        (CliFlavor.CLAUDE, "exit", "status 3: auth expired"),
        (CliFlavor.CODEX, "hang", "no answer within"),
    ],
    ids=["claude-garbage", "codex-garbage", "claude-is-error", "claude-bad-json", "exit", "hang"],
)
def test_agent_cli_failures_are_uncertain(
    flavor: CliFlavor, mode: str, fragment: str, cli_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NIKA_STANDIN_MODE", mode)
    judgement = AgentCliJudge(flavor=flavor, timeout_s=1.0).judge(OLD, NEW)
    assert judgement.verdict is Verdict.UNCERTAIN
    assert fragment in judgement.reason


def test_agent_cli_missing_binary_is_uncertain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    judgement = AgentCliJudge(flavor=CliFlavor.CLAUDE).judge(OLD, NEW)
    assert judgement.verdict is Verdict.UNCERTAIN
    assert "not on PATH" in judgement.reason


# --- http -------------------------------------------------------------------------------


class _ChatServer:
    """OpenAI-compatible /v1/chat/completions on 127.0.0.1; ``mode`` picks the behaviour."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict[str, Any]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
                )
                if server.mode == "hang":
                    server.release.wait(10)
                    return
                if server.mode == "500":
                    self._send(500, {"error": {"message": "boom"}})
                    return
                user = body["messages"][-1]["content"]
                content = "REPLACE\nit moved" if "moved" in user else "KEEP\nboth hold"
                if server.mode == "garbage":
                    content = "no idea"
                if server.mode == "not-chat":
                    self._send(200, {"object": "list", "data": []})
                    return
                self._send(
                    200,
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def close(self) -> None:
        if self.release.is_set():
            return
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[_ChatServer]:
    server = _ChatServer()
    yield server
    server.close()


def test_http_judge_speaks_chat_completions(chat_server: _ChatServer) -> None:
    judge = HttpJudge(endpoint=chat_server.url, model="judge-1", api_key="sk-test-123")
    judgement = judge.judge(OLD, NEW)
    assert (judgement.verdict, judgement.reason, judgement.judge) == (
        Verdict.REPLACE,
        "it moved",
        "http",
    )
    request = chat_server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test-123"
    assert request["body"]["model"] == "judge-1"
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    assert "sk-test-123" not in repr(judge)


@pytest.mark.parametrize(
    ("mode", "fragment"),
    [
        ("500", "HTTP 500"),
        ("hang", "no answer within"),
        ("garbage", "unparsable"),
        ("not-chat", "not a chat completion"),
    ],
)
def test_http_failures_are_uncertain(chat_server: _ChatServer, mode: str, fragment: str) -> None:
    chat_server.mode = mode
    judgement = HttpJudge(endpoint=chat_server.url, timeout_s=0.5).judge(OLD, NEW)
    assert judgement.verdict is Verdict.UNCERTAIN
    assert fragment in judgement.reason


def test_http_unreachable_is_uncertain(chat_server: _ChatServer) -> None:
    url = chat_server.url
    chat_server.close()
    judgement = HttpJudge(endpoint=url, timeout_s=2).judge(OLD, NEW)
    assert judgement.verdict is Verdict.UNCERTAIN
    assert "cannot reach" in judgement.reason


def test_completions_url() -> None:
    assert completions_url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert completions_url("https://api.x.io") == "https://api.x.io/v1/chat/completions"
    assert completions_url("http://h/v1/chat/completions") == "http://h/v1/chat/completions"


# --- factory: privacy mode → judge ------------------------------------------------------


def _llm_tier(judge: Any) -> Any:
    """On the ingest path an allowed LLM judge is the cascade's second tier."""
    assert isinstance(judge, CascadeJudge)
    return judge.llm


def _where() -> Roots:
    """The roots of this test's settings (its temp data dir): where the agent homes are."""
    return Settings.from_env().roots


def _tenant(**kw: Any) -> TenantConfig:
    return TenantConfig(tenant_id="acme", display_name="Acme", **kw)


def test_local_privacy_is_the_offline_judge() -> None:
    sel = select_judge(_tenant(privacy=Privacy.LOCAL), _where())
    assert isinstance(sel.judge, OfflineJudge) and not sel.fallback


def test_local_privacy_allows_loopback_http_only(chat_server: _ChatServer) -> None:
    loop = _tenant(
        privacy=Privacy.LOCAL, judge=JudgeConfig(kind=JudgeKind.HTTP, endpoint=chat_server.url)
    )
    assert isinstance(judge_for(loop, _where()), CascadeJudge) and isinstance(
        select_judge(loop, _where()).judge, HttpJudge
    )
    remote = _tenant(
        privacy=Privacy.LOCAL,
        judge=JudgeConfig(kind=JudgeKind.HTTP, endpoint="https://api.example.com/v1"),
    )
    sel = select_judge(remote, _where())
    assert isinstance(sel.judge, OfflineJudge) and sel.fallback
    assert "privacy local" in sel.reason


def test_default_privacy_uses_the_tenants_cli(cli_bin: Path) -> None:
    for cli, flavor in (
        (AgentCli.CLAUDE_CODE, CliFlavor.CLAUDE),
        (AgentCli.CODEX, CliFlavor.CODEX),
    ):
        judge = _llm_tier(judge_for(_tenant(privacy=Privacy.DEFAULT, agent_cli=cli), _where()))
        assert isinstance(judge, AgentCliJudge) and judge.flavor is flavor
        assert judge.executable == str(cli_bin / flavor.value)


def test_default_privacy_falls_back_to_rules_when_cli_missing(tmp_path: Path) -> None:
    sel = select_judge(
        _tenant(privacy=Privacy.DEFAULT, agent_cli=AgentCli.CLAUDE_CODE),
        _where(),
        path=str(tmp_path),
    )
    assert isinstance(sel.judge, OfflineJudge) and sel.fallback
    assert "`claude` is not installed" in sel.reason
    shell = select_judge(_tenant(privacy=Privacy.DEFAULT, agent_cli=AgentCli.SHELL), _where())
    assert isinstance(shell.judge, OfflineJudge) and "no headless judge" in shell.reason


def test_default_privacy_respects_an_explicit_rules_choice(cli_bin: Path) -> None:
    cfg = _tenant(
        privacy=Privacy.DEFAULT,
        agent_cli=AgentCli.CLAUDE_CODE,
        judge=JudgeConfig(kind=JudgeKind.RULES),
    )
    assert isinstance(judge_for(cfg, _where()), RulesJudge)


def test_cloud_privacy_uses_http_with_key_from_env(chat_server: _ChatServer) -> None:
    ref = SecretRef(source=SecretSource.ENV, name="ACME_JUDGE_KEY")
    cfg = _tenant(
        privacy=Privacy.CLOUD,
        judge=JudgeConfig(kind=JudgeKind.HTTP, endpoint=chat_server.url, model="m", api_key=ref),
    )
    judge = _llm_tier(judge_for(cfg, _where(), secrets_env={"ACME_JUDGE_KEY": "sk-env-9"}))
    assert isinstance(judge, HttpJudge)
    assert judge.judge(OLD, NEW).verdict is Verdict.REPLACE
    assert chat_server.requests[0]["auth"] == "Bearer sk-env-9"
    missing = select_judge(cfg, _where(), secrets_env={})
    assert isinstance(missing.judge, OfflineJudge) and "ACME_JUDGE_KEY is not set" in missing.reason


def test_cloud_privacy_without_endpoint_falls_back() -> None:
    sel = select_judge(
        _tenant(privacy=Privacy.CLOUD, judge=JudgeConfig(kind=JudgeKind.HTTP)), _where()
    )
    assert isinstance(sel.judge, OfflineJudge) and "no judge endpoint" in sel.reason


def test_is_loopback() -> None:
    assert is_loopback("http://127.0.0.1:8000/v1")
    assert is_loopback("http://localhost/v1")
    assert is_loopback("http://[::1]:9/v1")
    assert not is_loopback("https://api.example.com/v1")
    assert not is_loopback("http://10.0.0.1/v1")


def test_judge_by_name(cli_bin: Path, chat_server: _ChatServer) -> None:
    assert isinstance(judge_by_name("rules"), RulesJudge)
    codex = judge_by_name("agent-cli", cli="codex")
    assert isinstance(codex, AgentCliJudge) and codex.flavor is CliFlavor.CODEX
    assert isinstance(judge_by_name("http", endpoint=chat_server.url), HttpJudge)
    with pytest.raises(ConfigError, match="unknown judge"):
        judge_by_name("oracle")
    with pytest.raises(ConfigError, match="needs an endpoint"):
        judge_by_name("http")


def test_judge_by_name_agent_cli_missing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="no agent CLI found"):
        judge_by_name("agent-cli")


def test_cloud_privacy_key_from_the_tenants_keyring(
    chat_server: _ChatServer, memory_keyring: Any
) -> None:
    memory_keyring.entries[("nika-os/acme", "judge.api_key")] = "sk-ring-4"
    ref = SecretRef(source=SecretSource.KEYRING, name="judge.api_key")
    cfg = _tenant(
        privacy=Privacy.CLOUD,
        judge=JudgeConfig(kind=JudgeKind.HTTP, endpoint=chat_server.url, api_key=ref),
    )
    judge = _llm_tier(judge_for(cfg, _where()))
    assert isinstance(judge, HttpJudge)
    judge.judge(OLD, NEW)
    assert chat_server.requests[0]["auth"] == "Bearer sk-ring-4"
    memory_keyring.entries.clear()
    empty = select_judge(cfg, _where())
    assert isinstance(empty.judge, OfflineJudge) and "judge.api_key is empty" in empty.reason


def test_agent_cli_judge_runs_in_the_tenants_agent_home(
    cli_bin: Path, tmp_path: Path, isolated_env: dict[str, str]
) -> None:
    judge = _llm_tier(
        judge_for(_tenant(privacy=Privacy.DEFAULT, agent_cli=AgentCli.CLAUDE_CODE), _where())
    )
    assert isinstance(judge, AgentCliJudge)
    home = judge.extra_env["CLAUDE_CONFIG_DIR"]
    assert home.startswith(isolated_env["NIKA_OS_DATA_DIR"]) and "acme" in home
    assert Path(home).stat().st_mode & 0o777 == 0o700
