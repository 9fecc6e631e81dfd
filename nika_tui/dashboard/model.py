"""The dashboard's read model: the one port the UI depends on.

The screens only ever see these frozen dataclasses and the :class:`DashboardSource` protocol.
The real source (:mod:`nika_tui.dashboard.redis_source`) reads Redis, the tenant configs and
the bus, and calls the memory service and the kernel manager; the fixture source
(:mod:`nika_tui.dashboard.fixture_source`) serves the same views from a YAML file, for tests,
snapshots and offline previews. Nothing here imports textual, redis or any I/O library.

Every view can be *unreadable*: a payload that did not parse becomes a row that says so (and
keeps the raw text) instead of an exception that would take the screen down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from nika_tui.dashboard.memory_views import MemoryBrowserPort
from nika_tui.errors import ValidationFailed

FILL_MARK = 61.0
"""The seed's compaction line: a context above 61% full should be compacted."""

UNREADABLE = "unreadable"
"""What a field shows when its payload could not be parsed."""

KernelStateName = str
"""starting | working | waiting-input | idle | exited | error | unknown | unreadable."""

MetricStatus = Literal["ok", "warn", "alert", "insufficient", "unknown"]
ReviewResolution = Literal["replace", "keep", "skip"]

STATE_ORDER: tuple[str, ...] = (
    "waiting-input",
    "error",
    "working",
    "starting",
    "idle",
    "exited",
    "unknown",
    UNREADABLE,
)
"""Sort order of kernel states: what needs a person first."""

STATUS_RANK: Mapping[str, int] = {"alert": 3, "warn": 2, "ok": 1, "insufficient": 0, "unknown": 0}


@dataclass(frozen=True, slots=True)
class KernelView:
    """The tenant's kernel as last reported (hook events win over pane scraping)."""

    state: KernelStateName = "unknown"
    source: str = ""
    """``hook`` or ``pane``: what decided the state."""
    pid: int | None = None
    last_event: str = ""
    last_event_at: datetime | None = None
    heartbeat_age_s: float | None = None
    """Seconds since the kernel's last heartbeat; ``None`` when there is none."""
    stale: bool = True
    """True when the heartbeat key expired (the kernel stopped reporting)."""
    agents: tuple[tuple[str, str], ...] = ()
    """(agent CLI, state) of each agent window, first window first (one agent: one pair)."""


@dataclass(frozen=True, slots=True)
class CompactionView:
    """One context compaction (automatic or triggered at the 61% line)."""

    at: datetime
    trigger: str
    fill: float | None


@dataclass(frozen=True, slots=True)
class FillView:
    """How full the kernel's context is, against the 61% line."""

    percent: float | None = None
    tokens: int | None = None
    window: int | None = None
    forecast_s: float | None = None
    """Seconds until the fill reaches 61% at the current rate; ``None`` = not rising / unknown."""
    history: tuple[tuple[datetime, float], ...] = ()
    compactions: tuple[CompactionView, ...] = ()
    unreadable: bool = False


@dataclass(frozen=True, slots=True)
class MetricView:
    """One memory-debt metric against its threshold."""

    name: str
    value: float | None
    threshold: float | None
    status: MetricStatus = "unknown"
    action: str = ""
    strategy: str = ""
    history: tuple[float, ...] = ()
    """Values of this metric over the recent audits, oldest first."""
    series: tuple[tuple[datetime, float], ...] = ()
    """``(audit time, value)`` over the recent audits, oldest first (for the chart)."""
    auto_mode: str = ""
    """off | escalate | autonomous: what the tenant's auto-actions would do with ``action``."""
    window: str = ""
    sample_size: int | None = None
    note: str = ""
    """The audit's note, e.g. ``insufficient data: n=3 of the 30 needed`` (decision 220)."""
    sample_n: int | None = None
    """The ``n`` the metric's minimum counts (queries or points), read from ``note``."""
    min_sample: int | None = None
    """The metric's minimum sample before it may warn or alert, read from ``note``."""


