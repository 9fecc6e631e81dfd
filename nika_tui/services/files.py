"""Private, atomic file writes: temp file in the same dir + fsync + rename, 0600 / 0700."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from nika_tui.paths import FILE_MODE, ensure_private_dir


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically; a crash leaves the old file or the new one."""
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
