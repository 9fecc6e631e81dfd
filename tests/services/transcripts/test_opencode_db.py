"""OpenCode's session digest from a database with OpenCode 1.2's tables (hand-made; the real
1.18.33 database is read by ``tests/agents/test_opencode_handoff.py``): what it reads, what it
refuses, and that it never writes."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nika_tui.errors import TranscriptError
from nika_tui.services.transcripts.opencode import opencode_database, opencode_digest
from tests.importer.sessions_on_disk import opencode_db

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
TURNS = [
    ("Rename the billing module to invoicing.", "Decision: the module is now invoicing."),
    ("Now move the CSV export to a worker queue.", "Queued the export on the worker."),
]


def _db(tmp_path: Path) -> Path:
    return opencode_db(tmp_path / "opencode", [("ses_1", "/w/acme-api", START, TURNS)])


def test_the_digest_has_the_sessions_prompts_and_decisions_in_order(tmp_path: Path) -> None:
    path = _db(tmp_path)
    before = path.read_bytes()
    digest = opencode_digest(path, "ses_1", "/w/acme-api")
    assert digest is not None
    assert [p for _, p in digest.prompts] == [q for q, _ in TURNS]
    assert [d for _, d in digest.decisions] == [a for _, a in TURNS]
    assert digest.last_assistant == TURNS[-1][1]
    assert digest.todos == []  # 1.2 had no todo table and this session no todowrite
    assert path.read_bytes() == before  # read-only


def test_another_directorys_or_an_unknown_session_is_not_read(tmp_path: Path) -> None:
    path = _db(tmp_path)
    assert opencode_digest(path, "ses_1", "/w/other-project") is None
    assert opencode_digest(path, "ses_unknown", "/w/acme-api") is None


def test_a_file_that_is_not_opencodes_database_says_so(tmp_path: Path) -> None:
    other = tmp_path / "opencode.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(TranscriptError, match="not a readable OpenCode database"):
        opencode_digest(other, "ses_1")


def test_the_database_is_found_where_opencode_keeps_it(tmp_path: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path), "HOME": str(tmp_path / "home")}
    assert opencode_database(env) is None  # OpenCode never ran
    _db(tmp_path)
    assert opencode_database(env) == tmp_path / "opencode" / "opencode.db"
