"""One memory-service worker among several on one Redis (``nika serve [--join REDIS_URL]``).

Every worker reads the shared ingest and RPC streams in the one consumer group, under its own
consumer name (its worker id). It processes only the entries of tenants whose lease it holds
(:mod:`nika_tui.engine.leases`); an entry of another tenant is handed, still unacknowledged, to
the holder's consumer (``XCLAIM``) and the holder is told through its inbox key, so it drains its
pending entries. A free tenant goes to its preferred worker: the highest rendezvous hash of
(tenant, worker) among the live workers, so tenants spread evenly and every worker agrees.

Takeover: a worker's heartbeat and leases lapse :data:`LEASE_TTL_S` after it died; the
preferred live worker then acquires each free tenant, claims the dead consumer's pending
entries and replays them (idempotent: a point id is ``uuid5(tenant, content key)``). The
acquirer adopts the tenant's shards from the previous holder's data dir when both share a host
(or, with ``QDRANT_URL``, a shared Qdrant holds them and nothing moves).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import redis

from nika_tui.domain.memory import Layer
from nika_tui.engine import rebalance, shard_transfer
from nika_tui.engine.leases import Lease, Leases
from nika_tui.engine.tenant_configs import DELETED
from nika_tui.engine.worker_keys import (
    LEASE_TTL_S,
    PRIMARY_ID,
    WORKERS,
    alive_key,
    draining_key,
    home_key,
    inbox_key,
    info_key,
    live_workers,
    pin_key,
    preferred,
)
from nika_tui.errors import NikaError
from nika_tui.services import redis_keys

log = logging.getLogger("nika.worker")


class Worker:
    """Leases, hand-offs and takeovers of one worker; the service loop calls into it."""

    def __init__(
        self,
        r: redis.Redis,
        worker_id: str,
        data: Path,
        vectors: Any,
        ttl_s: float | None = None,
        host: str | None = None,
    ) -> None:
        self.r = r
        self.id = worker_id
        self.data = data
        self.vectors = vectors
        self.host = host or socket.gethostname()
        """Workers on other hosts get shards through Redis (``engine/shard_transfer.py``)."""
        self.ttl_s = LEASE_TTL_S if ttl_s is None else ttl_s
        self.leases = Leases(r, worker_id, self.ttl_s)
        self.held: dict[str, Lease] = {}
        self._last_tick = 0.0
        self._live: list[str] = [worker_id]
        self._draining: set[str] = set()
        self._lock = threading.Lock()
        self._dropped: set[str] = set()
        """Tenants whose renewal failed on the renewer thread; the loop closes their shards."""
        self._halt = threading.Event()
        self._renewer: threading.Thread | None = None
        self.keep_now: Callable[[str], bool] = lambda _tenant: False
        """Tenants not to move now: a reset runs on them here (the service sets it, #22)."""

    def start(self) -> None:
        """Renew the leases and the heartbeat on a thread: an ingest batch or a replay can keep
        the loop busy longer than a TTL, and a busy worker is still a live holder. Safety never
        rests on this thread: a worker that lost a lease anyway is stopped by the fence."""
        if self._renewer is None:
            self._renewer = threading.Thread(
                target=self._renew_loop, name="nika-leases", daemon=True
            )
            self._renewer.start()

    def _renew_loop(self) -> None:
        while not self._halt.wait(self.ttl_s / 4):
            try:
                self.renew_all()
                self.beat()
            except redis.RedisError as exc:
                log.warning("lease renewal failed (retrying): %s", exc)

    def renew_all(self) -> None:
        """Renew every held lease; a lease found lost is dropped (the loop closes its shards)."""
        with self._lock:
            for tenant_id, lease in list(self.held.items()):
                if not self.leases.renew(lease):
                    self.held.pop(tenant_id, None)
                    self._dropped.add(tenant_id)

    @property
    def primary(self) -> bool:
        """The worker ``nika up`` starts (it also carries the service heartbeat)."""
        return self.id == PRIMARY_ID

    # --- registration -------------------------------------------------------------------
    def check_single(self) -> None:
        """Refuse to start beside a live process that already runs this worker id."""
        raw = self.r.get(alive_key(self.id))
        info = json.loads(str(raw)) if raw else {}
        pid = int(info.get("pid", 0)) if isinstance(info, dict) else 0
        if not pid or pid == os.getpid():
            return
        from nika_tui.services.liveness import process_alive

        if info.get("host") != self.host or process_alive(pid):
            raise NikaError(
                f"worker {self.id} is already running (pid {pid} on {info.get('host')})",
                "stop it first, or start this one with another data dir",
            )

    def beat(self) -> None:
        """Register and refresh the heartbeat; it lists the live workers this one sees."""
        info = {"pid": os.getpid(), "host": self.host, "data_dir": str(self.data)}
        pipe = self.r.pipeline(transaction=True)
        pipe.sadd(WORKERS, self.id)
        alive = {**info, "sees": self._live, "tenants": sorted(dict(self.held))}
        pipe.set(alive_key(self.id), json.dumps(alive), px=int(self.ttl_s * 1000))
        pipe.hset(info_key(self.id), mapping={k: str(v) for k, v in info.items()})
        pipe.execute()

    def owns(self, tenant_id: str) -> bool:
        """True when this worker is the tenant's writer (a free tenant it should hold is
        acquired now): the per-tenant passes (audit, REM, index builds, tuning) run here."""
        return self.route(tenant_id) == self.id

    # --- routing ------------------------------------------------------------------------
    def holds(self, tenant_id: str) -> bool:
        """True while this worker's lease on the tenant is certainly valid (renewed if due)."""
        lease = self.held.get(tenant_id)
        if lease is None:
            return False
        if time.monotonic() < lease.valid_until:
            return True
        with self._lock:
            if self.leases.renew(lease):
                return True
        self._lost(tenant_id)
        return False

    def holds_now(self, tenant_id: str) -> bool:
        """True while the lease is certainly valid, with no renewal and no state change: what
        a reader thread may ask (the renewer keeps ``valid_until`` ahead; else the loop routes)."""
        lease = self.held.get(tenant_id)
        return lease is not None and time.monotonic() < lease.valid_until

    def route(self, tenant_id: str) -> str | None:
        """``self.id`` when the tenant is ours (acquired now if free and preferred), else the
        worker to hand its entries to; ``None``: wait (our old lease, token unknown, lapsing)."""
        if self.holds(tenant_id):
            return self.id
        holder = self.leases.holders([tenant_id])[tenant_id]
        if holder is None:
            target = self._target(tenant_id, self.r.get(pin_key(tenant_id)))
            if target != self.id:
                return target
            return self.id if self._acquire(tenant_id) else None
        return None if holder == self.id else holder

    def _target(self, tenant_id: str, pin: Any) -> str:
        """The worker a free tenant goes to: its pin (a move) if live, else the hash winner."""
        live = [w for w in self._live if w not in self._draining] or self._live or [self.id]
        if pin and str(pin) in live:
            return str(pin)
        return preferred(tenant_id, live)

    def hand_off(self, stream: str, group: str, ids: Sequence[str], target: str) -> None:
        """Move pending entries to ``target``'s consumer (unacknowledged) and wake it up."""
        if not ids:
            return
        # JUSTID: a hand-off is no delivery attempt (the dead-letter count stays honest).
        self.r.xclaim(stream, group, target, 0, list[Any](ids), justid=True)
        self.r.set(inbox_key(target), "1", ex=max(1, int(self.ttl_s * 4)))

    def keep(
        self, stream: str, group: str, entries: Sequence[tuple[str, str | None]]
    ) -> tuple[set[str], bool]:
        """Route ``(entry id, tenant)`` pairs: hand the others' entries off, return ours.

        An entry without a tenant is ours. The flag is True when some entries wait here (our
        own old lease, lapsing): the caller retries them later.
        """
        routes: dict[str | None, str | None] = {}
        kept: set[str] = set()
        away: dict[str, list[str]] = {}
        waiting = False
        for entry_id, tenant_id in entries:
            if tenant_id is None:
                kept.add(entry_id)
                continue
            if tenant_id not in routes:
                routes[tenant_id] = self.route(tenant_id)
            target = routes[tenant_id]
            if target == self.id:
                kept.add(entry_id)
            elif target is None:
                waiting = True
            else:
                away.setdefault(target, []).append(entry_id)
        for target, ids in away.items():
            self.hand_off(stream, group, ids, target)
        return kept, waiting

    # --- the periodic part --------------------------------------------------------------
    def tick(self, group: str, force: bool = False) -> bool:
        """Heartbeat, renewals, takeovers, orphan claims, inbox; True when a drain is due."""
        now = time.monotonic()
        if not force and now - self._last_tick < self.ttl_s / 5:
            return False
        self._last_tick = now
        self.beat()  # first: a starting worker counts itself among the live ones
        self._live = live_workers(self.r) or [self.id]
        marks = self.r.mget([draining_key(w) for w in self._live])
        self._draining = {w for w, m in zip(self._live, marks, strict=True) if m}
        self.renew_all()
        with self._lock:
            dropped, self._dropped = self._dropped, set()
        for tenant_id in dropped:
            self._lost(tenant_id)
        drain = bool(dropped)
        deleted = {str(t) for t in self.r.smembers(DELETED)}
        for tenant_id in deleted:
            self._forget(tenant_id)
        known = [t for t in self.leases.known_tenants() if t not in deleted]
        raw_pins = self.r.mget([pin_key(t) for t in known]) if known else []
        pins = {t: str(v) if v else None for t, v in zip(known, raw_pins, strict=True)}
        holders = self.leases.holders(known)
        # A new worker's share, or everything when draining: pinned, then released just below.
        for tenant_id, to in rebalance.moves(
            self.id, holders, self._live, self._draining, pins
        ).items():
            self.r.set(pin_key(tenant_id), to)
            pins[tenant_id] = to
        for tenant_id, holder in holders.items():
            pin = pins.get(tenant_id)
            moving = holder == self.id and pin and pin != self.id and pin in self._live
            if moving and not self.keep_now(tenant_id):  # a reset's tenant moves after it
                self.release(tenant_id)  # a move: the pinned worker acquires it next
                log.info("tenant %s released for its move to %s", tenant_id, pin)
                drain = True  # its entries read but not acknowledged: hand them to the new holder
            elif holder is None and self._target(tenant_id, pin) == self.id:
                drain |= self._acquire(tenant_id)
            elif holder == self.id and tenant_id not in self.held:
                # Our own id, not our token: a previous process of this worker died holding
                # it (check_single ruled out a live one). No need to wait for the TTL.
                drain |= self._acquire(tenant_id, reclaim=True)
        drain |= self._claim_orphans(group)
        pipe = self.r.pipeline(transaction=True)
        pipe.get(inbox_key(self.id))
        pipe.delete(inbox_key(self.id))
        drain |= bool(pipe.execute()[0])
        return drain

    def _claim_orphans(self, group: str) -> bool:
        """Claim the pending entries of consumers whose worker is not live (died, stopped)."""
        claimed = False
        for stream in (redis_keys.INGEST_STREAM, redis_keys.RPC_STREAM):
            try:
                consumers: Any = self.r.xinfo_consumers(stream, group)
            except redis.ResponseError:
                continue  # no group yet
            for row in consumers:
                name = str(row["name"])
                owner = name.split(":read", 1)[0]  # a worker's reader threads: "<id>:read<i>"
                if owner == self.id or owner in self._live or not int(row["pending"]):
                    continue
                rows: Any = self.r.xpending_range(
                    stream, group, min="-", max="+", count=1000, consumername=name
                )
                ids = [str(p["message_id"]) for p in rows]
                if ids:
                    log.info("claiming %d entries of %s (not live) on %s", len(ids), name, stream)
                    self.r.xclaim(stream, group, self.id, 0, list[Any](ids), justid=True)
                    claimed = True
        return claimed

    # --- acquire, lose, release ---------------------------------------------------------
    def _acquire(self, tenant_id: str, reclaim: bool = False) -> bool:
        lease = self.leases.reclaim(tenant_id) if reclaim else self.leases.acquire(tenant_id)
        if lease is None:
            return False
        try:
            self._adopt_shards(tenant_id)
        except (OSError, NikaError) as exc:
            self.leases.release(lease)
            log.warning("could not adopt the shards of %s, lease released: %s", tenant_id, exc)
            return False
        with self._lock:
            self.held[tenant_id] = lease
        self.r.set(home_key(tenant_id), self.id)
        if self.r.get(pin_key(tenant_id)) == self.id:
            # The move is done once the pinned worker holds the tenant; it then stays by itself.
            self.r.delete(pin_key(tenant_id))
        log.info("worker %s now holds tenant %s (%s)", self.id, tenant_id, lease.token)
        return True

    def _close_tenant(self, tenant_id: str) -> None:
        """Flush and close the tenant's open shards (they may be copied or reopened elsewhere)."""
        take = getattr(self.vectors, "take_offline", None)
        if not callable(take):
            return  # a Qdrant server: nothing held open per tenant here
        for layer in Layer:
            if take(tenant_id, layer) is not None:
                self.vectors.bring_online(tenant_id, layer)

    def _adopt_shards(self, tenant_id: str) -> None:
        """Bring the newest shards of the tenant into this worker's store (same host: copy)."""
        root = getattr(self.vectors, "root", None)
        home = self.r.get(home_key(tenant_id))
        if root is None or not home or str(home) == self.id:
            return
        info: Any = self.r.hgetall(info_key(str(home)))
        src = Path(str(info.get("data_dir", ""))) / "qdrant" / tenant_id
        dst = Path(root) / tenant_id
        if info.get("host") != self.host:
            if shard_transfer.pack_from(self.r, tenant_id) == str(home):
                self._close_tenant(tenant_id)
                shard_transfer.adopt(self.r, tenant_id, Path(root), str(home))
                return
            log.warning(
                "tenant %s was held on %s and left no shard pack (it died?): its Edge shards "
                "stay there until it returns (use QDRANT_URL to share)",
                tenant_id,
                info.get("host"),
            )
            return
        if not src.is_dir() or src.resolve() == dst.resolve():
            return
        self._close_tenant(tenant_id)
        tmp = dst.with_name(f".{tenant_id}.adopting")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp)
        shutil.rmtree(dst, ignore_errors=True)
        tmp.rename(dst)
        log.info("adopted the shards of %s from %s (%s)", tenant_id, home, src)

    def _forget(self, tenant_id: str) -> None:
        """A tenant deleted on the primary (decision 455): flush and close its shards, give
        its lease up, and take it off the lease table so no worker acquires it again."""
        with self._lock:
            lease = self.held.pop(tenant_id, None)
        if lease is not None:
            self._close_tenant(tenant_id)
            self.leases.release(lease)
            log.info("tenant %s was deleted: worker %s gave it up", tenant_id, self.id)
        self.leases.forget(tenant_id)
        self.r.delete(pin_key(tenant_id))  # its home stays: made again, it finds its shards

    def _lost(self, tenant_id: str) -> None:
        with self._lock:
            self.held.pop(tenant_id, None)
        log.warning("worker %s lost the lease of tenant %s", self.id, tenant_id)
        self._close_tenant(tenant_id)

    def release(self, tenant_id: str) -> None:
        """Flush and close the tenant's shards, then give its lease up (a move or a stop)."""
        with self._lock:
            lease = self.held.pop(tenant_id, None)
        if lease is None:
            return
        self._close_tenant(tenant_id)
        root = getattr(self.vectors, "root", None)
        if root is not None and self._remote_peers():
            try:
                # Before the release: whoever acquires next finds the pack already there.
                shard_transfer.publish(self.r, tenant_id, Path(root), self.id, self.host)
            except (OSError, redis.RedisError) as exc:
                log.warning("could not publish the shards of %s: %s", tenant_id, exc)
        self.leases.release(lease)

    def _remote_peers(self) -> bool:
        """True when a live worker runs on another host (shards must then travel by Redis)."""
        pipe = self.r.pipeline(transaction=False)
        others = [w for w in live_workers(self.r) if w != self.id]
        for worker_id in others:
            pipe.hget(info_key(worker_id), "host")
        return any(str(h) != self.host for h in pipe.execute() if h)

    def stop(self) -> None:
        """Release every lease and the heartbeat: the other workers take over at once."""
        self._halt.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        for tenant_id in list(self.held):
            self.release(tenant_id)
        self.r.delete(alive_key(self.id))

    # --- the fence ----------------------------------------------------------------------
    def ack(
        self,
        group: str,
        by_tenant: Mapping[str, tuple[list[str], list[tuple[str, str]]]],
        done_ttl_s: int,
    ) -> bool:
        """Fenced acknowledgement per tenant; False if a lease was lost (entries left pending)."""
        ok = True
        for tenant_id, (ids, done) in by_tenant.items():
            lease = self.held.get(tenant_id)
            if lease is None or not self.leases.fenced_ack(
                lease, redis_keys.INGEST_STREAM, group, ids, done, done_ttl_s
            ):
                ok = False
                if lease is not None:
                    self._lost(tenant_id)
        return ok
