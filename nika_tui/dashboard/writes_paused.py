"""The status-bar line of a running fresh start: that tenant's memory writes wait for it.

A reset (``nika compress --reset``) runs beside the memory service's writes: only the reset
tenant's writes wait (in the ingest stream: nothing is lost), every other tenant's are stored
(decision 505). The reset says so in Redis (``WRITES_PAUSED``, its tenant and stage); this
turns that mark into one line.
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
        return "memory writes of a tenant paused by a reset — they wait in the stream"
    since = str(info.get("since", ""))[11:16]
    return (
        f"memory writes of {info.get('tenant_id', '?')} paused: reset running "
        f"(stage {info.get('stage', '?')}, since {since or '?'} UTC) — its writes wait in the "
        "stream and are stored after it, nothing is lost; other tenants' writes go on"
    )
