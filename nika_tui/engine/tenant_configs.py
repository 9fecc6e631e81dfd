"""Tenant configs travel through the shared Redis to joined workers (decision 382).

A worker on another host has its own config dir, empty: without a tenant's ``config.yaml`` it
would dead-letter every entry of a tenant it acquires. The primary (``nika serve`` of the host
where ``nika setup`` writes the configs) publishes each tenant's config into :data:`CONFIGS`
(tenant → YAML, as :func:`render_config` writes it) when it changed; a joined worker writes the
published ones into its own config dir (0600 files, 0700 dirs) before it takes any tenant, and
again whenever one changed. An entry of a tenant whose config has not arrived yet waits
(pending) up to :data:`CONFIG_WAIT_S` instead of being dead-lettered (decision 457).

What is published is the validated model, re-rendered: a tenant config holds references to
secrets (``SecretRef``: env / keyring / file, a name), never a value. A config in which the
secret masker still finds a credential (a key pasted into ``env:`` or a provider setting) is
not published, and the refusal is logged without the value.

A tenant deleted on the primary (its ``config.yaml`` gone) is withdrawn (decision 455): its
published config is removed and its id put in :data:`DELETED`; a joined worker then removes
its copy of the config, and every worker gives the tenant's lease up and stops acquiring it
(``engine/worker.py``). Its memories stay where they are (nothing is deleted but the config
copies), so a tenant made again with the same id gets them back. A primary whose config dir
has no ``tenants/`` directory at all withdraws nothing: that is a wrong config dir far more
often than a deletion. One whose ``tenants/`` directory is there but empty had its last tenant
deleted, and withdraws it like any other (decision 500).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

import redis

from nika_tui.domain.secret_patterns import mask_secrets
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import NikaError
from nika_tui.paths import Roots
from nika_tui.services.config_store import (
    list_tenant_ids,
    load_tenant,
    parse_config,
    render_config,
    save_tenant,
)
from nika_tui.services.redis_keys import PREFIX, RPC_GROUP, RPC_STREAM

log = logging.getLogger("nika.worker")

CONFIGS = f"{PREFIX}:tenants:configs"
"""Hash: tenant id → its config's YAML (no secret values: see the module docstring)."""
DELETED = f"{PREFIX}:tenants:deleted"
"""Set of tenant ids deleted on the primary: no worker keeps their config or their lease."""
SYNC_EVERY_S = 2.0
CONFIG_WAIT_S = 30.0
"""How long a joined worker keeps an entry of a tenant whose config has not reached it."""


def publish(r: redis.Redis, where: Roots) -> list[str]:
    """Publish every local tenant config that differs from the published one; withdraw the
    published ones whose tenant is no longer here (deleted).

    Returns:
        The tenants published now.
    """
    published: dict[str, str] = r.hgetall(CONFIGS)  # type: ignore[assignment]
    changed: dict[str, str] = {}
    for tenant_id in list_tenant_ids(where):
        try:
            text = render_config(load_tenant(tenant_id, where))
        except NikaError as exc:
            log.warning("tenant %s's config is not published: %s", tenant_id, exc.message)
            continue
        if published.get(tenant_id) == text:
            continue
        if mask_secrets(text)[1]:
            log.warning(
                "tenant %s's config holds what looks like a secret value; it is not published "
                "to the other workers (keep secrets in the secret store, not in the config)",
                tenant_id,
            )
            continue
        changed[tenant_id] = text
    local = set(list_tenant_ids(where))
    # No tenants/ dir at all is a wrong config dir; an empty one is the last tenant deleted.
    gone = sorted(set(published) - local) if local or where.tenants_dir.is_dir() else []
    if changed or gone:
        pipe = r.pipeline(transaction=True)
        for tenant_id, text in changed.items():
            pipe.hset(CONFIGS, tenant_id, text)
            pipe.srem(DELETED, tenant_id)  # made again: no longer deleted
        if gone:
            pipe.hdel(CONFIGS, *gone)
            pipe.sadd(DELETED, *gone)
        pipe.execute()
    if gone:
        log.info("tenants deleted here, withdrawn from the workers: %s", ", ".join(gone))
    elif published and not local:
        log.warning(
            "no tenants directory in %s: nothing withdrawn (a wrong config dir?)", where.config
        )
    return sorted(changed)


