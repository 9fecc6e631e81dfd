"""The agent-cli tier's batch against the real `claude -p` and `codex exec` binaries.

The binaries are the pinned npm packages (``tests/agents/cli_install.py``); their model API is
a local stand-in (``tests/agents/judge_model_server.py``: Anthropic Messages for Claude Code,
OpenAI Responses for Codex, streamed), so the test checks what we own: the argv, the prompt on
stdin, one run for many pairs, and the strict reading of each CLI's output.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from nika_tui.domain.verdicts import Fact, Verdict
from nika_tui.services.judges.agent_cli import AgentCliJudge, CliFlavor
from tests.agents.cli_install import CliInstallError, install_cli
from tests.agents.judge_model_server import JudgeModelServer

pytestmark = [pytest.mark.agents, pytest.mark.slow]

KEY = "sk-standin-judge"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
PAIRS = [
    (Fact("Staging is host-a.", T0), Fact("Staging moved to host-b.", T0 + timedelta(days=3))),
    (Fact("CI runs on Jenkins.", T0), Fact("Lunch is on Friday.", T0 + timedelta(days=3))),
    (Fact("Le port est 80.", T0), Fact("Le port a moved vers 443.", T0 + timedelta(days=3))),
]


@pytest.fixture
def model_server() -> Iterator[JudgeModelServer]:
    server = JudgeModelServer(KEY)
    yield server
    server.close()


def _binary(package: str) -> Path:
    try:
        return install_cli(package)
    except CliInstallError as exc:
        pytest.skip(f"cannot install {package}: {exc}")


def test_claude_judges_a_batch_in_one_run(model_server: JudgeModelServer, tmp_path: Path) -> None:
    exe = _binary("@anthropic-ai/claude-code")
    env = {
        "ANTHROPIC_BASE_URL": model_server.url,
        "ANTHROPIC_API_KEY": KEY,
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home"),
        "HOME": str(tmp_path),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    judge = AgentCliJudge(CliFlavor.CLAUDE, executable=str(exe), extra_env=env, timeout_s=120)
    answers = judge.judge_batch(PAIRS)
    assert [a.verdict for a in answers] == [Verdict.REPLACE, Verdict.KEEP, Verdict.REPLACE]
    batches = [r.body for r in model_server.model_requests("/messages")]
    sent = [b for b in batches if "Pairs:" in str(b)]
    assert len(sent) == 1  # one model call for the three pairs
    assert "Le port est 80." in str(sent[0])


def test_codex_judges_a_batch_in_one_run(model_server: JudgeModelServer, tmp_path: Path) -> None:
    exe = _binary("@openai/codex")
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "gpt-stand-in"\nmodel_provider = "standin"\n'
        "[model_providers.standin]\n"
        f'name = "standin"\nbase_url = "{model_server.url}/v1"\n'
        'env_key = "STANDIN_API_KEY"\nwire_api = "responses"\n',
        encoding="utf-8",
    )
    env = {"CODEX_HOME": str(home), "HOME": str(tmp_path), "STANDIN_API_KEY": KEY}
    judge = AgentCliJudge(CliFlavor.CODEX, executable=str(exe), extra_env=env, timeout_s=120)
    answers = judge.judge_batch(PAIRS)
    assert [a.verdict for a in answers] == [Verdict.REPLACE, Verdict.KEEP, Verdict.REPLACE]
    sent = [r.body for r in model_server.model_requests("/responses")]
    assert len([b for b in sent if "Pairs:" in str(b)]) == 1


def test_a_refused_key_is_uncertain_for_every_pair(
    model_server: JudgeModelServer, tmp_path: Path
) -> None:
    exe = _binary("@anthropic-ai/claude-code")
    env = {
        "ANTHROPIC_BASE_URL": model_server.url,
        "ANTHROPIC_API_KEY": "sk-wrong",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-home"),
        "HOME": str(tmp_path),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Claude Code retries a refused request about ten times with backoff (two minutes);
        # one try shows the refusal itself, not the judge's deadline.
        "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    judge = AgentCliJudge(CliFlavor.CLAUDE, executable=str(exe), extra_env=env, timeout_s=120)
    answers = judge.judge_batch(PAIRS)
    assert {a.verdict for a in answers} == {Verdict.UNCERTAIN}
    assert all(a.reason.startswith("claude:") for a in answers)
    assert all("Invalid API key" in a.reason for a in answers)  # the refusal, not a deadline
