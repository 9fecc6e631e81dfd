"""The comms layer: a JSONL bus per tenant and day, append + fsync, rotation by size.

Every line is one JSON object ``{"id", "tenant_id", "kind", "at", "NIKA_META", "body"}``.
Files: ``{data}/tenants/{tenant_id}/bus/{YYYY-MM-DD}.jsonl``; when a day's file passes
``max_bytes`` it is renamed ``{YYYY-MM-DD}.{n}.jsonl`` and a fresh one starts. Readers keep
unreadable lines raw (``BusLine.data is None``) rather than dropping them.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import StoreUnavailable
from nika_tui.paths import FILE_MODE, ensure_private_dir, tenant_data_dir

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_ROTATED = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:\.(\d+))?\.jsonl$")


@dataclass(frozen=True, slots=True)
class BusLine:
    """One line of the bus: the raw text, and the parsed object when it parses."""

    raw: str
    data: dict[str, Any] | None
    path: Path


class Bus:
    """One tenant's bus directory."""

    def __init__(self, root: Path, tenant_id: str, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.tenant_id = tenant_id
        self.max_bytes = max_bytes
        self._lock = FileLock(str(root / ".bus.lock"), timeout=10)

    def _day_file(self, day: date) -> Path:
        return self.root / f"{day.isoformat()}.jsonl"

    def _rotate_if_full(self, path: Path, incoming: int) -> None:
        if not path.exists() or path.stat().st_size + incoming <= self.max_bytes:
            return
        n = 1
        while (path.parent / f"{path.stem}.{n}.jsonl").exists():
            n += 1
        os.replace(path, path.parent / f"{path.stem}.{n}.jsonl")

    def append(
        self,
        kind: str,
        body: Mapping[str, Any],
        meta: NikaMeta | None = None,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """Append one message durably (fsync) and return it."""
        at = now or datetime.now(UTC)
        envelope = meta or NikaMeta(timestamp=at, trigger=Trigger.SYSTEM)
        message: dict[str, Any] = {
            "id": uuid.uuid4().hex,
            "tenant_id": self.tenant_id,
            "kind": kind,
            "at": at.isoformat(),
            "NIKA_META": envelope.to_payload(),
            "body": dict(body),
        }
        line = (json.dumps(message, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        try:
            ensure_private_dir(self.root)
            with self._lock:
                path = self._day_file(at.date())
                self._rotate_if_full(path, len(line))
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
                try:
                    os.write(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot append to the bus in {self.root}: {exc.strerror}",
                "check disk space and permissions",
            ) from exc
        return message

    def files(self, day: date | None = None) -> list[Path]:
        """Bus files (rotated parts first, then the live one), oldest day first."""
        if not self.root.is_dir():
            return []
        found: list[tuple[str, int, Path]] = []
        for p in self.root.iterdir():
            m = _ROTATED.match(p.name)
            if m and (day is None or m.group(1) == day.isoformat()):
                part = int(m.group(2)) if m.group(2) else 1_000_000  # live file last
                found.append((m.group(1), part, p))
        return [p for _, _, p in sorted(found)]

    def read(self, day: date | None = None) -> Iterator[BusLine]:
        """Every line, oldest first; unreadable lines come back with ``data=None``."""
        for path in self.files(day):
            with path.open("r", encoding="utf-8", errors="replace") as fh:
                for raw in fh:
                    raw = raw.rstrip("\n")
                    if not raw:
                        continue
                    try:
                        parsed = json.loads(raw)
                    except json.JSONDecodeError:
                        parsed = None
                    yield BusLine(raw, parsed if isinstance(parsed, dict) else None, path)

    def bytes_on(self, day: date) -> int:
        """Bytes written on ``day`` (all parts)."""
        return sum(p.stat().st_size for p in self.files(day))


def open_bus(tenant_id: str, env: Mapping[str, str] | None = None) -> Bus:
    """The bus of one tenant."""
    return Bus(tenant_data_dir(check_tenant_id(tenant_id), env) / "bus", tenant_id)
