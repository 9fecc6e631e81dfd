"""``nika doctor``'s look at the running installation: tenant alarms and the embedded AOF.

Read-only: nothing here starts Redis or the service (a stopped installation says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nika_tui.cli.doctor_report import MISSING, OK, WARN, CheckResult
from nika_tui.errors import NikaError

if TYPE_CHECKING:
    from nika_tui.settings import Settings


def check_runtime(settings: Settings) -> list[CheckResult]:
    """Tenant alarms of the memory service, and the embedded Redis's AOF when it is down."""
    from nika_tui.services.redis_server import aof_problem, connect
    from nika_tui.services.tenant_alarms import read_alarms

    try:
        r = connect(settings, start=False)
    except NikaError:
        problem = aof_problem(settings.roots)
        if problem is not None:
            return [CheckResult("redis-aof", MISSING, problem.message, problem.hint)]
        return [
            CheckResult(
                "memory", WARN, "Redis is not running", "start it with `nika up`", required=False
            )
        ]
    alarms = read_alarms(r)
    if not alarms:
        return [CheckResult("tenant-stores", OK, "no tenant alarm")]
    return [
        CheckResult(f"tenant:{alarm.tenant_id}", MISSING, alarm.line(), alarm.hint)
        for alarm in alarms
    ]
