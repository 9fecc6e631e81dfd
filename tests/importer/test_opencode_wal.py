"""``nika import opencode`` while OpenCode runs: its newest sessions are in ``opencode.db-wal``.

OpenCode 1.18 keeps its database in WAL mode and does not checkpoint after each session (seen
on the real binary: after a run the database file was 4 KiB and the WAL 790 KiB). A writer that
stays open, as a running OpenCode does, commits a new session to the WAL only; the database
file is untouched, and an import that fingerprinted the file alone took it for unchanged.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.importer.import_run import T0, TENANT, TURNS, run_import, stream
from tests.importer.sessions_on_disk import add_opencode_sessions, opencode_db


def test_a_session_only_in_the_wal_is_imported(
    make_tenant: Callable[..., Any],
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant(TENANT)
    data = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    db_path = opencode_db(data / "opencode", [("ses_aaaaaa111111", "/w/acme-api", T0, TURNS)])
    writer = sqlite3.connect(db_path)  # a running OpenCode: WAL mode, no checkpoint
    try:
        assert writer.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        writer.execute("PRAGMA wal_autocheckpoint=0")
        code, first = run_import("opencode")
        assert code == 0 and first["sessions"] == 1 and first["queued"] == 5, first
        db_stat = db_path.stat()

        add_opencode_sessions(writer, [("ses_bbbbbb222222", "/w/acme-api", T0, TURNS[:1])])
        # The condition this test is about: the new session is in the WAL, the file unchanged.
        after = db_path.stat()
        assert (after.st_size, after.st_mtime_ns) == (db_stat.st_size, db_stat.st_mtime_ns)

        code, second = run_import("opencode")
    finally:
        writer.close()
    assert code == 0 and second["unchanged"] == 0, second
    assert second["queued"] == 3 and second["already_queued"] == 5, second
    new = [r for r in stream(redis_client) if r.meta.session_id == "ses_bbbbbb222222"]
    assert {r.text for r in new} == set(TURNS[0])
