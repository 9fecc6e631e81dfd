"""What the tests of the headless agent CLIs share: one run that must succeed, one stored fact.

Each CLI's test builds its own argv and environment (that is what differs); running it in the
project and waiting for the fact it typed to be recalled are the same for every CLI.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import IO

from nika_tui.domain.memory import Layer, MemoryRecord
from nika_tui.domain.requests import RecallQuery
from tests.helpers import retry_until
from tests.plugins.memory import RunningService


def run_ok(
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    stdin: int | IO[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one headless CLI turn; a non-zero exit fails the test with the end of its stderr."""
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def stored_fact(service: RunningService, tenant_id: str, needle: str) -> MemoryRecord:
    """The semantic memory holding ``needle``, once the service has recalled the typed fact.

    Args:
        service: The memory service the CLI's hooks wrote to.
        tenant_id: The tenant the CLI ran for.
        needle: A string of the fact (its address) that only the fact holds.
    """

    def stored() -> bool:
        found = service.client.recall(
            RecallQuery(tenant_id=tenant_id, query="staging server IP address", limit=5)
        )
        return any(needle in h.record.text for h in found.hits)

    retry_until(stored, timeout=60, interval=0.2, what="the typed fact stored")
    kept = service.client.recall(
        RecallQuery(tenant_id=tenant_id, query="staging server moved", layer=Layer.SEMANTIC)
    )
    return next(h.record for h in kept.hits if needle in h.record.text)
