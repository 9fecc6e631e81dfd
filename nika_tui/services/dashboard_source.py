"""The dashboard's real data source: Redis keys, tenant configs, bus files, service and kernels.

Implements :class:`nika_tui.ui_model.DashboardSource`. Reads go straight to the Redis keys of
:mod:`nika_tui.services.redis_keys` (one pipeline per snapshot for every tenant), so the overview
works even when the memory service is down; actions that change memory go through the memory
service's RPC (``MemoryClient``), kernel actions through ``KernelManager``. Both are imported
lazily, so this module never pulls torch, qdrant or textual into the dashboard process.

Redis down or a bad payload never raises from a read: the snapshot says ``redis_ok=False`` and
the rows show what the configs know; unreadable payloads become ``unreadable`` fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import redis

from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import (
    ConfigError,
    KernelError,
    NikaError,
    ServiceNotRunning,
    StoreUnavailable,
    ValidationFailed,
)
from nika_tui.paths import tenant_config_path, tenant_data_dir, tmux_socket_name
from nika_tui.services import redis_keys as keys
from nika_tui.services.config_store import list_tenant_ids, parse_config
from nika_tui.services.dashboard_parse import (
    load_json,
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
    pending_reviews,
    provenance,
    worst_metric,
)
from nika_tui.services.liveness import heartbeat_live
from nika_tui.services.redis_server import redis_url
from nika_tui.ui_model import (
    UNREADABLE,
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
    TenantRow,
    as_float,
)

Rpc = Callable[[str, dict[str, Any], float], dict[str, Any]]
REVIEW_DECISION = {"replace": "approve", "keep": "reject"}
"""Dashboard wording → the engine's review decision (approve = retire the old one)."""
MAX_PROVENANCE = 20
TAIL_BYTES = 32 * 1024
MAX_TAIL_LINES = 500
_REDIS_ERRORS = (redis.RedisError, OSError)
AUTOSTART_EVERY_S = 30.0
"""Seconds between two service starts from the dashboard (the embedder loads in ~7 s)."""
RESOLVE_SOCKET_TIMEOUT_S = 5.0
"""Socket timeout of the connection that resolves a confirmation (see
:meth:`RedisDashboardSource.resolve_confirmation`)."""


class KernelControl(Protocol):
    """What the dashboard needs from ``nika_tui.engine.kernels.manager.KernelManager``."""

    def spawn(self, tenant_id: str) -> object: ...
    def stop(self, tenant_id: str) -> object: ...
    def restart(self, tenant_id: str) -> object: ...
    def attach_command(self, tenant_id: str) -> list[str]: ...
    def capture(self, tenant_id: str, lines: int) -> str: ...


def kernel_session(tenant_id: str) -> str:
    """The tmux session of a tenant's kernel (contract: ``nika-tenant-{tenant_id}``)."""
    return f"nika-tenant-{tenant_id}"


