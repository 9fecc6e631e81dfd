"""The memory service's own reconcile pass: no orphan instance is left running unseen.

Every ``every_s`` (10 min; the first pass ``first_s`` after the start), the worker that holds
the lease ``nika:scale:reconcile-lease`` in Redis runs :func:`nika_tui.scale.actions.reconcile`
over every tenant: one pass per installation however many workers joined, and a dead holder's
lease lapses (three periods) so another worker takes over. An instance in flight (its plan
``applying``) is adopted, as by ``nika scale reconcile``.

An orphan (a nika-tagged instance no worker record tracks) belongs to the tenant its tag names
(else the tenant whose account listed it). Its tenant's ``auto_actions.scale`` decides:
``autonomous`` deletes it (bus ``scale.orphan_removed``); ``off`` and ``escalate`` make it an
attention item, a ``scale.orphan`` confirmation naming the provider and the instance (once per
instance while it is pending): approving it deletes that instance, if it is still untracked
(:func:`approve_orphan`). An orphan bills by the hour, so even ``off`` asks a person.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.domain.tenant import AutoMode, Provider, TenantConfig
from nika_tui.errors import NikaError, ScaleError
from nika_tui.paths import Roots
from nika_tui.scale.actions import AdapterFactory, ReconcileReport, default_factory, reconcile
from nika_tui.scale.state import ScaleState
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import list_tenant_ids, load_tenant
from nika_tui.services.confirmation_queue import pending_confirmations, queue_confirmation

log = logging.getLogger("nika.scale")

LEASE_KEY = "nika:scale:reconcile-lease"
ORPHAN_KIND = "scale.orphan"

# Take the lease when free, renew it when ours; never take it from a live holder.
_TAKE_OR_RENEW = """
local held = redis.call('GET', KEYS[1])
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


def take_lease(client: redis.Redis, owner: str, ttl_s: float) -> bool:
    """Hold ``nika:scale:reconcile-lease`` for ``ttl_s`` (taken when free, renewed when ours)."""
    return bool(client.eval(_TAKE_OR_RENEW, 1, LEASE_KEY, owner, int(ttl_s * 1000)))


def _owner_of(orphan: Mapping[str, Any], configs: Mapping[str, TenantConfig]) -> TenantConfig:
    """The tenant an orphan belongs to: the one its tag names, else one that uses its provider."""
    tagged = configs.get(str(orphan.get("tenant_id") or ""))
    provider = Provider(str(orphan["provider"]))
    if tagged is not None and provider in tagged.providers:
        return tagged
    users = [c for _, c in sorted(configs.items()) if provider in c.providers]
    return users[0] if users else next(iter(configs.values()))


def _asked(client: redis.Redis, tenant_id: str, orphan: Mapping[str, Any]) -> bool:
    return any(
        item.get("provider") == orphan["provider"]
        and item.get("instance_id") == orphan["instance_id"]
        for item in pending_confirmations(client, tenant_id, ORPHAN_KIND)
    )


def handle_orphans(
    report: ReconcileReport,
    configs: Mapping[str, TenantConfig],
    factory: AdapterFactory,
    client: redis.Redis,
    now: datetime,
    where: Roots,
) -> list[str]:
    """Remove or report each orphan of ``report`` as its tenant's ``auto_actions.scale`` says
    (each on its tenant's bus under ``where``).

    Returns:
        What was done, one ``orphan:{tenant}:{provider}/{id}:{removed|asked|pending|failed}``
        per orphan.
    """
    done: list[str] = []
    for orphan in report.orphans:
        config = _owner_of(orphan, configs)
        tenant = config.tenant_id
        label = f"{orphan['provider']}/{orphan['instance_id']}"
        bus = open_bus(tenant, where)
        if config.auto_actions.scale is AutoMode.AUTONOMOUS:
            try:
                factory(config, Provider(orphan["provider"])).delete(str(orphan["instance_id"]))
            except NikaError as exc:
                report.errors.append(f"{label}: {exc.message}")
                done.append(f"orphan:{tenant}:{label}:failed")
                continue
            report.removed.append(dict(orphan))
            bus.append("scale.orphan_removed", dict(orphan), now=now)
            done.append(f"orphan:{tenant}:{label}:removed")
            continue
        if _asked(client, tenant, orphan):
            done.append(f"orphan:{tenant}:{label}:pending")
            continue
        title = (
            f"untracked nika worker {orphan['name'] or orphan['instance_id']} on "
            f"{orphan['provider']} ({orphan['state'] or 'state unknown'}): remove it?"
        )
        detail = (
            f"{label} carries nika's tags (tenant {orphan['tenant_id']}, plan "
            f"{orphan['plan_id']}) but no worker record; approving deletes it"
        )
        target = {"provider": orphan["provider"], "instance_id": orphan["instance_id"]}
        item = queue_confirmation(client, tenant, ORPHAN_KIND, title, detail, now, target)
        bus.append("scale.orphan", {**orphan, "confirmation_id": item["id"]}, now=now)
        done.append(f"orphan:{tenant}:{label}:asked")
    return done


