"""The status-bar line of a running fresh start: the memory service's writes wait for it.

A reset (``nika compress --reset``) runs in the service's single writer; until it ends no
tenant's memory is stored (it waits in the ingest stream: nothing is lost). The reset says so in
Redis (``WRITES_PAUSED``, decision 439); this turns that mark into one line.
"""

from __future__ import annotations

import json


def paused_line(raw: object) -> str | None:
    """The line for the ``WRITES_PAUSED`` value ``raw`` (``None``: no reset is running)."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        info = json.loads(raw)
    except json.JSONDecodeError:
        info = None
    if not isinstance(info, dict):
        return "memory writes paused by a reset — they wait in the stream and resume after it"
    since = str(info.get("since", ""))[11:16]
    return (
        f"memory writes paused: reset of {info.get('tenant_id', '?')} running "
        f"(stage {info.get('stage', '?')}, since {since or '?'} UTC) — every tenant's writes "
        "wait in the stream and resume after it, nothing is lost"
    )
