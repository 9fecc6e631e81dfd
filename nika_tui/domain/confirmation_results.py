"""What an approved confirmation did, in one sentence for a person (pure).

The dashboard's toast showed the raw JSON of every non-debt approval (issue 17); debt actions
already had :func:`~nika_tui.domain.debt_results.describe_result`. Each sentence reads the
reply that approving that kind returns (``engine/kernels/confirmations.resolve``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from nika_tui.domain.debt_results import describe_result

RAW_LIMIT = 160
"""Characters of JSON shown for a kind with no sentence (better raw than nothing)."""


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _count(value: object) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    return len(value) if isinstance(value, (list, dict)) else 0


def _compact(r: Mapping[str, Any]) -> str:
    return f"typed {r.get('command') or '/compact'} in the agent's pane"


def _rem(r: Mapping[str, Any]) -> str:
    tenants = r.get("tenants")
    runs = (
        [s for s in tenants.values() if isinstance(s, Mapping)]
        if isinstance(tenants, Mapping)
        else []
    )
    changed = sum(_count(s.get("changed")) for s in runs)
    if changed == 0:
        return "the REM pass changed nothing (no duplicate, contradiction or stale memory)"
    return (
        f"the REM pass applied {_plural(changed, 'change', 'changes')} (retired memories are kept)"
    )


def _reset(r: Mapping[str, Any]) -> str:
    generation = r.get("generation") or "?"
    return f"the tenant runs on a fresh store (generation {generation}); the old one is snapshotted"


def _tune(r: Mapping[str, Any]) -> str:
    adopted = r.get("adopted")
    if isinstance(adopted, Mapping) and adopted:
        shown = ", ".join(f"{k}={v}" for k, v in adopted.items())
        return f"recall parameters adopted: {shown}"
    return "recall parameters adopted"


def _scale(r: Mapping[str, Any]) -> str:
    kind = str(r.get("kind") or "scale").replace("_", " ")
    where = "/".join(str(r[k]) for k in ("provider", "instance_id") if r.get(k))
    return f"{kind} {r.get('status') or 'applied'}" + (f" ({where})" if where else "")


def _orphan(r: Mapping[str, Any]) -> str:
    removed = r.get("removed")
    if isinstance(removed, Mapping):
        return (
            f"removed the untracked worker {removed.get('provider')}/{removed.get('instance_id')}"
        )
    return "removed the untracked worker"


def _pause(r: Mapping[str, Any]) -> str:
    n = _count(r.get("paused_pids"))
    if n == 0:
        return "paused nothing: the kernel runs no process"
    paused = _plural(n, "process", "processes")
    return f"paused {paused} of the kernel (`nika quota resume` lets them go on)"


def _purge(r: Mapping[str, Any]) -> str:
    removed = _count(r.get("removed_count", r.get("removed")))
    skipped = _count(r.get("skipped_count", r.get("skipped")))
    purged = _plural(removed, "retired memory", "retired memories")
    line = f"purged {purged} from the live index (archived, restorable)"
    return line + (f"; {skipped} skipped (see `nika purge plan`)" if skipped else "")


_DESCRIBE: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "compact": _compact,
    "rem.run": _rem,
    "compress.reset": _reset,
    "tune.adopt": _tune,
    "scale.apply": _scale,
    "scale.orphan": _orphan,
    "quota.pause": _pause,
    "purge.apply": _purge,
}


def describe_confirmation(kind: str, result: object) -> str:
    """One sentence for what approving a confirmation of ``kind`` did.

    Args:
        kind: The confirmation's kind (``purge.apply``, ``debt.dedup``…).
        result: The approval's result (``resolve(...)["result"]``).

    Returns:
        The sentence; compact JSON for a kind without one; '' when there is no result.
    """
    if isinstance(result, Mapping):
        if kind.startswith("debt."):
            inner = result.get("result", result)  # debt.apply answers {"result": {...}}
            return describe_result(kind, inner if isinstance(inner, Mapping) else result)
        if "error" in result:
            hint = f" ({result['hint']})" if result.get("hint") else ""
            return f"failed: {result['error']}{hint}"
        if kind in _DESCRIBE:
            return _DESCRIBE[kind](result)
    return json.dumps(result, default=str)[:RAW_LIMIT] if result else ""