def fetch(r: redis.Redis, where: Roots) -> list[str]:
    """Write the published configs that differ from this worker's into its config dir, and
    remove the configs of tenants deleted on the primary.

    Returns:
        The tenants written or removed now.
    """
    published: dict[str, str] = r.hgetall(CONFIGS)  # type: ignore[assignment]
    written: list[str] = []
    for tenant_id, text in sorted(published.items()):
        path = where.tenant_config_path(tenant_id)
        try:
            if path.exists() and path.read_text(encoding="utf-8") == text:
                continue
            config = parse_config(path, text)  # a config this version cannot read stays out
            if config.tenant_id != tenant_id:
                continue
            save_tenant(config, where)
        except (OSError, NikaError) as exc:
            log.warning("tenant %s's published config was not written: %s", tenant_id, exc)
            continue
        written.append(tenant_id)
    for tenant_id in sorted(str(t) for t in r.smembers(DELETED)):
        path = where.tenant_config_path(tenant_id)
        if tenant_id in published or not path.exists():
            continue
        try:
            path.unlink()  # the primary's copy; the tenant's data here is left as it is
        except OSError as exc:
            log.warning("the config of deleted tenant %s was not removed: %s", tenant_id, exc)
            continue
        log.info("tenant %s was deleted on the primary: its config removed here", tenant_id)
        written.append(tenant_id)
    if written:
        log.info("tenant configs synced from the primary: %s", ", ".join(written))
    return written


class TenantConfigSync:
    """The service loop's side: the primary publishes, a joined worker fetches."""

    def __init__(
        self,
        r: redis.Redis,
        where: Roots,
        primary: bool,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.r = r
        self.where = where
        self.primary = primary
        self._monotonic = monotonic
        self._next = 0.0

    def ensure(self, tenant_ids: Iterable[str]) -> None:
        """On a joined worker, fetch now when a tenant it is about to ingest has no config here
        (created on the primary since the last fetch): else its entries are dead-lettered."""
        if not self.primary and any(
            not self.where.tenant_config_path(t).exists() for t in tenant_ids
        ):
            self.tick(force=True)

    def missing(self, tenant_id: str) -> bool:
        """True on a joined worker when ``tenant_id`` (a valid id) has no config here yet."""
        if self.primary:
            return False
        try:
            check_tenant_id(tenant_id)
        except NikaError:
            return False  # not a tenant id at all: the op's own check says so
        return not self.where.tenant_config_path(tenant_id).exists()

    def keeps_rpc(self, entry_id: str, tenant_id: str, consumer: str) -> bool:
        """Keep an RPC of a tenant made on the primary since the last fetch pending until its
        config comes, as its ingest entries are (decision 511): a fetch at once, then the
        deferred retry, up to :data:`CONFIG_WAIT_S`; past that it is refused as unknown.

        Returns:
            True when the entry was kept: pending under ``consumer`` (a reader passed it on
            pending under its own name), so that consumer's retry reads it again.
        """
        if not self.missing(tenant_id):
            return False
        self.ensure([tenant_id])
        if not self.waiting([(entry_id, tenant_id)]):
            return False
        self.r.xclaim(RPC_STREAM, RPC_GROUP, consumer, 0, [entry_id], justid=True)
        return True

    def waiting(self, entries: Iterable[tuple[str, str]]) -> set[str]:
        """The ``(entry id, tenant)`` entries to leave pending: their tenant has no config here
        yet and the entry is younger than :data:`CONFIG_WAIT_S` (decision 457).

        A tenant made on the primary is published within :data:`SYNC_EVERY_S` (more if the
        primary is busy in a batch); an entry that reached this worker first waits for it
        instead of being dead-lettered as an unknown tenant. Past the wait, the entry goes on
        and is refused as before: a tenant that never comes is bad input, not a delay. The
        age is the entry id's time against Redis's clock (one clock, whatever the hosts say).
        """
        if self.primary:
            return set()  # the primary's config dir is where tenants are made: no wait there
        entries = list(entries)
        missing = {t for _, t in entries if not self.where.tenant_config_path(t).exists()}
        if missing:  # a tenant deleted on the primary is not on its way: refused at once
            missing -= {t for t in missing if self.r.sismember(DELETED, t)}
        if not missing:
            return set()
        seconds, micros = self.r.time()
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        return {
            entry_id
            for entry_id, tenant_id in entries
            if tenant_id in missing
            and now_ms - int(entry_id.split("-", 1)[0]) < CONFIG_WAIT_S * 1000
        }

    def tick(self, force: bool = False) -> list[str]:
        """Publish or fetch at most every :data:`SYNC_EVERY_S`; the tenants that changed."""
        now = self._monotonic()
        if not force and now < self._next:
            return []
        self._next = now + SYNC_EVERY_S
        return publish(self.r, self.where) if self.primary else fetch(self.r, self.where)
