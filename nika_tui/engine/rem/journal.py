"""The REM journal: ``{data}/tenants/{t}/rem/journal.jsonl`` (0600, fsync'd), appended by every
pass and read back to resume a killed pass or to tell when the last one ended.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from nika_tui.domain.iso_time import parse_iso_utc
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots

JOURNAL_ROTATE_BYTES = 4 * 1024 * 1024


def journal_path(tenant_id: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{t}/rem/journal.jsonl``."""
    return (where or roots()).tenant_data_dir(tenant_id) / "rem" / "journal.jsonl"


class Journal:
    """Append-only, fsync'd JSON lines of one tenant's REM passes."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, entry: Mapping[str, Any]) -> None:
        """Write one line durably."""
        ensure_private_dir(self.path.parent)
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def entries(self) -> Iterator[dict[str, Any]]:
        """Every readable line (a torn last line from a crash is skipped)."""
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as fh:
            for raw in fh:
                try:
                    data = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if isinstance(data, dict):
                    yield data

    def last_run(self) -> list[dict[str, Any]]:
        """Lines of the most recent run (from its ``start``)."""
        run: list[dict[str, Any]] = []
        for e in self.entries():
            if e.get("event") == "start":
                run = [e]
            elif run and e.get("run") == run[0].get("run"):
                run.append(e)
        return run

    def rotate_if_large(self) -> None:
        """Keep one previous file when the journal grows past a few MB (between runs only)."""
        if self.path.exists() and self.path.stat().st_size > JOURNAL_ROTATE_BYTES:
            os.replace(self.path, self.path.with_suffix(".1.jsonl"))


def last_run_at(tenant_id: str, where: Roots) -> datetime | None:
    """When the tenant's last completed REM pass ended (None: never)."""
    last: datetime | None = None
    for e in Journal(journal_path(tenant_id, where)).entries():
        ts = parse_iso_utc(e.get("at")) if e.get("event") == "end" else None
        if ts is not None:
            last = ts
    return last