def approve_orphan(
    tenant_id: str,
    provider: str,
    instance_id: str,
    where: Roots,
    client: redis.Redis | None = None,
    secrets_env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Delete the orphan an approved ``scale.orphan`` confirmation names; ``secrets_env``: where
    the provider's keys are read (``os.environ`` when ``None``).

    Raises:
        ScaleError: a worker record now tracks that instance (it was adopted meanwhile).
        ProviderError: the provider refused the delete.
    """
    state = ScaleState(where, client)  # the shared Redis holds the workers (decision 380)
    if any(w.provider.value == provider and w.instance_id == instance_id for w in state.workers()):
        raise ScaleError(
            f"{provider}/{instance_id} is a tracked worker now; it was not removed",
            "decommission it with `nika scale decommission` if it is not wanted",
        )
    config = load_tenant(tenant_id, where)
    default_factory(secrets_env)(config, Provider(provider)).delete(instance_id)
    return {"removed": {"provider": provider, "instance_id": instance_id}}


class ReconcileScheduler:
    """Runs the reconcile pass from the service loop, on the lease holder only."""

    def __init__(
        self,
        client: redis.Redis,
        owner: str,
        where: Roots,
        secrets_env: Mapping[str, str] | None = None,
        every_s: float = 600.0,
        first_s: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
        factory: AdapterFactory | None = None,
    ) -> None:
        """``where``: the tenants' configs and buses; ``secrets_env``: where the default
        factory reads the providers' keys (``os.environ`` when ``None``)."""
        self.client = client
        self.owner = f"{owner}:{uuid.uuid4().hex[:8]}"
        """This service's lease token (unique per start: a restarted worker is a new holder)."""
        self.roots = where
        self.every_s = every_s
        self._monotonic = monotonic
        # Not at once: a service that starts and stops (a test, `nika up` retried) lists no
        # provider, and an apply interrupted by the restart has settled.
        self._next = monotonic() + first_s
        self.state = ScaleState(self.roots, client)  # the plans in the shared Redis (380)
        self.factory = factory or default_factory(secrets_env)

    def tick(self, now: datetime | None = None) -> list[str]:
        """Reconcile when due and the lease is ours; return what was done (``orphan:…``)."""
        mono = self._monotonic()
        if mono < self._next:
            return []
        self._next = mono + self.every_s
        at = now or datetime.now(UTC)
        try:
            if not take_lease(self.client, self.owner, 3 * self.every_s):
                return []
            configs = {t: load_tenant(t, self.roots) for t in list_tenant_ids(self.roots)}
            configs = {t: c for t, c in configs.items() if c.providers}
            if not configs:
                return []
            report = reconcile(configs.values(), self.state, self.factory)
            done = handle_orphans(report, configs, self.factory, self.client, at, self.roots)
        except (NikaError, OSError, redis.RedisError) as exc:
            log.warning("scale reconcile failed: %s", exc)
            return []
        except (KeyError, ValueError, TypeError) as exc:
            # A provider's 2xx answer in a form the adapter cannot read: the next pass retries.
            log.warning("scale reconcile: an unreadable provider answer (%r)", exc)
            return []
        for error in report.errors:
            log.warning("scale reconcile: %s", error)
        done += [f"adopted:{a['provider']}/{a['instance_id']}" for a in report.adopted]
        done += [f"missing:{m['provider']}/{m['instance_id']}" for m in report.missing]
        return done
