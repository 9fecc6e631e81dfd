"""``nika import``'s skip lines for files that are not sessions it can read: each names the
file, why, and what the person can do; nothing of the file is queued and the rest goes on.

The skip paths of ``test_import_cli.py`` (malformed line, not UTF-8, binary, huge, symlink)
are not repeated here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.importer.import_run import T0, TENANT, TURNS, run_import, stream
from tests.importer.sessions_on_disk import claude_session


@pytest.fixture
def tenant(make_tenant: Callable[..., Any], redis_url: str) -> str:
    make_tenant(TENANT)
    return TENANT


def _reason(report: dict[str, Any], path: Path) -> str:
    """What follows ``skipped PATH:`` in the report (the one line that skips ``path``)."""
    [line] = [str(s) for s in report["skipped"] if str(s).startswith(f"skipped {path}: ")]
    return line.removeprefix(f"skipped {path}: ")


def test_files_in_no_known_format_are_skipped_with_what_to_do(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    src = tmp_path / "src"
    good = claude_session(src, "good", "/w/acme", T0, TURNS)
    folder = good.parent
    unknown = folder / "metrics.jsonl"  # valid JSONL, but no CLI writes it
    unknown.write_text('{"cpu": 0.4, "ts": 1}\n{"cpu": 0.5, "ts": 2}\n', encoding="utf-8")
    empty = folder / "empty.jsonl"
    empty.write_bytes(b"")
    blank = folder / "blank.jsonl"
    blank.write_text("\n\n", encoding="utf-8")
    cut = folder / "session-2026-03-02T09-00-cut1.json"  # a Gemini session cut short
    cut.write_text('{"sessionId": "cut1", "messages": [{"type": "user", "con', encoding="utf-8")
    not_gemini = folder / "session-settings.json"
    not_gemini.write_text(json.dumps({"theme": "dark"}), encoding="utf-8")
    script = folder / "deploy.py"
    script.write_text("print('deploy')\n", encoding="utf-8")

    code, report = run_import(str(src))

    assert code == 0
    assert _reason(report, unknown) == (
        "a JSONL file in no session format we know (Claude Code, Codex, Gemini): "
        "name only session files or folders of them"
    )
    assert _reason(report, empty) == _reason(report, blank)
    assert _reason(report, empty) == (
        "an empty session file: nothing to import (a session with no turns yet); "
        "import it again once it has some"
    )
    assert _reason(report, cut).startswith("malformed JSON (")
    assert "check the file is a complete Gemini CLI session" in _reason(report, cut)
    assert _reason(report, not_gemini) == (
        "a JSON file that is not a Gemini CLI session (no messages list): name only "
        "Gemini CLI's session files, or rename this one if it is not a session"
    )
    assert _reason(report, script).startswith("not a session, instruction file or document: ")
    assert "CLAUDE.md / AGENTS.md / GEMINI.md" in _reason(report, script)
    assert len(report["skipped"]) == 6, report["skipped"]
    # Nothing of the skipped files is queued; the good session is, whole.
    assert report["queued"] == 5
    assert {r.meta.source.rsplit(":", 1)[0] for r in stream(redis_client)} == {str(good.resolve())}


def test_a_corrupt_opencode_database_and_a_session_without_id_say_what_to_do(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    corrupt = tmp_path / "copy" / "opencode.db"
    corrupt.parent.mkdir()
    # An SQLite header followed by garbage: a copy cut short, not a database.
    corrupt.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    storage = tmp_path / "old" / "storage"
    no_id = storage / "session" / "p0" / "ses_x.json"
    no_id.parent.mkdir(parents=True)
    (storage / "message").mkdir()
    no_id.write_text(json.dumps({"title": "work", "directory": "/w/acme"}), encoding="utf-8")
    good = claude_session(tmp_path / "c", "good", "/w/acme", T0, TURNS)

    code, report = run_import(str(corrupt), str(storage), str(good))

    assert code == 0
    db_reason = _reason(report, corrupt)
    assert db_reason.startswith("not a readable OpenCode database (")
    assert db_reason.endswith(
        "check it is OpenCode's own database and not a copy cut short, then run the import again"
    )
    assert _reason(report, no_id) == (
        "an OpenCode session file without an id: check that OpenCode finished writing it "
        "(not a copy cut short or edited by hand) and run the import again"
    )
    assert report["queued"] == 5 and redis_client.xlen("nika:ingest") == 5


def test_a_keyword_whose_store_is_missing_names_the_variable_to_set(
    tenant: str, tmp_path: Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)

    code, report = run_import("claude", "codex", "gemini", "opencode")

    assert code == 0 and report["queued"] == 0
    hints = {line.split(" ", 2)[1].rstrip(":"): line for line in report["skipped"]}
    assert hints["claude"].endswith(
        "set CLAUDE_CONFIG_DIR to Claude Code's folder, or name its projects folder"
    )
    assert hints["codex"] == (
        f"skipped codex: no such file or folder ({tmp_path / '.codex' / 'sessions'}): "
        "set CODEX_HOME to Codex's folder, or name its sessions folder"
    )
    assert hints["gemini"].endswith("name Gemini CLI's session folder (…/tmp/<project hash>/chats)")
    assert hints["opencode"].endswith(
        "set XDG_DATA_HOME to the folder that holds opencode/, or name opencode.db"
    )
