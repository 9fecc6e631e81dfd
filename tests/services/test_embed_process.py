"""The ingest's embedder in a child process (decision 583): the real model in a real child."""

from __future__ import annotations

import io
import json
import os
import signal
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nika_tui.domain.ports import Embedder
from nika_tui.services.embed_process import (
    ProcessEmbedder,
    child_env,
    read_frame,
    write_frame,
)
from tests.helpers import RecordingEmbedder, retry_until

pytestmark = pytest.mark.embedder

TEXTS = [
    "The staging database moved to 10.0.9.30.",
    "Deploys freeze every Friday after 15:00.",
    "Le cache Redis de prod expire au bout de 30 minutes.",
]


@pytest.fixture
def child(embedder: Embedder) -> Iterator[tuple[ProcessEmbedder, RecordingEmbedder]]:
    fallback = RecordingEmbedder(embedder)
    process = ProcessEmbedder(fallback, threads=1, start_after_s=0.0, respawn_s=0.0)
    yield process, fallback
    process.close()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_child_gives_the_services_vectors(
    child: tuple[ProcessEmbedder, RecordingEmbedder], embedder: Embedder
) -> None:
    process, fallback = child
    process.start()
    assert process.wait_ready(120), "the child loaded its model"

    vectors = process.embed(TEXTS)

    assert process.served == len(TEXTS) and fallback.calls == []
    for got, want in zip(vectors, embedder.embed(TEXTS), strict=True):
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-6


def test_calls_go_to_the_fallback_until_the_child_serves(
    child: tuple[ProcessEmbedder, RecordingEmbedder],
) -> None:
    process, fallback = child

    first = process.embed(TEXTS[:1])  # starts the child, answered at once in-process

    assert fallback.calls == [TEXTS[:1]] and process.served == 0 and len(first) == 1
    assert process.wait_ready(120)
    process.embed(TEXTS[1:])
    assert fallback.calls == [TEXTS[:1]] and process.served == 2


def test_a_killed_child_costs_no_batch_and_is_started_again(
    child: tuple[ProcessEmbedder, RecordingEmbedder],
) -> None:
    process, fallback = child
    process.start()
    assert process.wait_ready(120)
    old = process.pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    retry_until(lambda: _gone(old) or process.pid is None, timeout=30, what="the child dead")

    vectors = process.embed(TEXTS)  # the pipe is broken: this batch goes in-process

    assert len(vectors) == len(TEXTS) and fallback.calls == [TEXTS]
    assert not process.serving()
    process.embed(TEXTS[:1])  # respawn_s=0: this call starts a new child
    assert process.wait_ready(120)
    assert process.pid not in (None, old)
    process.embed(TEXTS[:1])
    assert process.served == 1


def test_the_child_waits_for_the_service_to_start_first(embedder: Embedder) -> None:
    fallback = RecordingEmbedder(embedder)
    process = ProcessEmbedder(fallback, start_after_s=3600.0)
    try:
        process.embed(TEXTS[:1])  # within the start window: in-process, no child

        assert process.pid is None and fallback.calls == [TEXTS[:1]]
    finally:
        process.close()


def test_the_child_sees_no_secret_and_no_text_in_its_arguments(
    child: tuple[ProcessEmbedder, RecordingEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret-123")
    monkeypatch.setenv("NIKA_REDIS_PASSWORD", "hunter2-redis")
    process, _ = child
    process.start()
    assert process.wait_ready(120)
    process.embed(["a text that must stay off the command line"])
    pid = process.pid
    assert pid is not None

    environ = Path(f"/proc/{pid}/environ").read_bytes()
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()

    assert b"sk-ant-test-secret-123" not in environ and b"hunter2-redis" not in environ
    assert b"must stay off" not in cmdline


def test_close_stops_the_child_and_later_calls_stay_in_process(
    child: tuple[ProcessEmbedder, RecordingEmbedder],
) -> None:
    process, fallback = child
    process.start()
    assert process.wait_ready(120)
    pid = process.pid
    assert pid is not None

    process.close()

    assert _gone(pid)
    process.embed(TEXTS[:1])
    assert fallback.calls == [TEXTS[:1]] and process.pid is None


def test_closing_while_the_child_loads_leaves_nothing_serving(
    child: tuple[ProcessEmbedder, RecordingEmbedder],
) -> None:
    process, fallback = child
    process.start()
    pid = process.pid
    assert pid is not None

    process.close()  # most likely before its model is loaded (~3 s)

    assert _gone(pid) and not process.serving()
    process.embed(TEXTS[:1])
    assert fallback.calls == [TEXTS[:1]] and process.pid is None


def test_the_worker_answers_a_bad_request_with_an_error_and_keeps_serving() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "nika_tui.services.embed_worker", "--threads", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(dict(os.environ)),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        ready = read_frame(proc.stdout)
        assert ready is not None and ready[:1] == b"R"
        assert json.loads(ready[1:])["dimension"] == 384

        write_frame(proc.stdin, b'{"not": "a list"}')
        error = read_frame(proc.stdout)
        write_frame(proc.stdin, json.dumps(TEXTS[:2]).encode())
        vectors = read_frame(proc.stdout)

        assert error is not None and error[:1] == b"E" and b"list of strings" in error
        assert vectors is not None and vectors[:1] == b"V"
        assert len(struct.unpack(f"<{(len(vectors) - 1) // 8}d", vectors[1:])) == 2 * 384
    finally:
        proc.stdin.close()  # end of input: the worker returns
        assert proc.wait(30) == 0


def test_frames_refuse_a_broken_stream() -> None:
    out = io.BytesIO()
    write_frame(out, b"hello")
    whole = out.getvalue()

    assert read_frame(io.BytesIO(whole)) == b"hello"
    assert read_frame(io.BytesIO(b"")) is None
    with pytest.raises(EOFError):
        read_frame(io.BytesIO(whole[:-2]))  # cut inside the body
    with pytest.raises(EOFError):
        read_frame(io.BytesIO(struct.pack(">I", 2**31)))  # a length no reply has
