"""A tenant's tuning files: ``{data}/tenants/{t}/tuning/`` and its append-only JSONL logs.

Written by the hooks (relevance labels from used hits), the dashboard and `nika memory
feedback` (marks), and the tuner (``optimisation.jsonl``); an adapter, so every one of them
may use it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots


def tuning_dir(tenant_id: str, where: Roots | None = None) -> Path:
    """``{data}/tenants/{t}/tuning`` (created 0700)."""
    return ensure_private_dir((where or roots()).tenant_data_dir(tenant_id) / "tuning")


def append_jsonl(path: Path, record: Mapping[str, Any]) -> None:
    """Append one JSON line, fsynced, to a 0600 file."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
    try:
        os.write(fd, (json.dumps(record, default=str, sort_keys=True) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(path, FILE_MODE)
