"""The confirmations (escalate mode) on the fixture source: list, approve, reject.

A mixin of :class:`nika_tui.dashboard.fixture_source.FixtureSource`: the tenant's
``confirmations`` entries of the YAML file, decided in the in-memory copy and logged on the bus
as ``nika confirm`` does (kept with their status, as the live hash keeps them).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nika_tui.dashboard.model import PendingConfirmation
from nika_tui.dashboard.parse import pending_confirmations
from nika_tui.errors import StoreUnavailable, ValidationFailed


class FixtureConfirmations:
    """``confirmations`` / ``resolve_confirmation`` of the fixture source."""

    _data: dict[str, Any]
    _lock: threading.Lock
    actions: list[tuple[str, ...]]
    redis_ok: bool

    if TYPE_CHECKING:

        def _t(self, tenant_id: str) -> dict[str, Any]: ...
        def _tenants(self) -> list[dict[str, Any]]: ...
        def _need_service(self) -> None: ...
        def _refuse_in_preview(self, what: str) -> None: ...
        def _log(
            self, tenant_id: str, line_id: str, kind: str, action_type: str, body: dict[str, Any]
        ) -> None: ...

    def confirmations(self, tenant_id: str | None) -> Sequence[PendingConfirmation]:
        """The fixture's pending confirmations, oldest first.

        Raises:
            StoreUnavailable: the fixture plays Redis down (``redis_ok`` false).
        """
        if not self.redis_ok:
            raise StoreUnavailable(
                "Redis is not reachable (ConnectionError)", "start it with `nika up`"
            )
        with self._lock:
            tenants = [self._t(tenant_id)] if tenant_id else self._tenants()
            out = [
                PendingConfirmation(t["tenant_id"], view)
                for t in tenants
                for view in pending_confirmations(t.get("confirmations") or [])
            ]
        return sorted(
            out, key=lambda p: (p.view.created_at is None, str(p.view.created_at), p.tenant_id)
        )

    def resolve_confirmation(self, tenant_id: str, confirmation_id: str, approve: bool) -> str:
        """Mark the confirmation approved / rejected (kept, as the live hash keeps it), log it.

        Approving any kind but ``compact`` (the kernel manager's) needs the memory service.

        Raises:
            ValidationFailed: no pending confirmation has that id.
            ServiceNotRunning: approving needs the service and the fixture plays it down.
        """
        self._refuse_in_preview("resolve a confirmation")
        if approve:
            with self._lock:
                item = self._pending_confirmation(tenant_id, confirmation_id)
            if item.get("kind") != "compact":
                self._need_service()
        status = "approved" if approve else "rejected"
        with self._lock:
            item = self._pending_confirmation(tenant_id, confirmation_id)
            item["status"] = status
            item["resolved_at"] = self._data.get("now")
            kind = str(item.get("kind", ""))
            self.actions.append(("confirmation", tenant_id, confirmation_id, status))
            self._log(
                tenant_id,
                f"conf-{confirmation_id}",
                "confirmation.resolved",
                "system",
                {"id": confirmation_id, "kind": kind, "status": status},
            )
        return f"{status} {kind} for {tenant_id}"

    def _pending_confirmation(self, tenant_id: str, confirmation_id: str) -> dict[str, Any]:
        """The stored pending entry (the caller holds the lock)."""
        for item in self._t(tenant_id).get("confirmations") or []:
            if (
                isinstance(item, dict)
                and item.get("id") == confirmation_id
                and item.get("status", "pending") == "pending"
            ):
                return item
        raise ValidationFailed(
            f"no pending confirmation {confirmation_id!r} for tenant {tenant_id}",
            f"list them with `nika confirm list --tenant {tenant_id}`",
        )
