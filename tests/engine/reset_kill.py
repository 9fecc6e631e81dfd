"""Kill a reset child *inside* a stage, and prove it: shared by the kill -9 tests.

Waiting for the journal to reach a stage and then sending SIGKILL can land after the work is
done (the child may finish in between), and such a test passes without testing anything. So the
child is first frozen (SIGSTOP), the journal read again while it cannot move: only if it still
names the stage (the stage's record is written before its work, the next one after) is the
child inside that stage, and only then is it killed. A child that had moved on fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from nika_tui.engine.reset import STAGES, journal_path
from nika_tui.settings import Settings
from tests.helpers import retry_until


def journal(tenant_id: str) -> dict[str, object]:
    """The reset journal (``{}`` before the first stage)."""
    try:
        data = json.loads(journal_path(tenant_id, Settings.from_env().roots).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def exists(pattern: Path) -> Callable[[], bool]:
    """A probe: some path matches ``pattern`` (a glob in its last part)."""
    return lambda: any(pattern.parent.glob(pattern.name))


def kill_inside(
    child: subprocess.Popen[bytes],
    tenant_id: str,
    stage: str,
    started: Callable[[], bool] | None = None,
) -> dict[str, object]:
    """SIGKILL ``child`` while its reset is inside ``stage``; return the journal at the kill.

    Args:
        child: The process running the reset.
        tenant_id: Its tenant.
        stage: One of :data:`~nika_tui.engine.reset.STAGES` (not ``done``).
        started: Optionally, a probe true once the stage's work has begun (e.g. the
            snapshot's staging directory exists): waited for too, so the kill lands mid-work.

    Raises:
        AssertionError: the child exited, or had left the stage, before it was frozen.
    """
    later = set(STAGES[STAGES.index(stage) + 1 :])

    def reached() -> bool:
        now = str(journal(tenant_id).get("stage", ""))
        began = now == stage and (started is None or started())
        return began or now in later or child.poll() is not None

    # A 1 ms poll: the shortest stage (switch) lasts tens of milliseconds.
    retry_until(reached, timeout=240, interval=0.001, what=f"reset stage {stage}")
    if child.poll() is not None:
        err = child.stderr.read().decode(errors="replace")[-2000:] if child.stderr else ""
        raise AssertionError(f"the reset exited ({child.returncode}) before {stage}: {err}")
    os.kill(child.pid, signal.SIGSTOP)
    frozen = journal(tenant_id)
    try:
        assert child.poll() is None, f"the reset ended before stage {stage} could be hit"
        assert frozen.get("stage") == stage, (
            f"the reset had moved past {stage} (journal: {frozen.get('stage')}) when frozen"
        )
        if started is not None:
            assert started(), f"{stage} had not begun its work"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL  # killed, not exited on its own
    return frozen
