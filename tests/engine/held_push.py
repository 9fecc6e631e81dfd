"""A knowledge repo whose pushes wait: holds a reset provably inside its ``compress`` stage."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path


def held_remote(tmp_path: Path) -> tuple[Path, Path]:
    """A bare origin whose pushes wait until ``release`` exists (its hook marks ``holding``)."""
    bare = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    release, holding = tmp_path / "release", tmp_path / "holding"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(
        f"#!/bin/sh\ntouch {holding}\nwhile [ ! -e {release} ]; do sleep 0.05; done\nexit 0\n"
    )
    hook.chmod(stat.S_IRWXU)
    return bare, release
