"""One RPC to the memory service over Redis (see :mod:`nika_tui.services.memory_client`): the
service's error rebuilt as ours, and the heartbeat's value read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nika_tui import errors
from nika_tui.errors import NikaError


def error_from_reply(reply: Mapping[str, Any]) -> NikaError:
    """Rebuild the service's error as the same :class:`NikaError` subclass.

    Every subclass lives in :mod:`nika_tui.errors`, so the name in ``kind`` finds it, whatever
    its constructor takes: the instance is made with ``message`` and ``hint`` and its plain
    extra ``fields`` set back, and so keeps the class's ``exit_code``.
    """
    kind = str(reply.get("kind", "NikaError"))
    cls = getattr(errors, kind, NikaError)
    if not (isinstance(cls, type) and issubclass(cls, NikaError)):
        cls = NikaError
    error = cls.__new__(cls)
    NikaError.__init__(
        error, str(reply.get("error", "the memory service failed")), str(reply.get("hint", ""))
    )
    fields = reply.get("fields")
    for name, value in (fields if isinstance(fields, dict) else {}).items():
        if name not in ("message", "hint"):
            setattr(error, str(name), value)
    return error


def parse_heartbeat(raw: Any) -> dict[str, Any] | None:
    """The heartbeat key's value as ``{pid, host, started_at}`` (None when absent)."""
    if not raw:
        return None
    try:
        info = json.loads(str(raw))
    except json.JSONDecodeError:
        return {"pid": str(raw)}
    return info if isinstance(info, dict) else {"pid": info}
