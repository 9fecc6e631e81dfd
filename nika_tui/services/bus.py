"""The comms layer: a JSONL bus per tenant and day, append + fsync, rotation by size.

Every line is one JSON object ``{"id", "tenant_id", "kind", "at", "NIKA_META", "body"}``.
Files: ``{data}/tenants/{tenant_id}/bus/{YYYY-MM-DD}.jsonl``; when a day's file passes
``max_bytes`` it is renamed ``{YYYY-MM-DD}.{n}.jsonl`` and a fresh one starts. Readers keep
unreadable lines raw (``BusLine.data is None``) rather than dropping them.

:meth:`Bus.archive_before` (the debt audit's ``rotate_logs`` action) moves the files of past
days into ``{data}/tenants/{tenant_id}/archive/bus/{name}.gz`` (gzip, 0600, fsync, verified by
decompressing and comparing with the original before the original is removed). :meth:`Bus.read`
and :meth:`Bus.bytes_on` read archived days transparently (``bytes_on`` counts uncompressed
bytes, so the growth metric does not change); :meth:`Bus.files` lists live files unless asked
for archived ones too (tailers read the live files only).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock

from nika_tui.domain.envelope import NikaMeta, Trigger
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import StoreUnavailable
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_ROTATED = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:\.(\d+))?\.jsonl$")
_ARCHIVED = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:\.(\d+))?\.jsonl(?:\.(\d+))?\.gz$")
_LIVE_PART = 1_000_000  # sorts the live file of a day after its rotated parts


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
        self._lock = FileLock(str(root / ".bus.lock"), timeout=10, mode=0o600)

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
        return self.append_many([(kind, body, meta, now)])[0]

    def append_many(
        self,
        items: Sequence[tuple[str, Mapping[str, Any], NikaMeta | None, datetime | None]],
    ) -> list[dict[str, Any]]:
        """Append messages in order, durably: one lock, one write and one fsync per day file.

        The memory service logs a whole ingest batch this way: a lock, an open and an fsync
        per message were half of the store's CPU per memory, measured.

        Args:
            items: (kind, body, meta, now) per message, as :meth:`append` takes them.

        Returns:
            The messages, in order.
        """
        messages: list[dict[str, Any]] = []
        lines: dict[date, list[bytes]] = {}
        for kind, body, meta, now in items:
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
            messages.append(message)
            line = json.dumps(message, ensure_ascii=False, default=str) + "\n"
            lines.setdefault(at.date(), []).append(line.encode("utf-8"))
        if not messages:
            return messages
        try:
            ensure_private_dir(self.root)
            with self._lock:
                for day, day_lines in lines.items():
                    self._write_day(day, day_lines)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot append to the bus in {self.root}: {exc.strerror}",
                "check disk space and permissions",
            ) from exc
        return messages

    def _write_day(self, day: date, lines: list[bytes]) -> None:
        """Append ``lines`` to the day's live file (rotating first when full); fsync."""
        path = self._day_file(day)
        # Rotation is by file: a batch never splits, so one file may pass max_bytes by a
        # batch's size (bounded by the service's batch).
        self._rotate_if_full(path, sum(len(line) for line in lines))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            data = memoryview(b"".join(lines))
            while data:  # a regular file takes it all at once; a short write is still handled
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    @property
    def archive_root(self) -> Path:
        """``{data}/tenants/{tenant_id}/archive/bus``."""
        return self.root.parent / "archive" / "bus"

    def files(self, day: date | None = None, archived: bool = False) -> list[Path]:
        """Bus files (rotated parts first, then the live one), oldest day first.

        Args:
            day: Only this day's files.
            archived: Also list the gzip archives of past days (each before the live files of
                its day with the same part number).
        """
        found: list[tuple[str, int, int, int, Path]] = []
        dirs = [(self.root, _ROTATED, 1)] + (
            [(self.archive_root, _ARCHIVED, 0)] if archived else []
        )
        for root, pattern, live in dirs:
            if not root.is_dir():
                continue
            for p in root.iterdir():
                m = pattern.match(p.name)
                if m and (day is None or m.group(1) == day.isoformat()):
                    part = int(m.group(2)) if m.group(2) else _LIVE_PART
                    extra = int(m.group(3)) if live == 0 and m.group(3) else 0
                    found.append((m.group(1), part, live, extra, p))
        return [item[-1] for item in sorted(found)]

    def read(self, day: date | None = None) -> Iterator[BusLine]:
        """Every line (archived days included), oldest first; unreadable lines come back with
        ``data=None``."""
        for path in self.files(day, archived=True):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8", errors="replace") as fh:
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
        """Bytes written on ``day`` (all parts; archived parts count uncompressed)."""
        return sum(_plain_size(p) for p in self.files(day, archived=True))

    def archive_before(self, day: date) -> list[dict[str, Any]]:
        """Archive every live file of a day before ``day`` (gzip), removing each original only
        once its archive is durable and verified.

        Each file is handled under the bus lock (no append can land in it meanwhile):
        compressed into a temporary file (0600), fsync'd, decompressed again and compared
        (SHA-256) with the original, renamed into place, the directory fsync'd, and only then
        the original unlinked. A crash at any point leaves the original (and at worst a stray
        temporary file), never a day with neither.

        Args:
            day: Files of earlier days are archived (today's live file is never touched).

        Returns:
            One ``{"file", "archive", "bytes", "compressed"}`` per archived file.

        Raises:
            StoreUnavailable: The archive cannot be written or does not verify.
        """
        done: list[dict[str, Any]] = []
        for path in self.files():
            if path.name[:10] >= day.isoformat():
                continue
            try:
                ensure_private_dir(self.archive_root)
                with self._lock:
                    done.append(self._archive_one(path))
            except OSError as exc:
                raise StoreUnavailable(
                    f"cannot archive {path.name} into {self.archive_root}: {exc.strerror}",
                    "check disk space and permissions; the original is kept",
                ) from exc
        return done

    def _archive_one(self, path: Path) -> dict[str, Any]:
        original = path.read_bytes()
        digest = hashlib.sha256(original).hexdigest()
        target = self.archive_root / f"{path.name}.gz"
        n = 1
        while target.exists() and _sha256_plain(target) != digest:
            # A later file of the same name (appended after an earlier archive): keep both.
            target = self.archive_root / f"{path.name}.{n}.gz"
            n += 1
        if not target.exists():
            tmp = self.archive_root / f".{path.name}.{uuid.uuid4().hex}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
            try:
                with os.fdopen(fd, "wb") as raw:
                    with gzip.GzipFile(filename=path.name, mode="wb", fileobj=raw, mtime=0) as gz:
                        gz.write(original)
                    # The gzip trailer is written on close: fsync after it.
                    raw.flush()
                    os.fsync(raw.fileno())
                if _sha256_plain(tmp) != digest:
                    tmp.unlink()
                    raise StoreUnavailable(
                        f"the archive of {path.name} does not match the original",
                        "the original is kept; check the disk",
                    )
                os.replace(tmp, target)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            _fsync_dir(self.archive_root)
        path.unlink()
        _fsync_dir(self.root)
        return {
            "file": path.name,
            "archive": target.name,
            "bytes": len(original),
            "compressed": target.stat().st_size,
        }


def _sha256_plain(path: Path) -> str:
    h = hashlib.sha256()
    with gzip.open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _plain_size(path: Path) -> int:
    if path.suffix != ".gz":
        return path.stat().st_size
    # The gzip trailer's ISIZE: the uncompressed size modulo 2**32 (bus files stay far below).
    with path.open("rb") as fh:
        fh.seek(-4, os.SEEK_END)
        return int.from_bytes(fh.read(4), "little")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_bus(tenant_id: str, where: Roots | None = None) -> Bus:
    """The bus of one tenant (under ``where``; None: the roots of ``os.environ``)."""
    return Bus((where or roots()).tenant_data_dir(check_tenant_id(tenant_id)) / "bus", tenant_id)
