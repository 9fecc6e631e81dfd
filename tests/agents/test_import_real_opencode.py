"""``nika import opencode`` on the database the REAL OpenCode (pinned 1.18.33) wrote.

The readers are otherwise checked against hand-made databases; this pins them to what the
binary writes. Two ``opencode run`` sessions (the mock Chat Completions server answers), each
imported into a second tenant (so the live plugin's own memory of a fact cannot pass for the
import's): the fact is there with its message's time as valid time and a NIKA_META source that
names the database, the session and the message; a re-import adds nothing, and after the second
session only that session's memories are queued.

After the first run the database file is 4 KiB and everything is in ``opencode.db-wal`` (OpenCode
does not checkpoint on exit): the import reads the WAL too. A session only in the WAL while the
file is unchanged is ``tests/importer/test_opencode_wal.py``.

The last test is the wizard's side: ``nika setup`` on a pty, on the HOME those runs used, with
that OpenCode on PATH, offers an OpenCode tenant its sessions (counted in the database) and a
"yes" puts them into the tenant through the memory service.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.cli import main
from nika_tui.domain.memory import Layer, MemoryRecord
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import AgentCli
from nika_tui.importer.sessions import parse_time
from nika_tui.services.config_store import load_tenant
from tests.agents.opencode_home import OpenCode
from tests.helpers import retry_until
from tests.plugins.memory import RunningService
from tests.support.setup_pty import run_setup

pytestmark = [pytest.mark.agents, pytest.mark.embedder, pytest.mark.slow]

IMPORTED = "imported"
FIRST = "Remember this: the invoicing cron runs at 04:17 UTC on the box named quokka-7."
SECOND = "Remember this: the audit bucket is called wombat-archive-9 and keeps 400 days."


def _import() -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            ["import", "--tenant", IMPORTED, "--json", "--wait", "--timeout", "120", "opencode"]
        )
    assert code == 0, out.getvalue()
    return dict(json.loads(out.getvalue()))


def _imported(client: Any, query: str, needle: str, tenant: str = IMPORTED) -> list[MemoryRecord]:
    found = client.recall(RecallQuery(tenant_id=tenant, query=query, limit=20))
    return [h.record for h in found.hits if needle in h.record.text]


def _message_time(source: str) -> datetime:
    """The ``time_created`` of the message a NIKA_META source (``<db>#<session>:<n>``) names,
    read from the database itself: the n-th message of that session in time order."""
    located, n = source.rsplit(":", 1)
    db_path, session_id = located.split("#", 1)
    db = sqlite3.connect(f"{Path(db_path).as_uri()}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT id, time_created FROM message WHERE session_id = ? ORDER BY time_created, id",
            (session_id,),
        ).fetchall()
        message_id, created = rows[int(n) - 1]
        texts = [
            json.loads(raw).get("text", "")
            for (raw,) in db.execute("SELECT data FROM part WHERE message_id = ?", (message_id,))
        ]
    finally:
        db.close()
    assert any("quokka-7" in t for t in texts)  # the source names the message holding the fact
    at = parse_time(created)
    assert at is not None
    return at


def test_opencode_sessions_import_with_their_real_time_once(
    opencode: OpenCode,
    running_service: RunningService,
    make_tenant: Callable[..., Any],
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant(IMPORTED)
    # The keyword the wizard offers: OpenCode's store under $XDG_DATA_HOME/opencode.
    monkeypatch.setenv("XDG_DATA_HOME", opencode.env["XDG_DATA_HOME"])
    before = datetime.now(UTC)
    opencode.run(FIRST)
    after = datetime.now(UTC)

    report = _import()
    assert report["sessions"] == 1 and not report["skipped"], report
    assert report["semantic"] >= 1 and report["queued"] >= 1, report
    first_queued = report["queued"]
    hits = _imported(running_service.client, "when does the invoicing cron run", "quokka-7")
    assert len(hits) == 1, "the fact typed in the real session was not imported once"
    fact = hits[0]
    assert fact.layer is Layer.SEMANTIC
    assert fact.meta.agent_type == "opencode"
    assert fact.meta.project_id == "acme-api"
    db_file = fact.meta.source.split("#", 1)[0]
    assert Path(db_file).parent == Path(opencode.env["XDG_DATA_HOME"]) / "opencode"
    at = _message_time(fact.meta.source)
    assert fact.valid_from == at
    # The message's own time, not the import's: the import ran after OpenCode had exited.
    assert before <= at <= after

    stream_len = redis_client.xlen("nika:ingest")
    again = _import()
    assert again["queued"] == 0, again
    assert redis_client.xlen("nika:ingest") == stream_len

    opencode.run(SECOND)
    third = _import()
    # The database changed: it is read again, and only the new session's memories are queued.
    assert third["sessions"] == 2 and not third["skipped"], third
    assert third["already_queued"] == first_queued, third
    assert third["queued"] >= 1, third
    assert _imported(running_service.client, "what is the audit bucket called", "wombat-archive-9")
    assert len(_imported(running_service.client, "invoicing cron box", "quokka-7")) == 1


def test_the_wizard_offers_an_opencode_tenant_what_opencode_wrote(
    opencode: OpenCode, running_service: RunningService, tmp_path: Path
) -> None:
    before = datetime.now(UTC)
    opencode.run(FIRST)
    opencode.run(SECOND)
    began = datetime.now(UTC)
    # "acme" is the tenant the runs' live plugin wrote to; the wizard makes a new one.
    offer = "Import your 2 existing OpenCode sessions into 'bravo'?"
    home = Path(opencode.env["HOME"])
    said = run_setup(tmp_path, home, AgentCli.OPENCODE, opencode.binary, "bravo", offer, True)
    assert "2 sessions" in said and "0 skipped" in said, said
    # The agent question's default was the CLI found on PATH: OpenCode, detected.
    assert load_tenant("bravo").agent_cli is AgentCli.OPENCODE

    def imported() -> list[MemoryRecord]:
        query = "when does the invoicing cron run"
        return _imported(running_service.client, query, "quokka-7", "bravo")

    [fact] = retry_until(imported, timeout=120, interval=0.2, what="the imported fact recalled")
    assert fact.meta.agent_type == "opencode"
    at = _message_time(fact.meta.source)
    assert fact.valid_from == at and before <= at <= began
    retry_until(
        lambda: _imported(
            running_service.client, "what is the audit bucket called", "wombat-archive-9", "bravo"
        ),
        timeout=120,
        interval=0.2,
        what="the second session's fact recalled",
    )