class RedisDashboardSource:
    """The live :class:`~nika_tui.ui_model.DashboardSource`."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        kernels: KernelControl | None = None,
        rpc: Rpc | None = None,
        history_samples: int = 120,
        debt_reports: int = 30,
        defer_warm_up: bool = False,
        autostart: Callable[[], None] | None = None,
    ) -> None:
        """Build a source for one environment.

        Args:
            env: Environment (config / data dirs, ``REDIS_URL``); ``os.environ`` when ``None``.
            kernels: Kernel manager; the real ``KernelManager(env)`` when ``None``.
            rpc: ``(op, body, timeout) -> reply``; the memory service's client when ``None``.
            history_samples: Fill samples read for the detail screen.
            debt_reports: Audit reports read for the sparklines.
            defer_warm_up: Do not import the kernel manager now; the caller calls
                :meth:`warm_up` from its UI thread later (the dashboard: after its first frame,
                which does not need it).
            autostart: Starts the memory service (detached, without waiting); called when a
                snapshot finds Redis up and no live service, at most every
                :data:`AUTOSTART_EVERY_S`. ``None``: never (tests, previews).
        """
        self.env: Mapping[str, str] = dict(os.environ if env is None else env)
        self._kernels = kernels
        if kernels is None and not defer_warm_up:
            # Import now, not from a worker inside the running app: libtmux reads
            # sys.stdout.encoding at import time, and Textual replaces sys.stdout while running.
            self.warm_up()
        self._rpc_override = rpc
        self._history_samples = history_samples
        self._debt_reports = debt_reports
        self._redis: redis.Redis | None = None
        self._configs: dict[str, tuple[float, TenantConfig | None, str]] = {}
        self._autostart = autostart
        self._last_autostart = -AUTOSTART_EVERY_S

    # --- plumbing -----------------------------------------------------------------------
    def _client(self) -> redis.Redis:
        if self._redis is None:
            # Short timeouts: a dead Redis must cost one poll a second at most, not five.
            self._redis = redis.Redis.from_url(
                redis_url(self.env, start=False),
                decode_responses=True,
                socket_timeout=1.0,
                socket_connect_timeout=1.0,
            )
        return self._redis

    def _drop_client(self) -> None:
        if self._redis is not None:
            self._redis.close()
        self._redis = None

    def _config(self, tenant_id: str) -> tuple[TenantConfig | None, str]:
        """The tenant's config (cached by mtime) and the reason when it is unreadable."""
        path = tenant_config_path(tenant_id, self.env)
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return None, "config missing"
        cached = self._configs.get(tenant_id)
        if cached and cached[0] == mtime:
            return cached[1], cached[2]
        try:
            config: TenantConfig | None = parse_config(path, path.read_text(encoding="utf-8"))
            problem = ""
        except (ConfigError, OSError) as exc:
            config, problem = None, f"config unreadable: {exc}"
        self._configs[tenant_id] = (mtime, config, problem)
        return config, problem

    def _auto(self, config: TenantConfig | None) -> dict[str, str]:
        return config.auto_actions.model_dump(mode="json") if config else {}

    def _rpc(self, op: str, body: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        if self._rpc_override is not None:
            return self._rpc_override(op, body, timeout)
        client = self._client()
        try:
            alive = bool(client.exists(keys.SERVICE_HEARTBEAT))
        except _REDIS_ERRORS as exc:
            self._drop_client()
            raise ServiceNotRunning(f"Redis is unreachable ({exc})") from exc
        if not alive:
            raise ServiceNotRunning()
        try:
            from nika_tui.services.memory_client import MemoryClient
        except ImportError as exc:
            raise ServiceNotRunning("the memory client is not installed in this build") from exc
        return MemoryClient(client, timeout=timeout).call(op, body, timeout=timeout)

    def warm_up(self) -> None:
        """Import the kernel manager now (the constructor does; safe to call again).

        libtmux reads ``sys.stdout.encoding`` at import time and Textual replaces
        ``sys.stdout`` with a capture object that has none while it runs: the real stream is
        put back for the duration of the import (call it from the UI thread).
        """
        if self._kernels is not None or "nika_tui.engine.kernels.manager" in sys.modules:
            return
        out = sys.stdout
        if getattr(out, "encoding", None) is None and sys.__stdout__ is not None:
            sys.stdout = sys.__stdout__
        try:
            with contextlib.suppress(ImportError):
                import nika_tui.engine.kernels.manager  # noqa: F401
        finally:
            sys.stdout = out

    def _kernel_manager(self) -> KernelControl:
        if self._kernels is None:
            self.warm_up()
            try:
                from nika_tui.engine.kernels.manager import KernelManager
            except ImportError as exc:
                raise KernelError(
                    "kernel control is not available in this build",
                    "use `nika kernel spawn TENANT` from a shell",
                ) from exc
            self._kernels = KernelManager(self.env)
        return self._kernels

    # --- snapshot -----------------------------------------------------------------------
    def snapshot(self, now: datetime) -> Snapshot:
        """Every tenant's row; Redis and service health. Never raises."""
        ids = list_tenant_ids(self.env)
        try:
            raw, service_ok, alarms = self._read_rows(ids, now.strftime("%Y%m%d"))
        except _REDIS_ERRORS as exc:
            self._drop_client()
            rows = tuple(self._row(t, None, now) for t in ids)
            problem = f"Redis unreachable ({type(exc).__name__}) — start it with `nika up`"
            return Snapshot(now, rows, redis_ok=False, service_ok=False, problems=(problem,))
        rows = tuple(self._row(t, raw[t], now) for t in ids)
        if not service_ok:
            self._maybe_autostart()
        problems: tuple[str, ...] = (
            () if service_ok else ("memory service down — start it with `nika up`",)
        )
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

    def _maybe_autostart(self) -> None:
        """Restart a dead service (DESIGN: the dashboard starts it when absent), rate-limited."""
        if self._autostart is None:
            return
        now = time.monotonic()
        if now - self._last_autostart < AUTOSTART_EVERY_S:
            return
        self._last_autostart = now
        self._autostart()

    def _read_rows(
        self, ids: Sequence[str], day: str
    ) -> tuple[dict[str, list[Any]], bool, list[str]]:
        pipe = self._client().pipeline(transaction=False)
        pipe.get(keys.SERVICE_HEARTBEAT)
        pipe.hkeys(keys.TENANT_ALARMS)
        for t in ids:
            pipe.hgetall(keys.kernel_state(t))
            pipe.get(keys.kernel_heartbeat(t))
            pipe.hgetall(keys.working_memory(t))
            pipe.hvals(keys.review_queue(t))
            pipe.hvals(keys.confirmations(t))
            pipe.xrevrange(keys.debt_history(t), count=1)
            pipe.get(keys.tokens_day(t, day))
            pipe.get(keys.cost_day(t, day))
        # A key of the wrong type comes back as an error object: that row is unreadable.
        out = pipe.execute(raise_on_error=False)
        if out and isinstance(out[0], redis.ConnectionError):
            raise out[0]
        # Live by pid too: a kill -9'd service's heartbeat outlives it by its TTL.
        service_ok = isinstance(out[0], str) and heartbeat_live(_heartbeat_info(out[0]))
        alarms = sorted(str(t) for t in out[1]) if isinstance(out[1], list) else []
        per, first = 8, 2
        rows = {t: out[first + i * per : first + (i + 1) * per] for i, t in enumerate(ids)}
        return rows, service_ok, alarms

    def _row(self, tenant_id: str, raw: list[Any] | None, now: datetime) -> TenantRow:
        config, problem = self._config(tenant_id)
        problems = [problem] if problem else []
        base = TenantRow(
            tenant_id=tenant_id,
            display_name=config.display_name if config else UNREADABLE,
            cli=config.agent_cli.value if config else UNREADABLE,
            problems=tuple(problems),
        )
        if raw is None:
            return base
        state, beat, wm, review, confs, debt, tokens, cost = (
            v if not isinstance(v, Exception) else _Bad(v) for v in raw
        )
        for label, value in (("kernel", state), ("fill", wm), ("review", review), ("debt", debt)):
            if isinstance(value, _Bad):
                problems.append(f"{label} {UNREADABLE}")
        kernel = parse_kernel(
            state if isinstance(state, dict) else {"state": UNREADABLE},
            beat if isinstance(beat, str) else None,
            isinstance(beat, str),
            now,
        )
        fill = parse_fill(wm) if isinstance(wm, dict) else parse_fill({"fill_percent": "?"})
        reports = [e.get("report") for e in _entries(debt)] if isinstance(debt, list) else ["?"]
        status, label = worst_metric(parse_debt(tenant_id, reports))
        return replace(
            base,
            kernel=kernel,
            fill=fill,
            debt_status=status,
            debt_worst=label,
            review_count=pending_reviews(review) if isinstance(review, list) else 0,
            confirmation_count=len(pending_confirmations(confs)) if isinstance(confs, list) else 0,
            problems=tuple(problems),
            tokens_today=int(tokens) if isinstance(tokens, str) and tokens.isdigit() else 0,
            tokens_limit=config.quotas.tokens_per_day if config else None,
            cost_today=_float(cost),
        )

    # --- detail -------------------------------------------------------------------------
    def tenant_detail(self, tenant_id: str, now: datetime) -> TenantDetail:
        """Detail of one tenant; missing parts are reported in ``problems``."""
        snap_row = self._row(tenant_id, None, now)
        problems: list[str] = []
        confirmations: tuple[ConfirmationView, ...] = ()
        try:
            raw, _, _ = self._read_rows([tenant_id], now.strftime("%Y%m%d"))
            snap_row = self._row(tenant_id, raw[tenant_id], now)
            client = self._client()
            hist = client.xrevrange(keys.fill_history(tenant_id), count=self._history_samples)
            comps = client.xrevrange(keys.compactions(tenant_id), count=50)
            wm = _hash(client.hgetall(keys.working_memory(tenant_id)))
            fill = parse_fill(wm, _entries(hist), _entries(comps))
            snap_row = replace(snap_row, fill=fill)
            confirmations = tuple(
                parse_confirmation(v, k)
                for k, v in _hash(client.hgetall(keys.confirmations(tenant_id))).items()
            )
        except _REDIS_ERRORS as exc:
            self._drop_client()
            problems.append(f"Redis unreachable ({type(exc).__name__})")
        counts: dict[str, dict[str, int]] = {}
        try:
            counts = parse_counts(self._rpc("stats", {"tenant_id": tenant_id}, 3.0))
        except NikaError as exc:
            problems.append(f"memory counts unavailable: {exc.message}")
        config, _ = self._config(tenant_id)
        strategies: tuple[str, ...] = ()
        advice: str | None = None
        if config is not None:
            from nika_tui.domain.strategies import available_strategies, recommendation

            strategies = tuple(s.value for s in available_strategies(config))
            advice = recommendation(config)
            problems += codex_trust_problems(config, self.env)
        bridge = None
        try:
            from nika_tui.bridge.status import tenant_view

            bridge = tenant_view(self._client(), self.env, tenant_id)
        except (*_REDIS_ERRORS, NikaError) as exc:
            problems.append(f"bridge state unavailable ({type(exc).__name__})")
        recall_line = ""
        try:
            from nika_tui.services.recall_params import describe

            recall_line = describe(self._client(), tenant_id)
        except _REDIS_ERRORS:
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
        argv = ["tmux", "-L", tmux_socket_name(self.env), "capture-pane", "-p", "-J"]
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
        except _REDIS_ERRORS:
            self._drop_client()
            return DebtView(tenant_id)
        reports = [fields.get("report") for fields in _entries(entries)]
        return parse_debt(tenant_id, reports, self._auto(config), paused)

    def run_audit(self, tenant_id: str) -> DebtView:
        """Ask the memory service for an audit now, then read it back."""
        self._rpc("audit", {"tenant_id": tenant_id}, 120.0)
        return self.debt(tenant_id)

    def review_items(self, tenant_id: str) -> Sequence[ReviewItemView]:
        """The review queue, oldest first; unreadable entries included (raw kept)."""
        try:
            raw = _hash(self._client().hgetall(keys.review_queue(tenant_id)))
        except _REDIS_ERRORS:
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
                reply = self._rpc(
                    "history", {"tenant_id": item.tenant_id, "memory_id": side.id}, 2.0
                )
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
        self._rpc("review.resolve", {"tenant_id": tenant_id, "id": item_id, "decision": decision})
        return f"{item_id}: {'old retired (replaced)' if resolution == 'replace' else 'both kept'}"

    def purge_plan(self, tenant_id: str) -> PurgePlanView:
        """The dry-run plan from the service."""
        plan = parse_purge_plan(tenant_id, self._rpc("purge.plan", {"tenant_id": tenant_id}, 30.0))
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
        except _REDIS_ERRORS:
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
        reply = self._rpc("purge.apply", {"tenant_id": tenant_id, "confirmed": True}, 120.0)
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

        tenants = [tenant_id] if tenant_id else list_tenant_ids(self.env)
        out: list[PendingConfirmation] = []
        try:
            for t in tenants:
                out.extend(
                    PendingConfirmation(t, parse_confirmation(item))
                    for item in list_confirmations(self._client(), t)
                )
        except _REDIS_ERRORS as exc:
            self._drop_client()
            raise _redis_down(exc) from exc
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
            redis_url(self.env, start=False),
            decode_responses=True,
            socket_timeout=RESOLVE_SOCKET_TIMEOUT_S,
            socket_connect_timeout=1.0,
        )
        try:
            out = resolve(client, tenant_id, confirmation_id, approve, env=self.env)
        except _REDIS_ERRORS as exc:
            raise _redis_down(exc) from exc
        finally:
            client.close()
        line = f"{out['status']} {out['kind']} for {tenant_id}"
        if out.get("result"):
            line += f": {json.dumps(out['result'], default=str)[:160]}"
        return line

    # --- bus, recall --------------------------------------------------------------------
    def bus_tail(self, flt: BusFilter, after: str | None) -> BusTail:
        """New lines of every (or one) tenant's bus since ``after``."""
        cursor: dict[str, int] = {}
        if after:
            loaded = json.loads(after)
            cursor = loaded if isinstance(loaded, dict) else {}
        tenants = [flt.tenant] if flt.tenant else list_tenant_ids(self.env)
        lines: list[BusLineView] = []
        for t in tenants:
            for path in _bus_files(tenant_data_dir(t, self.env) / "bus")[-3:]:
                lines.extend(_read_new(t, path, cursor, first=after is None))
        lines = [ln for ln in lines if flt.matches(ln)]
        lines.sort(key=lambda ln: ln.at.timestamp() if ln.at else 0.0)
        return BusTail(tuple(lines[-MAX_TAIL_LINES:]), json.dumps(cursor))

    def recall(self, tenant_id: str, query: str, as_of: datetime | None = None) -> RecallView:
        """A tenant-scoped recall (hits with envelope, or the PALACE line); ``as_of``: what
        was current then, by valid time."""
        body: dict[str, Any] = {"tenant_id": tenant_id, "query": query, "limit": 10}
        if as_of is not None:
            body["as_of"] = as_of.isoformat()
        reply = self._rpc("recall", body)
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
            sock = tmux_socket_name(self.env)
            return ["tmux", "-L", sock, "attach-session", "-t", kernel_session(tenant_id)]

    def close(self) -> None:
        """Close the Redis connection."""
        self._drop_client()


