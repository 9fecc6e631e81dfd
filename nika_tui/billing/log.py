"""The per-tenant billing log: ``{data}/tenants/{id}/billing/usage.jsonl`` (0600, dir 0700).

One JSON object a line, appended under an exclusive ``flock`` and fsynced (hooks of several
sessions append at once). Two kinds:

- ``{"kind": "tokens", "at", "tenant_id", "model", "input_tokens", "output_tokens",
  "cache_read_tokens", "cache_write_tokens", "source", "key", "meta": {NIKA_META}}``
- ``{"kind": "tool_call", "at", "tenant_id", "tool", "source", "meta": {NIKA_META}}``

``cursors.json`` beside it remembers, per transcript, the byte offset read and the message keys
already billed, so a transcript read again by the next hook bills nothing twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nika_tui.errors import BillingError
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots


def billing_dir(tenant_id: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{id}/billing``."""
    return (where or roots()).tenant_data_dir(tenant_id) / "billing"


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on ``{directory}/.lock`` for the block."""
    ensure_private_dir(directory)
    lock = directory / ".lock"
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class BillingLog:
    """Append and read one tenant's billing entries."""

    def __init__(self, tenant_id: str, where: Roots | None = None) -> None:
        self.tenant_id = tenant_id
        self.dir = billing_dir(tenant_id, where)
        self.path = self.dir / "usage.jsonl"

    def append_locked(self, entries: list[dict[str, Any]]) -> None:
        """Append entries; the caller holds :func:`locked` on :attr:`dir`."""
        if not entries:
            return
        data = "".join(json.dumps(e, sort_keys=True, default=str) + "\n" for e in entries)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.write(fd, data.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def append(self, entries: list[dict[str, Any]]) -> None:
        """Append entries under the lock."""
        with locked(self.dir):
            self.append_locked(entries)

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every readable entry, oldest first (a torn last line is skipped)."""
        if not self.path.exists():
            return
        try:
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    with contextlib.suppress(json.JSONDecodeError):
                        item = json.loads(line)
                        if isinstance(item, dict):
                            yield item
        except OSError as exc:
            raise BillingError(f"cannot read {self.path}: {exc.strerror}") from exc

    def read_cursors(self) -> dict[str, Any]:
        """Per-transcript read positions (caller holds the lock)."""
        path = self.dir / "cursors.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_cursors(self, cursors: dict[str, Any]) -> None:
        """Replace the cursors file (caller holds the lock)."""
        from nika_tui.services.files import atomic_write_text

        atomic_write_text(self.dir / "cursors.json", json.dumps(cursors))
