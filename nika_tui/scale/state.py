"""The durable record of strategy B: plans (by id) and the workers nika created.

With a Redis client (the service and every CLI that reaches the service's Redis), the record is
one JSON value in the shared Redis (:data:`STATE_KEY`), read and rewritten under a Redis lock
(:data:`LOCK_KEY`, ``SET NX PX`` with a token, compare-and-delete release): every worker joined
to that Redis sees the same plans, so the scale leader that takes over from a dead one neither
forgets a pending plan nor applies an applied one again (decision 380). Without a client (no
Redis, tests of the pure parts) it is one JSON file, ``{data}/scale/state.json`` (0600, dir
0700), under an exclusive ``flock``; the first Redis transaction imports that file once.

A plan moves ``pending → applying → applied | failed`` (or ``reported`` / ``rejected``); the
move to ``applying`` happens under the lock, which is what makes a plan impossible to apply
twice. Workers are what reconcile compares the providers' lists against.
"""

from __future__ import annotations

import fcntl
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import redis

from nika_tui.errors import ScaleError
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots
from nika_tui.scale.planner import Plan, Worker
from nika_tui.services.files import atomic_write_text
from nika_tui.services.redis_keys import PREFIX

STATE_KEY = f"{PREFIX}:scale:state"
"""Plans and workers of every tenant, one JSON document."""
LOCK_KEY = f"{PREFIX}:scale:state:lock"
LOCK_TTL_MS = 30_000
"""A holder that dies mid-transaction blocks the others this long at most (no provider call
ever runs under the lock: apply marks ``applying``, releases, then calls the provider)."""
LOCK_WAIT_S = 10.0
OPEN = ("pending", "applying", "draining")
"""Plan statuses still waiting or in flight."""
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def state_dir(where: Roots | None = None) -> Path:
    """``{data}/scale`` (``where`` None: the roots of ``os.environ``)."""
    return (where or roots()).data / "scale"


class ScaleState:
    """Plans and workers: in the shared Redis (``client``), else a file-locked JSON file."""

    def __init__(self, where: Roots | None = None, client: redis.Redis | None = None) -> None:
        self.dir = state_dir(where)
        self.path = self.dir / "state.json"
        self.client = client

    @contextmanager
    def transaction(self) -> Iterator[dict[str, Any]]:
        """Yield the whole state under the lock; it is written back when the block ends.

        Raises:
            ScaleError: The Redis lock stayed taken for :data:`LOCK_WAIT_S`, or the state
                cannot be read.
        """
        if self.client is not None:
            with self._redis_transaction(self.client) as data:
                yield data
            return
        with self._file_transaction() as data:
            yield data

    @contextmanager
    def _redis_transaction(self, r: redis.Redis) -> Iterator[dict[str, Any]]:
        token = uuid.uuid4().hex
        deadline = time.monotonic() + LOCK_WAIT_S
        while not r.set(LOCK_KEY, token, nx=True, px=LOCK_TTL_MS):
            if time.monotonic() > deadline:
                raise ScaleError(
                    f"the scale state in Redis stayed locked for {LOCK_WAIT_S:.0f}s",
                    f"retry; a holder that died frees it within {LOCK_TTL_MS // 1000}s",
                )
            time.sleep(0.05)  # a lock held for a few Redis round trips: poll it briefly
        try:
            raw = r.get(STATE_KEY)
            data = self._parse(str(raw), STATE_KEY) if raw else self._file_or_empty()
            before = json.dumps(data, sort_keys=True) if raw else ""
            yield data
            after = json.dumps(data, sort_keys=True)
            if after != before:
                r.set(STATE_KEY, after)
        finally:
            r.eval(_UNLOCK, 1, LOCK_KEY, token)

    def _file_or_empty(self) -> dict[str, Any]:
        # A service upgraded from the per-data-dir file keeps its plans and workers.
        return self._read() if self.path.exists() else {"plans": {}, "workers": []}

    @contextmanager
    def _file_transaction(self) -> Iterator[dict[str, Any]]:
        ensure_private_dir(self.dir)
        lock = self.dir / "state.lock"
        with open(lock, "a", encoding="utf-8") as fh:
            lock.chmod(FILE_MODE)
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                data = self._read()
                before = json.dumps(data, sort_keys=True)
                yield data
                after = json.dumps(data, sort_keys=True, indent=1)
                if after != before:
                    atomic_write_text(self.path, after)
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"plans": {}, "workers": []}
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ScaleError(
                f"cannot read {self.path}: {exc}",
                "restore it from a backup, or move it away and run `nika scale reconcile`",
            ) from exc
        return self._parse(text, str(self.path))

    @staticmethod
    def _parse(text: str, where: str) -> dict[str, Any]:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScaleError(
                f"cannot read {where}: {exc}",
                "restore it from a backup, or remove it and run `nika scale reconcile`",
            ) from exc
        data.setdefault("plans", {})
        data.setdefault("workers", [])
        return dict(data)

    def snapshot(self) -> dict[str, Any]:
        """A read-only copy of the state."""
        with self.transaction() as data:
            return json.loads(json.dumps(data))  # type: ignore[no-any-return]

    def save_plan(self, plan: Plan, status: str) -> None:
        """Record a plan (status ``pending``, ``reported``…); an existing id is left as is."""
        with self.transaction() as data:
            data["plans"].setdefault(plan.plan_id, {**plan.as_dict(), "status": status})

    def save_plan_unless_open(self, plan: Plan, status: str) -> dict[str, Any] | None:
        """Record ``plan`` unless another plan of its tenant is still open (:data:`OPEN`).

        Checked and written under one lock, so the scheduler and a person planning at the
        same moment record one plan between them, never two scale-outs (decision 502).

        Returns:
            ``None`` when ``plan`` is recorded; else the open plan's record (nothing written).
        """
        with self.transaction() as data:
            for record in data["plans"].values():
                mine = record.get("tenant_id") == plan.tenant_id
                if mine and record.get("status") in OPEN and record["plan_id"] != plan.plan_id:
                    return dict(record)
            data["plans"].setdefault(plan.plan_id, {**plan.as_dict(), "status": status})
            return None

    def plan(self, plan_id: str) -> dict[str, Any]:
        """One recorded plan.

        Raises:
            ScaleError: No plan has that id.
        """
        found = self.snapshot()["plans"].get(plan_id)
        if found is None:
            raise ScaleError(f"no scale plan {plan_id!r}", "list plans with `nika scale status`")
        return dict(found)

    def workers(self, tenant_id: str | None = None) -> list[Worker]:
        """Tracked workers (of one tenant, or all)."""
        items = [Worker.from_dict(w) for w in self.snapshot()["workers"]]
        return [w for w in items if tenant_id is None or w.tenant_id == tenant_id]