def _hash(value: object) -> dict[str, str]:
    """A decoded hash reply (``decode_responses=True``) typed as ``str → str``."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _entries(value: object) -> list[dict[str, str]]:
    """Stream entries (newest first, as XREVRANGE returns them) → fields, oldest first."""
    if not isinstance(value, list):
        return []
    return [_hash(fields) for _, fields in reversed(value)]


class _Bad:
    """A pipeline reply that was an error (wrong key type...)."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def _heartbeat_info(raw: str) -> dict[str, Any]:
    try:
        info = json.loads(raw)
    except ValueError:
        return {"pid": raw}
    return info if isinstance(info, dict) else {"pid": info}


def _redis_down(exc: Exception) -> StoreUnavailable:
    """The error an action shows when Redis cannot be reached."""
    return StoreUnavailable(f"Redis is not reachable ({exc})", "start it with `nika up`")


def check_purge_confirmation(tenant_id: str, typed: str) -> None:
    """Refuse a purge unless the person typed the tenant id exactly.

    Raises:
        ValidationFailed: ``typed`` is not ``tenant_id``.
    """
    if typed.strip() != tenant_id:
        raise ValidationFailed(
            f"confirmation {typed.strip()!r} does not match tenant {tenant_id!r}: nothing purged",
            f"type {tenant_id} exactly to confirm",
        )


