"""The dashboard's real data source: Redis keys, tenant configs, bus files, service and kernels.

Implements :class:`nika_tui.dashboard.model.DashboardSource`. Reads go straight to the Redis keys of
:mod:`nika_tui.services.redis_keys` (one pipeline per snapshot for every tenant), so the overview
works even when the memory service is down; actions that change memory go through the memory
service's RPC (``MemoryClient``), kernel actions through ``KernelManager``. Both are imported
lazily, so this module never pulls torch, qdrant or textual into the dashboard process.

Redis down or a bad payload never raises from a read: the snapshot says ``redis_ok=False`` and
the rows show what the configs know; unreadable payloads become ``unreadable`` fields.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import redis

from nika_tui.dashboard.model import (
    BusFilter,
    BusLineView,
    BusTail,
    ConfirmationView,
    DebtView,
    PendingConfirmation,
    PurgePlanView,
    PurgeResult,
    RecallView,
    ReviewItemView,
    ReviewResolution,
    Snapshot,
    TenantDetail,
    as_float,
    check_purge_confirmation,
)
from nika_tui.dashboard.parse import (
    load_json,
    parse_confirmation,
    parse_counts,
    parse_debt,
    parse_fill,
    parse_purge_plan,
    parse_recall,
    parse_review_item,
    provenance,
)
from nika_tui.dashboard.redis_memories import RedisMemories
from nika_tui.dashboard.redis_reads import (
    REDIS_ERRORS,
    bus_files,
    codex_trust_problems,
    hash_reply,
    kernel_session,
    read_new_lines,
    redis_down,
    stream_entries,
)
from nika_tui.dashboard.writes_paused import paused_line
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.confirmation_results import describe_confirmation
from nika_tui.domain.protocol import Op
from nika_tui.errors import KernelError, NikaError
from nika_tui.services import redis_keys as keys
from nika_tui.services.config_store import list_tenant_ids
from nika_tui.services.redis_server import redis_target

REVIEW_DECISION = {"replace": "approve", "keep": "keep"}
"""Dashboard wording → the engine's review decision (approve = retire the old one)."""
MAX_PROVENANCE = 20
MAX_TAIL_LINES = 500
RESOLVE_SOCKET_TIMEOUT_S = 5.0
"""Socket timeout of the connection that resolves a confirmation (see
:meth:`RedisDashboardSource.resolve_confirmation`)."""


