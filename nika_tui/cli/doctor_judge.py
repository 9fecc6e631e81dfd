"""``nika doctor``: each tenant's judge, as the memory service will build it.

Privacy ``cloud`` with an endpoint that refuses the key used to pass silently, and every
contradiction went to review (issue 17). Here an HTTP judge's key must resolve (keyring or
environment) and its endpoint must answer ``GET /models``; an agent-CLI judge needs its CLI on
PATH. Privacy ``local`` is never contacted over the network.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from nika_tui.cli.doctor_report import OK, WARN, CheckResult
from nika_tui.errors import ConfigError

if TYPE_CHECKING:
    from nika_tui.paths import Roots


def check_judges(where: Roots) -> list[CheckResult]:
    """One line per tenant: which judge decides, and whether it can."""
    from nika_tui.domain.tenant import JudgeKind, Privacy
    from nika_tui.services.config_store import list_tenant_ids, load_tenant
    from nika_tui.services.judges.factory import resolve_api_key

    results = []
    for tid in list_tenant_ids(where):
        try:
            config = load_tenant(tid, where)
        except ConfigError:
            continue
        judge, name = config.judge, f"judge:{tid}"
        if judge.kind is JudgeKind.HTTP and judge.endpoint:
            if config.privacy is Privacy.LOCAL:
                detail = f"http at {judge.endpoint} (privacy local: not contacted)"
                results.append(CheckResult(name, OK, detail, required=False))
                continue
            key, problem = resolve_api_key(judge.api_key, os.environ, tid)
            if problem:
                fix = f"`nika setup privacy --tenant {tid}` to enter the key again"
                results.append(CheckResult(name, WARN, f"http: {problem}", fix, required=False))
                continue
            from nika_tui.services.judge_reach import check_judge_endpoint
            from nika_tui.services.provider_verify import VerifyStatus

            reach = check_judge_endpoint(judge.endpoint, key)
            status = OK if reach.status is VerifyStatus.OK else WARN
            fix = (
                ""
                if status == OK
                else f"check the endpoint and key (`nika setup privacy --tenant {tid}`); until "
                "then unclear pairs wait in review"
            )
            results.append(CheckResult(name, status, f"http: {reach.detail}", fix, False))
        elif judge.kind is JudgeKind.AGENT_CLI:
            from nika_tui.services.agent_clis import binary_for

            binary = binary_for(config.agent_cli)
            found = shutil.which(binary) is not None
            detail = f"agent-cli ({binary}) {'on PATH' if found else 'not on PATH'}"
            fix = "" if found else f"install {binary}; until then unclear pairs wait in review"
            results.append(CheckResult(name, OK if found else WARN, detail, fix, False))
        else:
            detail = f"{judge.kind.value} (offline, nothing to reach)"
            results.append(CheckResult(name, OK, detail, required=False))
    return results
