"""``nika serve --join REDIS_URL`` and ``nika scale workers``: the workers of one installation.

The URL given to ``--join`` carries no password (it is in the cloud-init user data, readable
from the instance metadata); the password comes from ``NIKA_REDIS_PASSWORD_FILE`` (0600), put
there over SSH or the provider's secret manager (docs/scale.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import redis

from nika_tui.engine import leases as lease_ops
from nika_tui.engine import worker_keys as w
from nika_tui.errors import NikaError
from nika_tui.services.redis_urls import check_redis_url, host_port
from nika_tui.settings import Settings


def join_url(url: str, settings: Settings) -> str:
    """The Redis URL to join, with the password from ``NIKA_REDIS_PASSWORD_FILE`` if set.

    Raises:
        ConfigError: not a redis://, rediss:// or unix:// URL (an IPv6 host needs brackets).
        NikaError: the password file is unreadable.
    """
    url = check_redis_url(url, "--join")
    parts = urlsplit(url)
    local = parts.scheme == "unix"  # a worker on the primary's host
    file = settings.redis_password_file
    if local or not file or parts.password is not None:
        return url
    try:
        secret = Path(file).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise NikaError(
            f"cannot read the Redis password file {file}", "place it (0600) before joining"
        ) from exc
    # The host as written (an IPv6 literal keeps its brackets: "[::1]:6379"), userinfo replaced.
    userinfo = f"{quote(parts.username or '', safe='')}:{quote(secret, safe='')}"
    netloc = f"{userinfo}@{host_port(parts)}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def lease_ttl(settings: Settings) -> float:
    """``NIKA_LEASE_TTL_S`` (seconds a dead worker's tenants wait before a takeover).

    Raises:
        NikaError: not a number of at least 1.
    """
    raw = settings.lease_ttl_s
    if not raw:
        return w.LEASE_TTL_S
    try:
        ttl = float(raw)
    except ValueError:
        ttl = 0.0
    if ttl < 1:
        raise NikaError(f"NIKA_LEASE_TTL_S={raw!r} is not a TTL", "give seconds, at least 1")
    return ttl


def workers_status(r: redis.Redis) -> list[dict[str, Any]]:
    """Every registered worker: live or not, host, data dir, pid and the tenants it holds."""
    live = set(w.live_workers(r))
    ids = sorted(str(x) for x in r.smembers(w.WORKERS))
    tenants = lease_ops.Leases(r, "status", 1).known_tenants()
    pipe = r.pipeline(transaction=False)
    for tenant_id in tenants:
        pipe.get(lease_ops.lease_key(tenant_id))
        pipe.pttl(lease_ops.lease_key(tenant_id))
    values = pipe.execute()
    held: dict[str, list[dict[str, Any]]] = {}
    for i, tenant_id in enumerate(tenants):
        token, pttl = values[2 * i], values[2 * i + 1]
        holder = lease_ops.holder_of(str(token) if token else None)
        if holder is not None:
            epoch = int(str(token).rsplit("|", 1)[1])
            held.setdefault(holder, []).append(
                {"tenant": tenant_id, "epoch": epoch, "ttl_ms": int(pttl)}
            )
    rows = []
    for worker_id in ids:
        info: Any = r.hgetall(w.info_key(worker_id))
        rows.append({
            "id": worker_id,
            "live": worker_id in live,
            "host": info.get("host"),
            "data_dir": info.get("data_dir"),
            "pid": int(info["pid"]) if info.get("pid") else None,
            "leases": held.get(worker_id, []),
        })  # fmt: skip
    free = [t for t in tenants if not any(t == x["tenant"] for v in held.values() for x in v)]
    if free:
        leases = [{"tenant": t, "epoch": None, "ttl_ms": None} for t in free]
        rows.append(
            {
                "id": None,
                "live": False,
                "host": None,
                "data_dir": None,
                "pid": None,
                "leases": leases,
            }
        )
    return rows


def request_move(r: redis.Redis, tenant_id: str, to: str) -> dict[str, Any]:
    """Pin a tenant to a live worker: its holder releases it (flush, close), the pinned worker
    acquires it, adopts its shards and replays what was not acknowledged.

    Raises:
        NikaError: the tenant was never leased, or the worker is not live.
    """
    leases = lease_ops.Leases(r, "move", 1)
    if tenant_id not in leases.known_tenants():
        raise NikaError(
            f"tenant {tenant_id} has no lease yet", "a tenant gets one with its first memory"
        )
    if to not in w.live_workers(r):
        raise NikaError(f"worker {to!r} is not live", "see `nika scale workers`")
    holder = leases.holders([tenant_id])[tenant_id]
    if holder != to:
        r.set(w.pin_key(tenant_id), to)
    return {"tenant": tenant_id, "from": holder, "to": to, "moving": holder != to}


def print_workers(rows: list[dict[str, Any]], as_json: bool) -> None:
    """``nika scale workers`` output."""
    if as_json:
        print(json.dumps({"workers": rows}, indent=2))
        return
    for row in rows:
        name = row["id"] or "(free)"
        state = "live" if row["live"] else ("-" if row["id"] is None else "not live")
        tenants = ", ".join(x["tenant"] for x in row["leases"]) or "no tenant"
        print(f"{name}  {state}  {row['host'] or ''}  {tenants}")