class RedisDashboardSource(RedisMemories):
    """The live :class:`~nika_tui.dashboard.model.DashboardSource`."""

    # The constructor, the plumbing and the overview rows are in RedisReads (redis_reads.py),
    # the memory browser's calls in RedisMemories (redis_memories.py).

    def snapshot(self, now: datetime) -> Snapshot:
        """Every tenant's row; Redis and service health. Never raises."""
        ids = list_tenant_ids(self.roots)
        try:
            raw, service_ok, alarms, paused = self._read_rows(ids, now.strftime("%Y%m%d"))
        except REDIS_ERRORS as exc:
            self._drop_client()
            rows = tuple(self._row(t, None, now) for t in ids)
            problem = f"Redis unreachable ({type(exc).__name__}) — start it with `nika up`"
            return Snapshot(now, rows, redis_ok=False, service_ok=False, problems=(problem,))
        rows = tuple(self._row(t, raw[t], now) for t in ids)
        starting = "" if service_ok else self._maybe_autostart()
        down = starting or "memory service down — start it with `nika up`"
        problems: tuple[str, ...] = () if service_ok else (down,)
        pause = paused_line(paused)  # a reset holds its tenant's writes (decision 505)
        problems += (pause,) if pause else ()
        # A tenant whose store failed is parked by the service: an alarm, on the status bar
        # and on its row, until its entries are stored again.
        problems += tuple(
            f"ALARM {tenant}: memory store failing — see `nika doctor`" for tenant in alarms
        )
        rows = tuple(
            replace(r, problems=(*r.problems, "memory store failing: ingest parked"))
            if r.tenant_id in alarms
            else r
            for r in rows
        )
        return Snapshot(now, rows, redis_ok=True, service_ok=service_ok, problems=problems)

    # --- detail -------------------------------------------------------------------------
    def tenant_detail(self, tenant_id: str, now: datetime) -> TenantDetail:
        """Detail of one tenant; missing parts are reported in ``problems``."""
        snap_row = self._row(tenant_id, None, now)
        problems: list[str] = []
        confirmations: tuple[ConfirmationView, ...] = ()
        try:
            raw, _, _, _ = self._read_rows([tenant_id], now.strftime("%Y%m%d"))
            snap_row = self._row(tenant_id, raw[tenant_id], now)
            client = self._client()
            hist = client.xrevrange(keys.fill_history(tenant_id), count=self._history_samples)
            comps = client.xrevrange(keys.compactions(tenant_id), count=50)
            wm = hash_reply(client.hgetall(keys.working_memory(tenant_id)))
            fill = parse_fill(wm, stream_entries(hist), stream_entries(comps))
            snap_row = replace(snap_row, fill=fill)
            confirmations = tuple(
                parse_confirmation(v, k)
                for k, v in hash_reply(client.hgetall(keys.confirmations(tenant_id))).items()
            )
        except REDIS_ERRORS as exc:
            self._drop_client()
            problems.append(f"Redis unreachable ({type(exc).__name__})")
        counts: dict[str, dict[str, int]] = {}
        try:
            counts = parse_counts(self._ask(req.StatsRequest(tenant_id), 3.0))
        except NikaError as exc:
            problems.append(f"memory counts unavailable: {exc.message}")
        config, _ = self._config(tenant_id)
        strategies: tuple[str, ...] = ()
        advice: str | None = None
        if config is not None:
            from nika_tui.domain.strategies import available_strategies, recommendation

            strategies = tuple(s.value for s in available_strategies(config))
            advice = recommendation(config)
            problems += codex_trust_problems(config, self.roots)
        bridge = None
        try:
            from nika_tui.bridge.status import tenant_view

            bridge = tenant_view(self._client(), self.roots, tenant_id)
        except (*REDIS_ERRORS, NikaError) as exc:
            problems.append(f"bridge state unavailable ({type(exc).__name__})")
        recall_line = ""
        try:
            from nika_tui.services.recall_params import describe

            recall_line = describe(self._client(), tenant_id)
        except REDIS_ERRORS:
            problems.append("recall parameters unavailable")
        return TenantDetail(
            recall_params=recall_line,
            bridge=bridge,
            row=snap_row,
            memory_counts=counts,
            strategies=strategies,
            recommendation=advice,
            auto_actions=self._auto(config),
            confirmations=confirmations,
            problems=tuple(problems),
        )

    def pane_preview(self, tenant_id: str, lines: int) -> str:
        """The kernel pane's last lines, or '' when there is no kernel."""
        try:
            return self._kernel_manager().capture(tenant_id, lines)
        except KernelError:
            pass
        argv = ["tmux", "-L", self.roots.tmux_socket, "capture-pane", "-p", "-J"]
        argv += ["-S", f"-{lines}", "-t", kernel_session(tenant_id)]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=2, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout if done.returncode == 0 else ""

    # --- debt, review, purge --------------------------------------------------------------
    def debt(self, tenant_id: str) -> DebtView:
        """The latest audit and the metric histories (empty view when Redis is down)."""
        config, _ = self._config(tenant_id)
        try:
            client = self._client()
            entries = client.xrevrange(keys.debt_history(tenant_id), count=self._debt_reports)
            paused = str(client.get(keys.ingest_paused(tenant_id)) or "")
        except REDIS_ERRORS:
            self._drop_client()
            return DebtView(tenant_id)
        reports = [fields.get("report") for fields in stream_entries(entries)]
        return parse_debt(tenant_id, reports, self._auto(config), paused)

    def run_audit(self, tenant_id: str) -> DebtView:
        """Ask the memory service for an audit now, then read it back."""
        self._ask(req.AuditRequest(tenant_id), 120.0)
        return self.debt(tenant_id)

    def review_items(self, tenant_id: str) -> Sequence[ReviewItemView]:
        """The review queue, oldest first; unreadable entries included (raw kept)."""
        try:
            raw = hash_reply(self._client().hgetall(keys.review_queue(tenant_id)))
        except REDIS_ERRORS:
            self._drop_client()
            return []
        items = [parse_review_item(tenant_id, v, k) for k, v in raw.items()]
        items = [i for i in items if i.unreadable or i.status == "pending"]
        items.sort(key=lambda i: (i.created_at is None, i.created_at or 0, i.id))
        return [self._with_provenance(i) for i in items[:MAX_PROVENANCE]] + items[MAX_PROVENANCE:]

    def _with_provenance(self, item: ReviewItemView) -> ReviewItemView:
        """Session / agent / turn of both sides, from the service's ``history`` (when up)."""
        if item.unreadable:
            return item
        sides = []
        for side in (item.old, item.new):
            try:
                reply = self._ask(req.HistoryRequest(item.tenant_id, side.id), 2.0)
            except NikaError:
                return item  # the service is down: show the pair without provenance
            record = next((r for r in reply.get("records", []) if r.get("id") == side.id), None)
            sides.append(provenance(side, record) if record else side)
        return replace(item, old=sides[0], new=sides[1])

    def resolve_review(self, tenant_id: str, item_id: str, resolution: ReviewResolution) -> str:
        """approve-replace / keep-both through the service (which logs it); skip changes nothing."""
        if resolution == "skip":
            return f"skipped {item_id}: it stays in the queue"
        decision = REVIEW_DECISION[resolution]
        self._ask(req.ReviewResolveRequest(tenant_id, item_id, decision))
        return f"{item_id}: {'old retired (replaced)' if resolution == 'replace' else 'both kept'}"

    def purge_plan(self, tenant_id: str) -> PurgePlanView:
        """The dry-run plan from the service."""
        plan = parse_purge_plan(tenant_id, self._ask(req.PurgePlanRequest(tenant_id), 30.0))
        blocked = self._active_refs(tenant_id, [i.memory_id for i in plan.items])
        items = tuple(
            replace(i, blocked_by=blocked.get(i.memory_id, i.blocked_by)) for i in plan.items
        )
        return replace(plan, items=items, dry_run_count=sum(1 for i in items if not i.blocked_by))

    def _active_refs(self, tenant_id: str, ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Sessions still holding each id in ``nika:rag:active_refs`` (seed: purge doctrine)."""
        if not ids:
            return {}
        try:
            raw = self._client().hmget(keys.ACTIVE_REFS, [f"{tenant_id}:{i}" for i in ids])
        except REDIS_ERRORS:
            self._drop_client()
            return {}
        now = time.time()
        out: dict[str, tuple[str, ...]] = {}
        for memory_id, value in zip(ids, raw if isinstance(raw, list) else [], strict=False):
            holders = load_json(value)
            if isinstance(holders, dict):
                live = tuple(sorted(s for s, exp in holders.items() if (as_float(exp) or 0) > now))
                if live:
                    out[memory_id] = live
        return out

    def apply_purge(self, tenant_id: str, confirm_tenant_id: str) -> PurgeResult:
        """Apply the plan once the person typed the tenant id."""
        check_purge_confirmation(tenant_id, confirm_tenant_id)
        reply = self._ask(req.PurgeApplyRequest(tenant_id, confirmed=True), 120.0)
        removed, skipped = reply.get("removed", 0), reply.get("skipped", 0)
        return PurgeResult(
            removed=int(removed) if isinstance(removed, int) else len(removed or []),
            skipped=int(skipped) if isinstance(skipped, int) else len(skipped or []),
            message=str(reply.get("message", "")),
        )

    # --- confirmations (escalate mode) ----------------------------------------------------
    def confirmations(self, tenant_id: str | None) -> Sequence[PendingConfirmation]:
        """Pending confirmations, read like ``nika confirm list``; oldest first.

        Raises:
            StoreUnavailable: Redis is down (shown by the screen, which keeps polling).
        """
        from nika_tui.engine.kernels.confirmations import list_confirmations

        tenants = [tenant_id] if tenant_id else list_tenant_ids(self.roots)
        out: list[PendingConfirmation] = []
        try:
            for t in tenants:
                out.extend(
                    PendingConfirmation(t, parse_confirmation(item))
                    for item in list_confirmations(self._client(), t)
                )
        except REDIS_ERRORS as exc:
            self._drop_client()
            raise redis_down(exc) from exc
        # Oldest first across tenants; an entry without a date goes last.
        return sorted(
            out, key=lambda p: (p.view.created_at is None, str(p.view.created_at), p.tenant_id)
        )

    def resolve_confirmation(self, tenant_id: str, confirmation_id: str, approve: bool) -> str:
        """Approve or reject one confirmation exactly as ``nika confirm approve|reject`` does.

        Approving ``compact`` has the kernel manager type ``/compact`` (imported by
        :meth:`warm_up` on the UI thread); the other kinds run in the memory service by RPC.

        Raises:
            StoreUnavailable: Redis is down.
            ServiceNotRunning: approving needs the memory service and it is down.
            NikaError: the action failed (the confirmation then stays pending).
        """
        from nika_tui.engine.kernels.confirmations import resolve

        # Not self._client(): its 1 s socket timeout suits the 1 s polls, but MemoryClient waits
        # for the service's reply in BLPOP slices of 1 s, which need a socket timeout above
        # them. A decision is rare (a key press), so a connection of its own, closed after it,
        # costs nothing and leaves the polling client's fail-fast timeout alone.
        client = redis.Redis.from_url(
            redis_target(self.settings.redis_url, self.roots, start=False),
            decode_responses=True,
            socket_timeout=RESOLVE_SOCKET_TIMEOUT_S,
            socket_connect_timeout=1.0,
        )
        try:
            out = resolve(
                client,
                tenant_id,
                confirmation_id,
                approve,
                settings=self.settings,
                child_env=self.child_env,
            )
        except REDIS_ERRORS as exc:
            raise redis_down(exc) from exc
        finally:
            client.close()
        line = f"{out['status']} {out['kind']} for {tenant_id}"
        if said := describe_confirmation(str(out["kind"]), out.get("result")):
            line += f": {said}"
        return line

    # --- bus, recall --------------------------------------------------------------------
    def bus_tail(self, flt: BusFilter, after: str | None) -> BusTail:
        """New lines of every (or one) tenant's bus since ``after``."""
        cursor: dict[str, int] = {}
        if after:
            loaded = json.loads(after)
            cursor = loaded if isinstance(loaded, dict) else {}
        tenants = [flt.tenant] if flt.tenant else list_tenant_ids(self.roots)
        lines: list[BusLineView] = []
        for t in tenants:
            for path in bus_files(self.roots.tenant_data_dir(t) / "bus")[-3:]:
                lines.extend(read_new_lines(t, path, cursor, first=after is None))
        lines = [ln for ln in lines if flt.matches(ln)]
        lines.sort(key=lambda ln: ln.at.timestamp() if ln.at else 0.0)
        return BusTail(tuple(lines[-MAX_TAIL_LINES:]), json.dumps(cursor))

    def recall(self, tenant_id: str, query: str, as_of: datetime | None = None) -> RecallView:
        """A tenant-scoped recall (hits with envelope, or the PALACE line); ``as_of``: what
        was current then, by valid time."""
        body: dict[str, Any] = {"tenant_id": tenant_id, "query": query, "limit": 10}
        if as_of is not None:
            body["as_of"] = as_of.isoformat()
        reply = self._rpc(Op.RECALL, body)
        return parse_recall(tenant_id, query, reply)

    # --- kernels ------------------------------------------------------------------------
    def spawn(self, tenant_id: str) -> str:
        """Start the kernel."""
        self._kernel_manager().spawn(tenant_id)
        return f"spawned {kernel_session(tenant_id)}"

    def stop(self, tenant_id: str) -> str:
        """Stop the kernel."""
        self._kernel_manager().stop(tenant_id)
        return f"stopped {kernel_session(tenant_id)}"

    def restart(self, tenant_id: str) -> str:
        """Restart the kernel."""
        self._kernel_manager().restart(tenant_id)
        return f"restarted {kernel_session(tenant_id)}"

    def attach_argv(self, tenant_id: str) -> list[str]:
        """``tmux -L SOCKET attach-session -t nika-tenant-{t}`` (or the manager's own)."""
        try:
            return list(self._kernel_manager().attach_command(tenant_id))
        except KernelError:
            sock = self.roots.tmux_socket
            return ["tmux", "-L", sock, "attach-session", "-t", kernel_session(tenant_id)]
