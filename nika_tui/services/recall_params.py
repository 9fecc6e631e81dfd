"""A tenant's adopted recall parameters and its last tuning, in Redis (hash ``recall_params``).

Read by recall on every query and by the dashboard's tenant detail (no torch, no qdrant here);
written only by the tuner when the seed's rule lets a new set be adopted.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from nika_tui.domain.recall_params import RecallParams
from nika_tui.services import redis_keys


def params_key(tenant_id: str) -> str:
    """``nika:t:{tenant}:recall_params``."""
    return redis_keys.tenant_key(tenant_id, "recall_params")


def read_params(r: redis.Redis, tenant_id: str) -> tuple[RecallParams, bool]:
    """The tenant's parameters and whether any were adopted (defaults otherwise)."""
    raw: dict[str, str] = r.hgetall(params_key(tenant_id))  # type: ignore[assignment]
    return params_from_fields(raw)


def params_from_fields(raw: dict[str, str]) -> tuple[RecallParams, bool]:
    """:func:`read_params` of the hash's fields (read by the caller, e.g. in a pipeline)."""
    adopted = raw.get("adopted") == "1"
    return (RecallParams.from_fields(raw) if adopted else RecallParams()), adopted


def adopt_params(r: redis.Redis, tenant_id: str, params: RecallParams, at: str) -> None:
    """Put ``params`` in force for the tenant's recalls."""
    mapping: dict[Any, Any] = {**params.clamped().to_fields(), "adopted": "1", "adopted_at": at}
    r.hset(params_key(tenant_id), mapping=mapping)


def record_tuning(r: redis.Redis, tenant_id: str, summary: dict[str, Any]) -> None:
    """Keep the last tuning's outcome (gain, noise, decision) for the dashboard."""
    r.hset(params_key(tenant_id), "last_tuning", json.dumps(summary, default=str))


def last_tuning(r: redis.Redis, tenant_id: str) -> dict[str, Any] | None:
    """The last tuning's outcome, if any."""
    raw = r.hget(params_key(tenant_id), "last_tuning")
    try:
        value = json.loads(str(raw)) if raw else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def describe(r: redis.Redis, tenant_id: str) -> str:
    """One line for the dashboard: parameters in force, last tuning's gain ± noise and outcome.

    A never-tuned tenant still gets the defaults' values: the person deciding whether to tune
    needs to know what is in force, and "nothing shown" read as "no recall parameters".
    """
    params, adopted = read_params(r, tenant_id)
    last = last_tuning(r, tenant_id)
    if adopted:
        state = "tuned"
    elif last is None:
        state = "defaults, not tuned yet:"
    else:
        state = "default"
    text = (
        f"{state} floor {params.palace_floor:.2f} "
        f"dense {params.dense_weight:.1f} recency {params.recency_weight:.1f}"
        f"/{params.recency_tau_days:.0f}d depth ×{params.depth_factor}"
    )
    if params.hnsw_ef:
        text += f" ef {params.hnsw_ef}"
    if last is not None:
        text += (
            f" · last tuning {str(last.get('at', ''))[:16]}: gain "
            f"{float(last.get('gain', 0)):+.3f} ± {float(last.get('noise_sd', 0)):.3f} "
            f"({last.get('action', '?')})"
        )
    return text
