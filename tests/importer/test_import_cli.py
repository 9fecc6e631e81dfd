"""``nika import``: every source format, the skip rules, idempotence and the resumable ledger.

These run against the real embedded Redis (the ingest stream the service consumes); the
service itself is in ``test_import_service.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.requests import RememberRequest
from tests.helpers import retry_until
from tests.importer.import_run import T0, TENANT, TURNS, run_import, stream
from tests.importer.sessions_on_disk import (
    claude_session,
    codex_rollout,
    codex_rollout_2025,
    gemini_session,
    gemini_session_jsonl,
    opencode_db,
    opencode_session,
)


@pytest.fixture
def tenant(make_tenant: Callable[..., Any], redis_url: str) -> str:
    make_tenant(TENANT)
    return TENANT


def test_every_format_becomes_prompts_and_turns_with_their_real_time(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    src = tmp_path / "src"
    claude = claude_session(src / "claude", "7b1f9c2e-3a4d", "/home/dev/acme-api", T0, TURNS)
    codex_rollout(src / "codex", "019ad1e2-cur", "/home/dev/acme-api", T0, TURNS)
    codex_rollout(src / "codex-items", "019ad1e2-new", "/home/dev/acme-api", T0, TURNS, items=True)
    codex_rollout_2025(src / "codex-2025", "c0ffee-old", T0, TURNS)
    gemini_session(src / "gemini", "5e1f00aa-gem", T0, TURNS)
    opencode_session(src / "opencode", "ses_469cf929cffe", "/home/dev/acme-api", T0, TURNS)
    sources = [
        str(src / d) for d in ("claude", "codex", "codex-items", "codex-2025", "gemini", "opencode")
    ]

    code, report = run_import("--project", "acme-api", *sources)

    assert code == 0, report
    assert report["sessions"] == 6 and report["skipped"] == []
    assert (report["semantic"], report["episodic"], report["queued"]) == (18, 12, 30)
    reqs = stream(redis_client)
    by_agent: dict[str, list[RememberRequest]] = {}
    for req in reqs:
        by_agent.setdefault(req.meta.agent_type, []).append(req)
    assert sorted(by_agent) == ["claude-code", "codex", "gemini", "opencode"]
    for req in reqs:
        assert req.tenant_id == TENANT and req.meta.project_id == "acme-api"
        assert req.valid_from == req.meta.timestamp and req.valid_from >= T0
        assert req.meta.source.rsplit(":", 1)[1].isdigit()
    first = next(r for r in by_agent["claude-code"] if r.layer.value == "semantic")
    assert first.text == TURNS[0][0] and first.valid_from == T0  # a one-sentence fact
    assert first.meta.source == f"{claude.resolve()}:2"  # line 2: the summary is line 1
    assert first.meta.session_id == "7b1f9c2e-3a4d"
    # Valid-time order on the stream: supersede sees older facts first.
    times = [r.valid_from for r in reqs]
    assert times == sorted(times)
    # No CLI-injected text (Codex's environment context) became a memory.
    assert not any("environment_context" in r.text for r in reqs)


def test_gemini_jsonl_is_replayed_as_its_recorder_loads_it(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    path = gemini_session_jsonl(tmp_path / "gemini", "9f3c2a1b-main", T0, TURNS)
    gemini_session_jsonl(tmp_path / "gemini", "sub-1", T0, TURNS, subagent_of="9f3c2a1b-main")

    code, report = run_import(str(tmp_path / "gemini"))

    assert code == 0 and report["sessions"] == 1
    assert [s.split(": ", 1)[1] for s in report["skipped"]] == [
        "a Gemini CLI sub-agent session (its parent session holds the turns)"
    ]
    reqs = stream(redis_client)
    turns = [r for r in reqs if r.layer.value == "episodic"]
    # The rewound prompt is gone; each answer is its completed version, once.
    assert [r.text for r in turns] == [TURNS[0][1], TURNS[1][1]]
    assert [r.text for r in reqs if r.text == TURNS[0][0]] == [TURNS[0][0]]  # a fact, once
    assert all(r.meta.agent_type == "gemini" and r.meta.session_id == "9f3c2a1b-main" for r in reqs)
    assert turns[0].meta.source == f"{path.resolve()}:5"  # the line of the completed answer
    # Gemini CLI's own opening message (<session_context>) is no person's prompt.
    assert not any("session_context" in r.text or "Gemini CLI" in r.text for r in reqs)


def test_opencode_database_is_read_and_its_migrated_json_tree_skipped(
    tenant: str, tmp_path: Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    db = opencode_db(
        data / "opencode",
        [
            ("ses_aaaaaa111111", "/w/acme-api", T0, TURNS),
            ("ses_bbbbbb222222", "/w/acme-api", T0.replace(day=3), TURNS[:1]),
            ("ses_cccccc333333", "/w/acme-api", T0.replace(day=3), TURNS),
        ],
        child_of="ses_bbbbbb222222",
    )
    opencode_session(data / "opencode" / "storage", "ses_aaaaaa111111", "/w/acme-api", T0, TURNS)

    code, report = run_import("opencode")

    assert code == 0 and report["sessions"] == 2  # the sub-agent's session is left out
    assert any("already migrated into opencode.db" in s for s in report["skipped"])
    reqs = stream(redis_client)
    # 5 of the first session, 3 of the second's one turn (its 2 facts, the answer).
    assert len(reqs) == 8 and all(r.meta.agent_type == "opencode" for r in reqs)
    assert not any("<file>" in r.text for r in reqs)  # synthetic parts are not the person's
    first = reqs[0]
    assert (first.text, first.valid_from) == (TURNS[0][0], T0)
    assert first.meta.source == f"{db.resolve()}#ses_aaaaaa111111:1"
    assert first.meta.session_id == "ses_aaaaaa111111"
    code, again = run_import("opencode")
    assert code == 0 and again["unchanged"] == 1 and redis_client.xlen("nika:ingest") == 8


def test_instruction_files_and_docs_become_facts(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    proj = tmp_path / "acme-api"
    (proj / ".git").mkdir(parents=True)
    (proj / "CLAUDE.md").write_text(
        "# Conventions\n- Use ruff for lint and format.\n- Tests run with pytest -q.\n"
        "- Release notes:\n\n```sh\ntowncrier build\n```\n\n"
        "# Deploys\nStaging deploys go through db-staging-1.\n",
        encoding="utf-8",
    )
    (proj / "docs").mkdir()
    (proj / "docs" / "architecture.md").write_text(
        "# Architecture\n\nThe API talks to Postgres through a pool of 20 connections.\n",
        encoding="utf-8",
    )
    code, report = run_import(str(proj))
    assert code == 0
    texts = {r.text: r for r in stream(redis_client)}
    assert set(texts) == {
        "Conventions: Use ruff for lint and format.",
        "Conventions: Tests run with pytest -q.",
        "Conventions: Release notes:\n```sh\ntowncrier build\n```",
        "Deploys: Staging deploys go through db-staging-1.",
        "architecture › Architecture: The API talks to Postgres through a pool of 20 connections.",
    }
    assert all(
        r.layer.value == "semantic" and r.meta.project_id == "acme-api" for r in texts.values()
    )
    mtime = datetime.fromtimestamp((proj / "CLAUDE.md").stat().st_mtime, UTC)
    assert texts["Conventions: Tests run with pytest -q."].valid_from == mtime
    assert report["documents"] == 2


def test_reimport_adds_nothing_and_dry_run_queues_nothing(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    claude_session(tmp_path / "c", "s-1", "/w/acme", T0, TURNS)
    code, dry = run_import("--dry-run", str(tmp_path / "c"))
    assert code == 0 and dry["dry_run"] and (dry["semantic"], dry["episodic"]) == (3, 2)
    assert redis_client.xlen("nika:ingest") == 0
    run_import(str(tmp_path / "c"))
    assert redis_client.xlen("nika:ingest") == 5
    code, again = run_import(str(tmp_path / "c"))
    assert code == 0 and again["unchanged"] == 1 and again["queued"] == 0
    assert redis_client.xlen("nika:ingest") == 5
    # Even with the file touched (fingerprint changed), its items are in the ledger.
    os.utime(tmp_path / "c" / "-w-acme" / "s-1.jsonl", None)
    code, touched = run_import(str(tmp_path / "c"))
    assert touched["already_queued"] == 5 and touched["queued"] == 0
    assert redis_client.xlen("nika:ingest") == 5


def test_bad_input_is_skipped_with_a_reason_and_the_rest_goes_on(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    src = tmp_path / "src"
    good = claude_session(src, "good", "/w/acme", T0, TURNS)
    torn = claude_session(src, "torn", "/w/acme", T0, TURNS)
    with torn.open("a", encoding="utf-8") as f:
        f.write('{"type": "user", "sessionId": "torn", "message": {"rol')  # a write cut short
    broken = claude_session(src, "broken", "/w/acme", T0, TURNS)
    lines = broken.read_text(encoding="utf-8").splitlines()
    lines.insert(2, "{not json at all")
    broken.write_text("\n".join(lines) + "\n", encoding="utf-8")
    latin = src / "-w-acme" / "latin.jsonl"
    latin.write_bytes(good.read_bytes().replace(b"Tuesdays", "Mardis é".encode("latin-1")))
    binary = src / "-w-acme" / "blob.jsonl"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    huge = src / "-w-acme" / "huge.jsonl"
    huge.write_bytes(good.read_bytes() * 2000)
    big_doc = src / "docs" / "dump.md"
    big_doc.parent.mkdir()
    big_doc.write_text("# Dump\n" + "x" * (3 * 1024 * 1024), encoding="utf-8")
    outside = tmp_path / "elsewhere"
    claude_session(outside, "secret-project", "/w/other", T0, TURNS)
    (src / "-w-acme" / "link.jsonl").symlink_to(outside / "-w-other" / "secret-project.jsonl")
    (src / "linked-dir").symlink_to(outside)

    code, report = run_import("--max-file-mb", "0.5", str(src))

    assert code == 0
    reasons = "\n".join(report["skipped"])
    # Each reason names what to do about it, so the person can fix the file and re-run.
    assert f"skipped {broken}: malformed JSONL at line 3" in reasons
    assert "fix or delete it and run the import again" in _line(reasons, broken)
    assert f"skipped {latin}: not UTF-8 (byte 0xe9" in reasons
    assert "convert it to UTF-8" in _line(reasons, latin)
    assert f"skipped {binary}: binary file" in reasons
    assert f"skipped {huge}: huge file" in reasons
    assert "over 0.5 MB): raise the limit with --max-file-mb" in _line(reasons, huge)
    assert "split it into smaller files" in _line(reasons, big_doc)
    assert f"symlink outside {src}" in reasons and "link.jsonl" in reasons
    assert f"skipped {src / 'linked-dir'}: symlink outside" in reasons
    assert "name the link's target as a SOURCE" in _line(reasons, src / "linked-dir")
    torn_notes = [n for n in report["notes"] if "truncated JSON line skipped" in n]
    assert any("torn.jsonl" in n and "once the session has ended" in n for n in torn_notes)
    sources = {r.meta.source.rsplit(":", 1)[0] for r in stream(redis_client)}
    # Nothing half-imported: only the good file and the good lines of the torn one.
    assert sources == {str(good.resolve()), str(torn.resolve())}
    assert report["queued"] == 10


def test_secrets_are_masked_before_the_stream(
    tenant: str, tmp_path: Path, redis_client: redis.Redis
) -> None:
    key = "sk-" + "A1b2C3d4E5f6G7h8J9k0"
    claude_session(
        tmp_path / "c",
        "s",
        "/w/acme",
        T0,
        [
            (
                f"Use the key {key} for the staging API.",
                "Done, the staging API client now reads its key from the vault.",
            )
        ],
    )
    run_import(str(tmp_path / "c"))
    texts = [r.text for r in stream(redis_client)]
    assert texts and all(key not in t for t in texts)
    assert "[REDACTED]" in texts[0]


def test_unknown_tenant_is_refused(redis_url: str, tmp_path: Path) -> None:
    code, _ = run_import(str(tmp_path / "nothing"))
    assert code == 2  # tenant acme does not exist here


def test_a_missing_source_is_a_report_line_and_the_rest_goes_on(
    tenant: str, tmp_path: Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.codex here
    monkeypatch.delenv("CODEX_HOME", raising=False)
    claude_session(tmp_path / "c", "s-1", "/w/acme", T0, TURNS)
    code, report = run_import(str(tmp_path / "nothing"), "codex", str(tmp_path / "c"))
    assert code == 0 and report["queued"] == 5
    assert report["skipped"][0] == (
        f"skipped {tmp_path / 'nothing'}: no such file or folder ({tmp_path / 'nothing'}): "
        "check the path and run the import again"
    )
    assert report["skipped"][1].startswith("skipped codex: no such file or folder (")
    assert "set CODEX_HOME" in report["skipped"][1]


@pytest.mark.slow
def test_kill_minus_9_mid_import_then_resume_queues_each_memory_once(
    tenant: str, tmp_path: Path, redis_client: redis.Redis, redis_url: str
) -> None:
    src = tmp_path / "many"
    turns = [
        (
            f"Fact number {n}: service s{n} listens on port {8000 + n}.",
            f"Recorded that s{n} listens on {8000 + n}, and updated the runbook.",
        )
        for n in range(20)
    ]
    for s in range(60):
        claude_session(src, f"sess-{s:03d}", "/w/acme", T0.replace(day=1 + s % 28), turns)
    total = 60 * 20 * 2  # per turn: the prompt's fact (semantic), the answer (episodic)
    env = {**os.environ, "REDIS_URL": redis_url}
    cmd = [sys.executable, "-m", "nika_tui", "import", "--tenant", TENANT, "--batch", "1", str(src)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ledger = "nika:tenant:acme:import:keys"
    retry_until(lambda: redis_client.scard(ledger) >= 50, timeout=60, what="import under way")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = redis_client.xlen("nika:ingest")
    assert 50 <= partial < total, "the import finished before the kill: raise the size"
    # The ledger holds exactly what reached the stream (one transaction per batch).
    assert redis_client.scard(ledger) == partial

    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)

    assert done.returncode == 0, done.stderr
    reqs = stream(redis_client)
    keys = [r.idempotency_key for r in reqs]
    assert len(keys) == total and len(set(keys)) == total


def test_progress_bar_on_a_terminal_and_none_off_it(
    tenant: str, tmp_path: Path, redis_url: str
) -> None:
    import pty

    claude_session(tmp_path / "c", "s-1", "/w/acme", T0, TURNS)
    env = {**os.environ, "REDIS_URL": redis_url, "COLUMNS": "100"}
    cmd = [sys.executable, "-m", "nika_tui", "import", "--tenant", TENANT, str(tmp_path / "c")]
    master, slave = pty.openpty()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=slave, timeout=120)
    os.close(slave)
    drawn = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(master)
    assert proc.returncode == 0
    assert b"queueing memories" in drawn and b"reading files" in drawn
    assert b"queued 5 memories" in proc.stdout
    piped = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert piped.returncode == 0 and b"queueing" not in piped.stderr


def _line(report: str, path: Path) -> str:
    """The report line that skips ``path``."""
    return next(line for line in report.splitlines() if line.startswith(f"skipped {path}:"))


def test_keywords_read_each_clis_store_under_home(
    tenant: str, tmp_path: Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    claude = claude_session(home / ".claude" / "projects", "c-1", "/w/acme", T0, TURNS)
    codex = codex_rollout(home / ".codex" / "sessions" / "2026" / "03", "x-1", "/w/acme", T0, TURNS)
    gemini = gemini_session_jsonl(home / ".gemini" / "tmp", "g-1", T0, TURNS)
    # Gemini CLI's own log beside its chats: bookkeeping of the store, not reported.
    (gemini.parent.parent / "logs.json").write_text("[]", encoding="utf-8")
    # A session outside the stores the keywords name is not read.
    claude_session(home / "elsewhere", "c-2", "/w/acme", T0, TURNS)

    code, report = run_import("claude", "codex", "gemini")

    assert code == 0 and report["skipped"] == [], report
    assert report["sessions"] == 3 and report["queued"] == 15
    files = {r.meta.source.rsplit(":", 1)[0] for r in stream(redis_client)}
    assert files == {str(p.resolve()) for p in (claude, codex, gemini)}
