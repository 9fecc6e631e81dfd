"""Gemini CLI session files and the Gemini / OpenCode installers (real files in temp dirs)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from nika_tui.errors import ConfigError
from nika_tui.services.gemini_sessions import (
    GEMINI_WINDOW,
    compression_due,
    compression_threshold,
    read_exchange,
)
from nika_tui.services.gemini_settings import gemini_home, install_gemini_hooks
from nika_tui.services.opencode_settings import (
    PLUGIN_NAME,
    install_opencode_plugin,
    opencode_config_dir,
)

PREFIX = ["/opt/nika/bin/nika"]


def _session(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"torn": ')
    return path


def _gemini(
    tokens: int, text: str = "done", model: str = "gemini-3.1-pro-preview"
) -> dict[str, Any]:
    return {
        "id": "m",
        "timestamp": "2026-12-03T12:31:27.056Z",
        "type": "gemini",
        "content": text,
        "tokens": {"input": tokens, "output": 10, "total": tokens + 10},
        "model": model,
    }


def test_the_fill_is_the_last_answer_over_gemini_clis_window(tmp_path: Path) -> None:
    path = _session(
        tmp_path / "s.jsonl",
        {"sessionId": "abc", "kind": "main"},
        {"type": "user", "content": [{"text": "first question"}]},
        _gemini(10_000, "first answer"),
        {"type": "user", "content": [{"text": "second question"}]},
        _gemini(524_288, "second answer"),
    )
    exchange = read_exchange(path)
    assert exchange.fill is not None
    assert (exchange.fill.tokens, exchange.fill.window) == (524_288, GEMINI_WINDOW)
    assert exchange.fill.fill_percent == 50.0
    assert exchange.fill.format.value == "gemini-cli"
    assert (exchange.last_user, exchange.last_reply) == ("second question", "second answer")


def test_a_history_rewrite_resets_the_fill_and_gemma_has_its_own_window(tmp_path: Path) -> None:
    rewritten = _session(
        tmp_path / "a.jsonl",
        _gemini(900_000),
        {"$set": {"messages": [{"type": "user", "content": [{"text": "<state_snapshot/>"}]}]}},
    )
    assert read_exchange(rewritten).fill is None
    gemma = _session(tmp_path / "b.jsonl", _gemini(128_000, model="gemma-4-31b-it"))
    fill = read_exchange(gemma).fill
    assert fill is not None and (fill.window, fill.fill_percent) == (256_000, 50.0)


class Due(NamedTuple):
    test_id: str
    tokens: int
    settings: dict[str, Any]
    due: bool


@pytest.mark.parametrize(
    "case",
    [
        Due("below-default-half", 500_000, {}, False),
        Due("at-default-half", 524_288, {}, True),
        Due("our-61-below", 600_000, {"model": {"compressionThreshold": 0.61}}, False),
        Due("our-61-above", 650_000, {"model": {"compressionThreshold": 0.61}}, True),
        Due(
            "invalid-threshold-means-default", 524_288, {"model": {"compressionThreshold": 7}}, True
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_compression_runs_only_past_the_threshold(case: Due, tmp_path: Path) -> None:
    fill = read_exchange(_session(tmp_path / "s.jsonl", _gemini(case.tokens))).fill
    assert compression_due(fill, compression_threshold(case.settings)) is case.due


def test_gemini_install_merges_keeps_the_persons_settings_and_is_idempotent(
    tmp_path: Path,
) -> None:
    settings = gemini_home("acme") / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {"type": "command", "command": "~/bin/their-hook.sh", "timeout": 5000}
    settings.write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "model": {"compressionThreshold": 0.7},
                "hooks": {"BeforeAgent": [{"hooks": [theirs]}]},
            }
        )
    )
    workdir = tmp_path / "repo"
    workdir.mkdir()
    first = install_gemini_hooks("acme", prefix=PREFIX, workdir=workdir)
    data = json.loads(settings.read_text())
    assert data["security"]["auth"]["selectedType"] == "gemini-api-key"
    assert data["model"]["compressionThreshold"] == 0.7  # a person's own value is kept
    before_agent = data["hooks"]["BeforeAgent"]
    assert before_agent[0]["hooks"] == [theirs]
    assert before_agent[1]["hooks"] == [
        {
            "type": "command",
            "command": "/opt/nika/bin/nika hook gemini BeforeAgent",
            "timeout": 15000,
        }
    ]
    assert set(data["hooks"]) == {
        "SessionStart", "BeforeAgent", "AfterAgent", "PreCompress", "SessionEnd", "Notification",
        "AfterTool",
    }  # fmt: skip
    trusted = json.loads((settings.parent / "trustedFolders.json").read_text())
    assert trusted == {str(workdir.resolve()): "TRUST_FOLDER"}
    assert stat.S_IMODE(settings.stat().st_mode) == 0o600
    assert first.changed
    again = install_gemini_hooks("acme", prefix=PREFIX, workdir=workdir)
    assert again.changed == []


def test_gemini_install_sets_61_percent_when_unset_and_refuses_a_broken_file() -> None:
    install_gemini_hooks("acme", prefix=PREFIX)
    settings = gemini_home("acme") / ".gemini" / "settings.json"
    assert json.loads(settings.read_text())["model"]["compressionThreshold"] == 0.61
    settings.write_text("{not json")
    with pytest.raises(ConfigError):
        install_gemini_hooks("acme", prefix=PREFIX)
    assert settings.read_text() == "{not json"  # left untouched


def test_opencode_plugin_is_written_with_our_command_and_refreshed_only_when_it_differs() -> None:
    config = opencode_config_dir("acme")
    config.mkdir(parents=True)
    (config / "opencode.json").write_text('{"model": "theirs/model"}')
    report = install_opencode_plugin("acme", prefix=["/opt/my venv/bin/nika"])
    plugin = config / "plugin" / PLUGIN_NAME
    text = plugin.read_text()
    assert 'const NIKA = ["/opt/my venv/bin/nika"]' in text
    assert "__NIKA_COMMAND__" not in text
    assert report.changed == [plugin]
    assert install_opencode_plugin("acme", prefix=["/opt/my venv/bin/nika"]).changed == []
    moved = install_opencode_plugin("acme", prefix=["/srv/nika/bin/nika"])
    assert moved.changed == [plugin] and '["/srv/nika/bin/nika"]' in plugin.read_text()
    assert (config / "opencode.json").read_text() == '{"model": "theirs/model"}'
