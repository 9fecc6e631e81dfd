"""Stand-ins for a memory service that is up but never answers, for the hook budget tests.

- :class:`HungMemoryService`: on the real Redis, a "service" that keeps a live heartbeat and
  takes the RPC requests off the stream with the service's own consumer group, as the real
  service's readers do, then never replies: the hooks see a service that is up and hung.
- :class:`HungRedis`: a TCP server on 127.0.0.1 that accepts connections and reads what it is
  sent, but never writes a byte back: the memory service's transport itself is hung.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import redis

from nika_tui.engine.server.liveness import HEARTBEAT_EVERY_S, clear_heartbeat, write_heartbeat
from nika_tui.services import redis_keys


class HungMemoryService:
    """Heartbeat refreshed, RPC requests read (and kept in :attr:`ops`), none answered."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._redis = redis.Redis.from_url(url, decode_responses=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hung-service", daemon=True)
        self.ops: list[str] = []
        """The op of every RPC the service took and left unanswered, in order."""

    def __enter__(self) -> HungMemoryService:
        with contextlib.suppress(redis.ResponseError):  # BUSYGROUP: made by an earlier run
            self._redis.xgroup_create(
                redis_keys.RPC_STREAM, redis_keys.RPC_GROUP, id="$", mkstream=True
            )
        write_heartbeat(self._redis, datetime.now(UTC).isoformat())
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        clear_heartbeat(self._redis)
        self._redis.close()

    def took(self, own: redis.Redis, requests: list[dict[str, str]]) -> None:
        """The RPC requests just read off the stream (this one keeps their ops, answers none)."""
        self.ops += [str(fields.get("op")) for fields in requests]

    def _run(self) -> None:
        # Its own connection: the test thread uses the other one meanwhile.
        own = redis.Redis.from_url(self._url, decode_responses=True)
        try:
            while not self._stop.is_set():
                write_heartbeat(own, datetime.now(UTC).isoformat())
                block_ms = int(HEARTBEAT_EVERY_S * 1000 / 4)
                reply: Any = own.xreadgroup(
                    redis_keys.RPC_GROUP,
                    "hung-reader",
                    {redis_keys.RPC_STREAM: ">"},
                    count=100,
                    block=block_ms,
                )
                for _stream, entries in reply or []:
                    self.took(own, [fields for _id, fields in entries])
        finally:
            own.close()


class HungRedis:
    """Accepts every connection on 127.0.0.1 and never answers; :attr:`url` is its address."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="hung-redis", daemon=True)
        self.received = 0
        """Bytes the hooks sent (they did reach it)."""

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self._listener.getsockname()[1]}/0"

    def __enter__(self) -> HungRedis:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        for conn in self._conns:
            conn.close()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            self._conns.append(conn)
            threading.Thread(target=self._drain, args=(conn,), daemon=True).start()

    def _drain(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            if not data:
                return
            self.received += len(data)