@dataclass(frozen=True, slots=True)
class DebtView:
    """The latest audit of one tenant, with each metric's recent history."""

    tenant_id: str
    at: datetime | None = None
    metrics: tuple[MetricView, ...] = ()
    unreadable: bool = False
    ingest_paused: str = ""
    held: tuple[str, ...] = ()
    """Metrics whose approved action changed nothing and is not asked again until the memories
    change (decision 221): nothing more nika can do about them."""
    pause_waived: tuple[str, ...] = ()
    """Critical reasons that do not pause bulk ingestion, their approved action having changed
    nothing (decision 446)."""

    @property
    def needs_person(self) -> bool:
        """True when a metric is in alert and nika can still act on it (decision 320)."""
        return any(m.status == "alert" and m.name not in self.held for m in self.metrics)

    @property
    def worst(self) -> MetricView | None:
        """The metric in the worst state (alert > warn > ok), or ``None`` without an audit."""
        ranked = sorted(self.metrics, key=lambda m: -STATUS_RANK.get(m.status, 0))
        return ranked[0] if ranked else None


@dataclass(frozen=True, slots=True)
class TenantRow:
    """One line of the overview: everything about a tenant at a glance."""

    tenant_id: str
    display_name: str = ""
    cli: str = ""
    kernel: KernelView = field(default_factory=KernelView)
    fill: FillView = field(default_factory=FillView)
    debt_status: MetricStatus = "unknown"
    debt_worst: str = ""
    """Name (and value) of the worst metric, e.g. ``duplicate_rate 7.2% > 5%``."""
    debt_held: bool = False
    """Every metric in alert is held (its approved action changed nothing, decision 221): the
    alert stays shown, but it no longer marks the tenant as needing a person."""
    review_count: int = 0
    confirmation_count: int = 0
    problems: tuple[str, ...] = ()
    """Fields whose payload was unreadable, or why the row is incomplete."""
    tokens_today: int | None = None
    """Model tokens billed today (UTC), from the hooks' usage records (issue 18)."""
    tokens_limit: int | None = None
    """The tenant's ``quotas.tokens_per_day``."""
    cost_today: float | None = None
    """Estimated cost of today's tokens with the price table (billing currency)."""

    @property
    def needs_me(self) -> bool:
        """True when a person should look: waiting kernel, alert, or a pending decision."""
        return (
            self.kernel.state in ("waiting-input", "error")
            or (self.debt_status == "alert" and not self.debt_held)
            or self.review_count > 0
            or self.confirmation_count > 0
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything the overview shows, taken at ``at``."""

    at: datetime
    tenants: tuple[TenantRow, ...] = ()
    redis_ok: bool = True
    service_ok: bool = False
    problems: tuple[str, ...] = ()
    """One line per degraded dependency, shown in the status bar."""

    def row(self, tenant_id: str) -> TenantRow | None:
        """The row of one tenant, if present."""
        return next((r for r in self.tenants if r.tenant_id == tenant_id), None)


@dataclass(frozen=True, slots=True)
class ConfirmationView:
    """An action waiting for a human (escalate mode)."""

    id: str
    kind: str
    title: str
    detail: str = ""
    created_at: datetime | None = None
    status: str = "pending"


@dataclass(frozen=True, slots=True)
class PendingConfirmation:
    """A confirmation still waiting for a decision, and the tenant it belongs to."""

    tenant_id: str
    view: ConfirmationView


@dataclass(frozen=True, slots=True)
class BridgeView:
    """The messaging bridge as one tenant sees it (docs/bridge.md)."""

    running: bool = False
    gateways: tuple[str, ...] = ()
    """Gateways the running bridge serves."""
    senders: tuple[str, ...] = ()
    """``gateway:sender`` of each sender linked to the tenant."""
    pending: int = 0
    """Messages waiting for the tenant's kernel."""
    last: tuple[str, ...] = ()
    """Last messages in and out, one line each, newest first."""
    errors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TenantDetail:
    """The tenant detail screen, minus the live pane (polled separately)."""

    row: TenantRow
    memory_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """layer → status → count; empty when the memory service did not answer."""
    strategies: tuple[str, ...] = ()
    recommendation: str | None = None
    auto_actions: Mapping[str, str] = field(default_factory=dict)
    confirmations: tuple[ConfirmationView, ...] = ()
    problems: tuple[str, ...] = ()
    bridge: BridgeView | None = None
    """None when no sender of the tenant is linked and the bridge never carried its messages."""
    recall_params: str = ""
    """Recall parameters in force and the last tuning's gain ± noise ("" before any tuning)."""


@dataclass(frozen=True, slots=True)
class MemorySide:
    """One side (old or new) of a review pair."""

    id: str = ""
    text: str = ""
    timestamp: datetime | None = None
    session: str = ""
    agent: str = ""
    turn: str = ""


@dataclass(frozen=True, slots=True)
class ReviewItemView:
    """An UNCERTAIN pair waiting for a person."""

    id: str
    tenant_id: str
    old: MemorySide = field(default_factory=MemorySide)
    new: MemorySide = field(default_factory=MemorySide)
    reason: str = ""
    judge: str = ""
    created_at: datetime | None = None
    status: str = "pending"
    """pending | approved | rejected (only pending pairs are shown)."""
    raw: str = ""
    """The stored JSON when it could not be parsed (``unreadable`` is then True)."""
    unreadable: bool = False


@dataclass(frozen=True, slots=True)
class PurgeItemView:
    """One point the purge would remove from the live index."""

    memory_id: str
    text: str = ""
    replacement_id: str = ""
    replacement_text: str = ""
    reason: str = ""
    blocked_by: tuple[str, ...] = ()
    """Sessions holding an active reference: the item is skipped while they do."""


@dataclass(frozen=True, slots=True)
class PurgePlanView:
    """A purge plan, as a dry run: nothing is removed until applied with confirmation."""

    tenant_id: str
    items: tuple[PurgeItemView, ...] = ()
    dry_run_count: int = 0
    """How many items would actually be removed now (the unblocked ones)."""

    @property
    def blocked_count(self) -> int:
        """Items held back by active references."""
        return sum(1 for i in self.items if i.blocked_by)


@dataclass(frozen=True, slots=True)
class PurgeResult:
    """What applying a plan did."""

    removed: int
    skipped: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class BusFilter:
    """Bus tail filters; an empty string matches everything."""

    tenant: str = ""
    action_type: str = ""
    domain: str = ""

    def matches(self, line: BusLineView) -> bool:
        """True when ``line`` passes every filter set (unreadable lines pass only tenant)."""
        if self.tenant and line.tenant_id != self.tenant:
            return False
        if self.action_type and line.action_type != self.action_type:
            return False
        return not (self.domain and line.domain != self.domain)


@dataclass(frozen=True, slots=True)
class BusLineView:
    """One bus line; an unreadable line keeps its raw text."""

    tenant_id: str
    raw: str
    at: datetime | None = None
    kind: str = ""
    action_type: str = ""
    domain: str = ""
    summary: str = ""
    unreadable: bool = False
    memory_id: str = ""
    """The memory the line is about (``memory_id`` / ``old_id`` of its body), '' when none."""


@dataclass(frozen=True, slots=True)
class BusTail:
    """New bus lines since a cursor, and the cursor to pass next time."""

    lines: tuple[BusLineView, ...]
    cursor: str
    """Opaque; pass back to :meth:`DashboardSource.bus_tail` as ``after``."""


@dataclass(frozen=True, slots=True)
class RecallHitView:
    """One recalled memory with its envelope."""

    id: str
    text: str
    score: float
    cosine: float | None = None
    layer: str = ""
    envelope: Mapping[str, Any] = field(default_factory=dict)
    status: str = ""
    """current | retired (an as-of recall may return a since-retired version)."""
    valid_from: datetime | None = None
    superseded_by: str = ""


@dataclass(frozen=True, slots=True)
class RecallView:
    """A recall's answer: hits, or the PALACE line when there is nothing relevant."""

    tenant_id: str
    query: str
    hits: tuple[RecallHitView, ...] = ()
    palace: str | None = None


@runtime_checkable
class DashboardSource(MemoryBrowserPort, Protocol):
    """Where the dashboard gets its data and sends its actions.

    Read methods never raise for missing or malformed data: they return empty or
    ``unreadable`` views. Actions raise :class:`nika_tui.errors.NikaError` subclasses with a
    message and a hint (service down, unknown tenant, wrong confirmation...). Every method may
    block: the UI calls them from worker threads only. The memory browser's methods are in
    :class:`~nika_tui.dashboard.memory_views.MemoryBrowserPort`.
    """

    def snapshot(self, now: datetime) -> Snapshot:
        """Every tenant's row and the health of Redis and the memory service."""
        ...

    def tenant_detail(self, tenant_id: str, now: datetime) -> TenantDetail:
        """Detail of one tenant (memory counts, strategies, history)."""
        ...

    def pane_preview(self, tenant_id: str, lines: int) -> str:
        """The last ``lines`` lines of the kernel's tmux pane ('' when not running)."""
        ...

    def debt(self, tenant_id: str) -> DebtView:
        """The latest audit with each metric's history."""
        ...

    def run_audit(self, tenant_id: str) -> DebtView:
        """Run the debt audit now and return its result."""
        ...

    def review_items(self, tenant_id: str) -> Sequence[ReviewItemView]:
        """The review queue, oldest first."""
        ...

    def resolve_review(self, tenant_id: str, item_id: str, resolution: ReviewResolution) -> str:
        """Apply a person's decision to one pair; returns a one-line outcome."""
        ...

    def purge_plan(self, tenant_id: str) -> PurgePlanView:
        """The purge plan as a dry run."""
        ...

    def apply_purge(self, tenant_id: str, confirm_tenant_id: str) -> PurgeResult:
        """Apply the plan; refused unless ``confirm_tenant_id`` equals ``tenant_id``."""
        ...

    def confirmations(self, tenant_id: str | None) -> Sequence[PendingConfirmation]:
        """Pending confirmations of one tenant, or of every tenant (``None``), oldest first.

        Unlike the other reads it raises :class:`nika_tui.errors.StoreUnavailable` when the
        store cannot be read: an empty list would say that nothing waits for a decision.
        """
        ...

    def resolve_confirmation(self, tenant_id: str, confirmation_id: str, approve: bool) -> str:
        """Approve (run the escalated action) or reject (only record) one confirmation.

        Returns a one-line outcome; raises when the action failed (it then stays pending).
        """
        ...

    def bus_tail(self, flt: BusFilter, after: str | None) -> BusTail:
        """Bus lines appended since ``after`` (the recent tail when ``None``)."""
        ...

    def recall(self, tenant_id: str, query: str, as_of: datetime | None = None) -> RecallView:
        """A tenant-scoped recall through the memory service (as of a date: by valid time)."""
        ...

    def mark_recall(self, tenant_id: str, query: str, hit_id: str, useful: bool) -> str:
        """Label one recall hit useful or not in the tenant's relevance set (what `nika tune
        recall` learns from); returns a one-line outcome."""
        ...

    def spawn(self, tenant_id: str) -> str:
        """Start the tenant's kernel; returns a one-line outcome."""
        ...

    def stop(self, tenant_id: str) -> str:
        """Stop the tenant's kernel."""
        ...

    def restart(self, tenant_id: str) -> str:
        """Restart the tenant's kernel."""
        ...

    def attach_argv(self, tenant_id: str) -> list[str]:
        """The command that attaches a terminal to the tenant's kernel."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def format_duration(seconds: float | None) -> str:
    """``42s``, ``7m``, ``3h05``, ``2d``; ``—`` for unknown."""
    if seconds is None:
        return "—"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}"
    return f"{s // 86400}d"


def format_metric(value: float | None) -> str:
    """A metric value in a short, stable form."""
    if value is None:
        return "—"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"


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


def as_float(value: object) -> float | None:
    """``float(value)`` or ``None`` for anything that is not a finite number."""
    if isinstance(value, bool) or value is None or value == "":
        return None
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return out if out == out and out not in (float("inf"), float("-inf")) else None


def as_datetime(value: object) -> datetime | None:
    """Parse an ISO-8601 string or epoch seconds into an aware UTC datetime, else ``None``."""
    from datetime import UTC

    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    number = as_float(value)
    if number is not None:
        try:
            return datetime.fromtimestamp(number, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None
