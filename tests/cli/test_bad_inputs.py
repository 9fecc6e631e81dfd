"""The low findings of issue 15: each bad input gets one line naming the fix, never a traceback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import StoreUnavailable
from nika_tui.hooks.context import HookContext
from nika_tui.paths import config_dir, data_dir, tenant_config_path, tighten_modes
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.services.redis_server import (
    aof_problem,
    embedded_location,
    ensure_embedded,
    repair_aof,
    stop_embedded,
)


def _nika(*argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "nika_tui", *argv],
        input=stdin,
        capture_output=True,
        env={**os.environ, "NIKA_NO_AUTOSTART": "1"},
    )
    out = subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out


def _tenant(tenant_id: str) -> None:
    save_tenant(TenantConfig(tenant_id=tenant_id, display_name=tenant_id.title()))


def test_a_non_utf8_config_is_one_line_and_hides_no_other_tenant() -> None:
    _tenant("good")
    _tenant("bad")
    path = tenant_config_path("bad")
    path.write_bytes(path.read_bytes() + "display_note: caf\xe9\n".encode("latin-1"))
    proc = _nika("tenant", "list")
    assert proc.returncode == 1
    assert "good" in proc.stdout
    assert "not UTF-8" in proc.stderr and "re-save it as UTF-8" in proc.stderr


def test_a_non_utf8_answers_file_is_one_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_bytes("tenant_id: caf\xe9\n".encode("latin-1"))
    proc = _nika("setup", "--non-interactive", "--answers", str(answers))
    assert proc.returncode == 2
    assert "not UTF-8" in proc.stderr


@pytest.mark.usefixtures("redis_url")
def test_nul_bytes_far_future_and_empty_query_are_refused() -> None:
    _tenant("good")
    nul = _nika("memory", "remember", "--tenant", "good", "--text", "-", stdin=b"a\x00b fact")
    assert nul.returncode == 2 and "NUL" in nul.stderr
    future = _nika(
        "memory", "remember", "--tenant", "good", "--text", "x is y", "--valid-from", "9999-12-31"
    )
    assert future.returncode == 2 and "in the future" in future.stderr
    empty = _nika("memory", "recall", "--tenant", "good", "  ")
    assert empty.returncode == 2 and "query is empty" in empty.stderr


def test_compress_repo_must_have_an_existing_parent(tmp_path: Path) -> None:
    _tenant("good")
    target = tmp_path / "no" / "such" / "tree"
    proc = _nika("compress", "--tenant", "good", "--repo", str(target))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    assert not (tmp_path / "no").exists()
    data_dir().mkdir(parents=True, exist_ok=True)
    inside = _nika("compress", "--tenant", "good", "--repo", str(data_dir() / "kb"))
    assert inside.returncode == 2 and "nika's own directory" in inside.stderr


def test_a_transcript_in_another_tenants_dir_is_not_read(tmp_path: Path) -> None:
    other = data_dir() / "tenants" / "tena" / "agent-home" / "claude" / "t.jsonl"
    other.parent.mkdir(parents=True)
    other.write_text("{}\n")
    own = data_dir() / "tenants" / "tenb" / "agent-home" / "claude" / "t.jsonl"
    own.parent.mkdir(parents=True)
    own.write_text("{}\n")
    from datetime import UTC, datetime

    def ctx(path: Path) -> HookContext:
        payload = {"transcript_path": str(path)}
        return HookContext("claude", "Stop", payload, dict(os.environ), "tenb", datetime.now(UTC))

    assert ctx(other).transcript_path is None
    assert ctx(own).transcript_path == own


def test_modes_are_private_under_config_and_data(redis_client: redis.Redis) -> None:
    _tenant("good")
    open_bus("good").append("note", {"text": "x"}, now=__import__("datetime").datetime.now())
    for path in (data_dir(), data_dir() / "tenants", data_dir() / "tenants" / "good"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    lock = next((data_dir() / "tenants" / "good").rglob(".bus.lock"))
    assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    # An installation of an earlier version: tightened by `nika up`.
    loose = config_dir() / "loose.txt"
    loose.write_text("x")
    loose.chmod(0o644)
    assert tighten_modes(config_dir()) >= 1
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600


def test_the_embedded_redis_files_are_0600() -> None:
    try:
        ensure_embedded()
        root = embedded_location().root
        for name in ("appendonly.aof", "redis.log", "redis.pid"):
            assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
        assert stat.S_IMODE(root.stat().st_mode) == 0o700
    finally:
        stop_embedded()


def _corrupt_aof(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    good = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\nb\r\n"
    (root / "appendonly.aof").write_bytes(good + b"*3\r\n$3\r\nSET\r\nGARBAGE" + good)


def test_a_corrupt_aof_says_how_to_repair_and_repair_works() -> None:
    root = embedded_location().root
    _corrupt_aof(root)
    try:
        with pytest.raises(StoreUnavailable, match="corrupt") as caught:
            ensure_embedded(timeout=5)
        assert "nika up --repair-aof" in caught.value.hint
        doctor = _nika("doctor")
        assert "corrupt" in doctor.stdout and doctor.returncode == 1
        message = repair_aof()
        assert "kept at" in message and aof_problem() is None
        assert list(root.glob("appendonly.aof.corrupt-*"))
        url = ensure_embedded()
        assert redis.Redis.from_url(url, decode_responses=True).get("a") == "b"
    finally:
        stop_embedded()
