"""Which tenants a worker hands over: its excess after a new worker joined, or all of them when
it drains before a decommission (decision 381).

Pure: the caller passes who holds what, who is live, who drains and the pins of moves already
under way. A move is a pin (``nika:lease:pin:{tenant}``): the holder releases the tenant on its
next tick (flush, close, shards published when a peer is on another host), the pinned worker
acquires it and adopts the shards, exactly as ``nika scale move``. Only the holder decides
about its own tenants, so no two workers ever move the same tenant.

- a draining worker pins every tenant it holds to a live worker that is not draining (the
  rendezvous winner among them);
- otherwise, when it holds at least two tenants more than the least-loaded live worker, it pins
  one tenant to that worker, one move at a time (none while one of its own moves is under
  way): the counts converge and never swing back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from nika_tui.engine.worker_keys import preferred


def moves(
    me: str,
    holders: Mapping[str, str | None],
    live: Sequence[str],
    draining: set[str],
    pins: Mapping[str, str | None],
) -> dict[str, str]:
    """The tenants ``me`` should hand over now, each with the worker it goes to.

    Args:
        me: this worker's id.
        holders: every known tenant → the worker holding its lease (``None``: free).
        live: the live workers (``me`` among them).
        draining: workers being decommissioned (they receive no tenant).
        pins: tenant → the worker a move already sent it to (``None``: no move).
    """
    mine = sorted(t for t, h in holders.items() if h == me)
    others = [w for w in live if w != me and w not in draining]
    if not mine or not others:
        return {}
    if me in draining:
        return {t: preferred(t, others) for t in mine if pins.get(t) in (None, me)}
    if any(pins.get(t) not in (None, me) for t in mine):
        return {}  # one move at a time: wait until the last one landed
    counts = {w: 0 for w in [me, *others]}
    for holder in holders.values():
        if holder in counts:
            counts[holder] += 1
    least = min(others, key=lambda w: (counts[w], w))
    if counts[me] - counts[least] < 2:
        return {}
    # The tenant whose hash prefers the receiver most: where it would have gone if it had been free.
    tenant = max(mine, key=lambda t: hashlib.sha256(f"{t}|{least}".encode()).digest())
    return {tenant: least}
