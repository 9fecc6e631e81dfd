"""The durable record of strategy B: plans (by id) and the workers nika created.

One JSON file, ``{data}/scale/state.json`` (0600, dir 0700), read and rewritten atomically under
an exclusive ``flock`` on ``state.lock``: the service's scheduler and a person's ``nika scale``
never interleave. A plan moves ``pending → applying → applied | failed`` (or ``reported`` /
``rejected``); the move to ``applying`` happens under the lock, which is what makes a plan
impossible to apply twice. Workers are what reconcile compares the providers' lists against.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nika_tui.errors import ScaleError
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots
from nika_tui.scale.planner import Plan, Worker
from nika_tui.services.files import atomic_write_text


def state_dir(where: Roots | None = None) -> Path:
    """``{data}/scale`` (``where`` None: the roots of ``os.environ``)."""
    return (where or roots()).data / "scale"


class ScaleState:
    """Plans and workers, file-locked."""

    def __init__(self, where: Roots | None = None) -> None:
        self.dir = state_dir(where)
        self.path = self.dir / "state.json"

    @contextmanager
    def transaction(self) -> Iterator[dict[str, Any]]:
        """Yield the whole state under the lock; it is written back when the block ends."""
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
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ScaleError(
                f"cannot read {self.path}: {exc}",
                "restore it from a backup, or move it away and run `nika scale reconcile`",
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
