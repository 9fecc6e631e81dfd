"""A deterministic :class:`~nika_tui.dashboard.model.DashboardSource` served from a YAML file.

The file holds the same raw payloads the live stores hold (kernel hash, wm hash, debt reports,
review pairs, bus lines...) and goes through the same parsers as the Redis source, so a
snapshot or a test exercises real parsing, not a patched function. Actions change the in-memory
state (a spawned kernel starts, a resolved pair leaves the queue and is logged on the bus) and are
recorded in :attr:`FixtureSource.actions` for tests. Used by the UI tests, the SVG snapshots and
``nika dashboard --offline-ui`` (a preview without any running service): built with
``preview=True`` it refuses every action (``PreviewOnly``) instead of pretending it happened.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from nika_tui.dashboard.fixture_confirmations import FixtureConfirmations
from nika_tui.dashboard.fixture_memories import FixtureMemories
from nika_tui.dashboard.model import (
    BusFilter,
    BusLineView,
    BusTail,
    DebtView,
    PurgePlanView,
    PurgeResult,
    RecallView,
    ReviewItemView,
    ReviewResolution,
    Snapshot,
    TenantDetail,
    TenantRow,
    as_datetime,
    check_purge_confirmation,
)
from nika_tui.dashboard.parse import (
    parse_bus_line,
    parse_confirmation,
    parse_counts,
    parse_debt,
    parse_fill,
    parse_kernel,
    parse_purge_plan,
    parse_recall,
    parse_review_item,
    pending_confirmations,
    worst_metric,
)
from nika_tui.errors import (
    PreviewOnly,
    ServiceNotRunning,
    TenantNotFound,
)

DEMO_SNAPSHOT = Path(__file__).resolve().parents[1] / "assets" / "demo_snapshot.yaml"


class FixtureSource(FixtureConfirmations, FixtureMemories):
    """Dashboard data from a fixture file; actions mutate an in-memory copy."""

    def __init__(
        self, data: Mapping[str, Any], attach: Sequence[str] = ("true",), preview: bool = False
    ) -> None:
        """Build from already-loaded fixture data.

        Args:
            data: The fixture mapping (see ``assets/demo_snapshot.yaml``).
            attach: The argv returned by :meth:`attach_argv` (harmless by default).
            preview: The offline preview: refuse every action (tests act on the copy).
        """
        self.preview = preview
        self._data: dict[str, Any] = copy.deepcopy(dict(data))
        self._attach = list(attach)
        self._lock = threading.Lock()
        self.actions: list[tuple[str, ...]] = []
        """Every action applied, e.g. ``("spawn", "acme")``, in order."""
        self.redis_ok: bool = bool(self._data.get("redis_ok", True))
        self.service_ok: bool = bool(self._data.get("service_ok", True))

    @classmethod
    def from_file(
        cls, path: Path = DEMO_SNAPSHOT, attach: Sequence[str] = ("true",), preview: bool = False
    ) -> FixtureSource:
        """Load a YAML (or JSON) fixture file."""
        return cls(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, attach, preview)

    @property
    def now(self) -> datetime:
        """The fixture's fixed clock (``now`` in the file)."""
        value = as_datetime(self._data.get("now"))
        if value is None:
            raise ValueError("fixture has no valid 'now'")
        return value

    def _tenants(self) -> list[dict[str, Any]]:
        return list(self._data.get("tenants") or [])

    def _log(
        self, tenant_id: str, line_id: str, kind: str, action_type: str, body: dict[str, Any]
    ) -> None:
        """A bus line for a decision taken on the sample data (as the live stores log it)."""
        line = {
            "id": line_id,
            "tenant_id": tenant_id,
            "kind": kind,
            "at": self._data.get("now"),
            "NIKA_META": {"action_type": action_type, "domain": "memory"},
            "body": body,
        }
        self._t(tenant_id).setdefault("bus", []).append(json.dumps(line))

    def _t(self, tenant_id: str) -> dict[str, Any]:
        for t in self._tenants():
            if t.get("tenant_id") == tenant_id:
                return t
        raise TenantNotFound(f"unknown tenant {tenant_id!r}", "pick a tenant from the overview")

    def _refuse_in_preview(self, what: str) -> None:
        if self.preview:
            raise PreviewOnly(what)

    def _need_service(self) -> None:
        if not self.service_ok:
            raise ServiceNotRunning()

    def _row(self, t: dict[str, Any], now: datetime) -> TenantRow:
        beat = t.get("heartbeat_at")
        kernel = parse_kernel(
            t.get("kernel") or {}, None if beat is None else str(beat), bool(beat), now
        )
        debt = parse_debt(t["tenant_id"], t.get("debt_reports") or [])
        status, label = worst_metric(debt)
        review = [parse_review_item(t["tenant_id"], r) for r in t.get("review") or []]
        return TenantRow(
            tenant_id=t["tenant_id"],
            display_name=str(t.get("display_name", "")),
            cli=str(t.get("cli", "")),
            kernel=kernel,
            fill=parse_fill(t.get("wm") or {}),
            debt_status=status,
            debt_worst=label,
            review_count=len(review),
            confirmation_count=len(pending_confirmations(t.get("confirmations") or [])),
            **_usage(t.get("usage_today") or {}),
        )

    def snapshot(self, now: datetime) -> Snapshot:
        """Rows for every fixture tenant."""
        with self._lock:
            if not self.redis_ok:
                rows = tuple(
                    TenantRow(t["tenant_id"], str(t.get("display_name", "")), str(t.get("cli", "")))
                    for t in self._tenants()
                )
                problem = "Redis unreachable (ConnectionError) — start it with `nika up`"
                return Snapshot(now, rows, redis_ok=False, service_ok=False, problems=(problem,))
            rows = tuple(self._row(t, now) for t in self._tenants())
            problems = () if self.service_ok else ("memory service down — start it with `nika up`",)
            return Snapshot(now, rows, True, self.service_ok, problems)

    def tenant_detail(self, tenant_id: str, now: datetime) -> TenantDetail:
        """Detail from the fixture."""
        with self._lock:
            t = self._t(tenant_id)
            row = self._row(t, now)
            fill = parse_fill(
                t.get("wm") or {}, t.get("fill_history") or [], t.get("compactions") or []
            )
            from dataclasses import replace

            problems = (
                ()
                if self.service_ok
                else ("memory counts unavailable: memory service is not running",)
            )
            return TenantDetail(
                row=replace(row, fill=fill),
                memory_counts=parse_counts(t.get("memory_counts") or {}) if self.service_ok else {},
                strategies=tuple(t.get("strategies") or ()),
                recommendation=t.get("recommendation"),
                auto_actions=dict(t.get("auto_actions") or {}),
                confirmations=tuple(parse_confirmation(c) for c in t.get("confirmations") or []),
                problems=problems,
            )

    def pane_preview(self, tenant_id: str, lines: int) -> str:
        """The fixture's pane text (last ``lines`` lines)."""
        with self._lock:
            text = str(self._t(tenant_id).get("pane") or "")
        return "\n".join(text.splitlines()[-lines:])

    def debt(self, tenant_id: str) -> DebtView:
        """The fixture's audit history."""
        with self._lock:
            t = self._t(tenant_id)
            return parse_debt(tenant_id, t.get("debt_reports") or [], t.get("auto_actions") or {})

    def run_audit(self, tenant_id: str) -> DebtView:
        """Re-append the latest report with the fixture's clock (an audit 'now')."""
        self._refuse_in_preview("run an audit")
        self._need_service()
        with self._lock:
            t = self._t(tenant_id)
            reports = t.setdefault("debt_reports", [])
            if reports:
                latest = copy.deepcopy(reports[-1])
                if isinstance(latest, dict):
                    latest["at"] = self._data.get("now")
                reports.append(latest)
            self.actions.append(("audit", tenant_id))
        return self.debt(tenant_id)

    def review_items(self, tenant_id: str) -> Sequence[ReviewItemView]:
        """The fixture's review queue."""
        with self._lock:
            return [
                parse_review_item(tenant_id, r, f"r{i}")
                for i, r in enumerate(self._t(tenant_id).get("review") or [])
            ]

    def resolve_review(self, tenant_id: str, item_id: str, resolution: ReviewResolution) -> str:
        """Drop the pair from the queue (unless skipped) and log it on the bus."""
        if resolution == "skip":
            with self._lock:
                self.actions.append(("review", tenant_id, item_id, "skip"))
            return f"skipped {item_id}: it stays in the queue"
        self._refuse_in_preview(f"{resolution} review {item_id}")
        self._need_service()
        with self._lock:
            t = self._t(tenant_id)
            queue = t.get("review") or []
            kept = [r for r in queue if not (isinstance(r, dict) and r.get("id") == item_id)]
            if len(kept) == len(queue):
                return f"{item_id} was already resolved"
            t["review"] = kept
            self.actions.append(("review", tenant_id, item_id, resolution))
            self._log(
                tenant_id,
                f"res-{item_id}",
                "review.resolved",
                "review",
                {"review_id": item_id, "resolution": resolution},
            )
        return f"{item_id}: {resolution}"

    def purge_plan(self, tenant_id: str) -> PurgePlanView:
        """The fixture's plan."""
        self._need_service()
        with self._lock:
            return parse_purge_plan(tenant_id, self._t(tenant_id).get("purge") or {})

    def apply_purge(self, tenant_id: str, confirm_tenant_id: str) -> PurgeResult:
        """Refuse a wrong id; otherwise remove the unblocked items."""
        check_purge_confirmation(tenant_id, confirm_tenant_id)
        self._refuse_in_preview("purge")
        plan = self.purge_plan(tenant_id)
        with self._lock:
            t = self._t(tenant_id)
            blocked = [i for i in (t.get("purge") or {}).get("items", []) if i.get("blocked_by")]
            t["purge"] = {"items": blocked}
            self.actions.append(("purge", tenant_id))
        return PurgeResult(plan.dry_run_count, plan.blocked_count, "applied")

    def bus_tail(self, flt: BusFilter, after: str | None) -> BusTail:
        """Lines after the cursor (an index per tenant)."""
        cursor: dict[str, int] = json.loads(after) if after else {}
        out: list[BusLineView] = []
        with self._lock:
            for t in self._tenants():
                tid = t["tenant_id"]
                if flt.tenant and flt.tenant != tid:
                    continue
                raw = [str(x) for x in t.get("bus") or []]
                out.extend(parse_bus_line(tid, r) for r in raw[cursor.get(tid, 0) :])
                cursor[tid] = len(raw)
        lines = [ln for ln in out if flt.matches(ln)]
        lines.sort(key=lambda ln: ln.at.timestamp() if ln.at else 0.0)
        return BusTail(tuple(lines), json.dumps(cursor))

    def recall(self, tenant_id: str, query: str, as_of: datetime | None = None) -> RecallView:
        """The fixture's canned answer for ``query``, else the PALACE line; ``as_of`` keeps
        the hits whose timestamp is not later (the canned hits have no supersede chains)."""
        self._need_service()
        with self._lock:
            answers = self._t(tenant_id).get("recall") or {}
        for key, answer in answers.items():
            if key.lower() in query.lower():
                view = parse_recall(tenant_id, query, answer)
                if as_of is not None:
                    hits = tuple(h for h in view.hits if _at(h.envelope) <= as_of)
                    view = RecallView(tenant_id, query, hits, view.palace)
                if view.hits:
                    return view
        return RecallView(tenant_id, query, (), f"no memory for {query}")

    def _kernel(self, tenant_id: str, verb: str, state: str) -> str:
        self._refuse_in_preview(f"{verb} the kernel of {tenant_id}")
        with self._lock:
            t = self._t(tenant_id)
            t["kernel"] = {
                **(t.get("kernel") or {}),
                "state": state,
                "state_source": "hook",
                "last_event": verb,
            }
            t["heartbeat_at"] = self._data.get("now") if state != "exited" else None
            self.actions.append((verb, tenant_id))
        return f"{verb} nika-tenant-{tenant_id}"

    def mark_recall(self, tenant_id: str, query: str, hit_id: str, useful: bool) -> str:
        """Record the mark as an action only (the preview writes no relevance set)."""
        with self._lock:
            self.actions.append(("mark", tenant_id, hit_id, "useful" if useful else "not"))
        return f"{hit_id[:8]} marked {'useful' if useful else 'not useful'} (preview: not saved)"

    def spawn(self, tenant_id: str) -> str:
        """Mark the kernel as starting."""
        return self._kernel(tenant_id, "spawn", "starting")

    def stop(self, tenant_id: str) -> str:
        """Mark the kernel as exited."""
        return self._kernel(tenant_id, "stop", "exited")

    def restart(self, tenant_id: str) -> str:
        """Mark the kernel as starting again."""
        return self._kernel(tenant_id, "restart", "starting")

    def attach_argv(self, tenant_id: str) -> list[str]:
        """The configured harmless argv."""
        self._refuse_in_preview(f"attach to {tenant_id}")
        self._t(tenant_id)
        with self._lock:
            self.actions.append(("attach", tenant_id))
        return list(self._attach)

    def close(self) -> None:
        """Nothing to release."""


def _usage(raw: dict[str, Any]) -> dict[str, Any]:
    """``usage_today: {tokens, limit, cost}`` of a fixture tenant as TenantRow fields."""
    if "tokens" not in raw:
        return {}
    return {
        "tokens_today": int(raw["tokens"]),
        "tokens_limit": int(raw.get("limit") or 0) or None,
        "cost_today": float(raw["cost"]) if "cost" in raw else None,
    }


def _at(envelope: Mapping[str, Any]) -> datetime:
    """A canned hit's NIKA_META timestamp (the epoch when it has none)."""
    try:
        at = datetime.fromisoformat(str(envelope.get("timestamp")))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return at if at.tzinfo else at.replace(tzinfo=UTC)
