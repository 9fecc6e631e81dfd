"""The hooks' spool: a write that cannot reach Redis waits in a private file, not in the void.

A hook that finds Redis down used to drop its memory and log ``"outcome": "ok"``. Now the
request (already masked, with its idempotency key) is written to
``{data}/tenants/{tenant_id}/spool/{time}-{key}.json`` (0600 in a 0700 dir, atomic, fsynced)
and the hook logs ``"outcome": "spooled"``. The next hook run of that tenant that reaches Redis,
and ``nika up``, replay the spool in order; each file is removed only once its entry is on the
ingest stream. A replay is idempotent (same key, same memory id), so a crash between the XADD
and the unlink duplicates nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from pydantic import ValidationError

from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant_id import is_valid_tenant_id
from nika_tui.errors import StoreUnavailable
from nika_tui.paths import Roots, roots
from nika_tui.services.files import atomic_write_text
from nika_tui.services.memory_client import MemoryClient
from nika_tui.services.secret_mask import masked_request

log = logging.getLogger("nika.spool")

SPOOL_DIR = "spool"
MAX_SPOOLED = 10_000
"""Per tenant; past it a write is refused (a disk-filling loop must not run unbounded)."""


def spool_dir(tenant_id: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{tenant_id}/spool`` (``where`` None: the roots of ``os.environ``)."""
    return (where or roots()).tenant_data_dir(tenant_id) / SPOOL_DIR


def spool(req: RememberRequest, where: Roots | None = None) -> Path:
    """Write ``req`` (masked) to its tenant's spool; the file's path.

    Raises:
        StoreUnavailable: the tenant is unknown (nothing is created for it) or the spool is
            full or cannot be written.
    """
    at = where or roots()
    if not at.tenant_config_path(req.tenant_id).is_file():
        raise StoreUnavailable(
            f"not spooled: tenant {req.tenant_id} is not configured",
            f"create it with `nika setup --tenant {req.tenant_id}`",
        )
    root = spool_dir(req.tenant_id, at)
    if root.is_dir() and sum(1 for _ in root.glob("*.json")) >= MAX_SPOOLED:
        raise StoreUnavailable(
            f"the spool of tenant {req.tenant_id} is full ({MAX_SPOOLED} writes)",
            "start Redis with `nika up`: it replays the spool",
        )
    req = masked_request(req)
    name = f"{time.time_ns():020d}-{(req.idempotency_key or 'nokey')[:40]}.json"
    path = root / name
    try:
        atomic_write_text(path, req.model_dump_json())
    except OSError as exc:
        raise StoreUnavailable(f"cannot spool the memory: {exc}", "check disk space") from exc
    return path


def pending(tenant_id: str, where: Roots | None = None) -> list[Path]:
    """The tenant's spooled files, oldest first."""
    root = spool_dir(tenant_id, where)
    try:
        return sorted(p for p in root.iterdir() if p.suffix == ".json")
    except FileNotFoundError:
        return []


def replay(tenant_id: str, client: MemoryClient, where: Roots | None = None) -> int:
    """Queue the tenant's spooled writes on the stream, oldest first; how many were queued.

    Stops at the first that Redis refuses (the rest stay spooled). A file that does not parse
    is renamed ``*.bad`` and logged, never deleted.

    Raises:
        StoreUnavailable: Redis refused a write (what was queued before stays queued).
    """
    done = 0
    for path in pending(tenant_id, where):
        try:
            req = RememberRequest.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValidationError, UnicodeDecodeError) as exc:
            log.warning("spooled file %s is unreadable (%s): kept as .bad", path, exc)
            with contextlib.suppress(OSError):
                path.rename(path.with_suffix(".bad"))
            continue
        client.remember(req)
        path.unlink(missing_ok=True)
        done += 1
    return done


def replay_all(client: MemoryClient, where: Roots | None = None) -> dict[str, int]:
    """Replay every tenant's spool (``nika up``); tenant id → writes queued."""
    at = where or roots()
    root = at.data / "tenants"
    out: dict[str, int] = {}
    try:
        tenants = sorted(p.name for p in root.iterdir() if (p / SPOOL_DIR).is_dir())
    except FileNotFoundError:
        return out
    for tenant_id in tenants:
        if is_valid_tenant_id(tenant_id) and pending(tenant_id, at):
            out[tenant_id] = replay(tenant_id, client, at)
    return out


def has_spool(tenant_id: str, where: Roots | None = None) -> bool:
    """Cheap check for the hook's fast path (one ``scandir``)."""
    try:
        with os.scandir(spool_dir(tenant_id, where)) as entries:
            return any(e.name.endswith(".json") for e in entries)
    except FileNotFoundError:
        return False