def _bus_files(root: Path) -> list[Path]:
    from nika_tui.services.bus import Bus

    return Bus(root, root.parent.name).files()


def _read_new(tenant_id: str, path: Path, cursor: dict[str, int], first: bool) -> list[BusLineView]:
    """Complete lines of ``path`` after the cursor's offset; advances the cursor."""
    key = str(path)
    try:
        size = path.stat().st_size
        start = cursor.get(key, max(0, size - TAIL_BYTES) if first else 0)
        if start > size:  # truncated or replaced: read it again from the top
            start = 0
        with path.open("rb") as fh:
            fh.seek(start)
            chunk = fh.read(size - start)
    except OSError:
        return []
    end = chunk.rfind(b"\n")
    if end < 0:
        cursor[key] = start
        return []
    body = chunk[: end + 1]
    cursor[key] = start + end + 1
    texts = body.decode("utf-8", errors="replace").split("\n")
    if first and start > 0:
        texts = texts[1:]  # the first line was cut by the seek
    return [parse_bus_line(tenant_id, t) for t in texts if t.strip()]


def codex_trust_problems(config: TenantConfig, env: Mapping[str, str]) -> list[str]:
    """A Codex tenant whose hooks Codex does not trust: what it loses and how to fix it."""
    if config.agent_cli.value != "codex":
        return []
    from nika_tui.services.agent_settings import agent_home, codex_trust_report

    if not (agent_home(config.tenant_id, "codex", env) / "hooks.json").exists():
        return []
    report = codex_trust_report(config.tenant_id, env)
    if report.ok:
        return []
    return [
        f"Codex hooks untrusted ({', '.join(sorted(report.untrusted))}): Codex skips them. "
        f"To trust them: {report.hint(config.tenant_id)}"
    ]


def _float(value: object) -> float | None:
    """A Redis float counter's value, ``None`` when absent or unreadable."""
    try:
        return float(str(value)) if isinstance(value, str) else None
    except ValueError:
        return None
