"""Raw payloads (Redis hashes, stream entries, JSON, bus lines) → dashboard views.

Shared by the Redis source and the fixture source so that both exercise the same parsing.
Every parser is total: a payload it cannot read gives an ``unreadable`` view, never an
exception. Shapes follow ``docs/contracts`` (kernel hash, wm hash, debt reports, confirmations,
review items, bus lines) and tolerate the variants written by older code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from nika_tui.dashboard.model import (
    FILL_MARK,
    STATUS_RANK,
    UNREADABLE,
    BusLineView,
    CompactionView,
    ConfirmationView,
    DebtView,
    FillView,
    KernelView,
    MemorySide,
    MetricStatus,
    MetricView,
    PurgeItemView,
    PurgePlanView,
    RecallHitView,
    RecallView,
    ReviewItemView,
    as_datetime,
    as_float,
    format_metric,
)
from nika_tui.domain.debt_tables import ACTIONS, ActionKind

KNOWN_STATES = frozenset({"starting", "working", "waiting-input", "idle", "exited", "error"})
PENDING = frozenset({"pending", "open", "requested", ""})
# The n and the minimum inside domain/debt.py's note ``insufficient data: n=3 of the 30 needed``:
# n counts queries for the query-log metrics, so ``sample_size`` is not it.
_INSUFFICIENT_NOTE = re.compile(r"n=(\d+) of the (\d+) needed")


def load_json(raw: object) -> Any:
    """``json.loads`` that returns ``None`` for anything unreadable."""
    if isinstance(raw, (dict, list)):
        return raw
    if not isinstance(raw, (str, bytes)):
        return None
    try:
        return json.loads(raw)
    except (ValueError, TypeError):
        return None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: object) -> str:
    return "" if value is None else str(value)


def _int(value: object) -> int | None:
    number = as_float(value)
    return int(number) if number is not None else None


def parse_kernel(
    state: Mapping[str, str], heartbeat: str | None, heartbeat_ttl_alive: bool, now: datetime
) -> KernelView:
    """The kernel hash + heartbeat string → :class:`KernelView`.

    Args:
        state: The ``kernel_state`` hash (may be empty).
        heartbeat: The heartbeat value (epoch seconds or ISO time), ``None`` when absent.
        heartbeat_ttl_alive: True when the heartbeat key exists (its TTL has not run out).
        now: The snapshot time, for the heartbeat age.
    """
    if not state and heartbeat is None:
        return KernelView()
    name = _str(state.get("state")).strip().lower().replace("_", "-")
    if name and name not in KNOWN_STATES:
        name = UNREADABLE
    beat = as_datetime(heartbeat) if heartbeat is not None else None
    age = max(0.0, (now - beat).total_seconds()) if beat is not None else None
    return KernelView(
        state=name or "unknown",
        source=_str(state.get("state_source") or state.get("source")),
        pid=_int(state.get("pid")),
        last_event=_str(state.get("last_event")),
        last_event_at=as_datetime(state.get("last_event_at")),
        heartbeat_age_s=age,
        stale=not heartbeat_ttl_alive,
        agents=_agents(state),
    )


def _agents(state: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The ``agent.{cli}`` fields of the kernel hash (JSON with a ``state``), first window first."""
    out: list[tuple[str, str]] = []
    for field, raw in state.items():
        if not field.startswith("agent."):
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        name = str(value.get("state", "")) if isinstance(value, dict) else ""
        out.append((field.removeprefix("agent."), name if name in KNOWN_STATES else UNREADABLE))
    primary = _str(state.get("cli"))
    return tuple(sorted(out, key=lambda pair: (pair[0] != primary, pair[0])))


def parse_fill(
    wm: Mapping[str, str],
    history: Iterable[Mapping[str, str]] = (),
    compactions: Iterable[Mapping[str, str]] = (),
) -> FillView:
    """The working-memory hash (+ history and compaction streams) → :class:`FillView`."""
    percent = as_float(wm.get("fill_percent")) if wm else None
    unreadable = bool(wm) and wm.get("fill_percent") not in (None, "") and percent is None
    hist: list[tuple[datetime, float]] = []
    for sample in history:
        at, fill = as_datetime(sample.get("at")), as_float(sample.get("fill"))
        if at is not None and fill is not None:
            hist.append((at, fill))
    comps: list[CompactionView] = []
    for event in compactions:
        at = as_datetime(event.get("at"))
        if at is not None:
            comps.append(
                CompactionView(at, _str(event.get("trigger")), as_float(event.get("fill")))
            )
    forecast = as_float(wm.get("forecast_s")) if wm else None
    if percent is not None and percent >= FILL_MARK:
        forecast = 0.0
    return FillView(
        percent=percent,
        tokens=_int(wm.get("tokens")) if wm else None,
        window=_int(wm.get("window")) if wm else None,
        forecast_s=forecast if forecast is None or forecast >= 0 else None,
        history=tuple(sorted(hist)),
        compactions=tuple(sorted(comps, key=lambda c: c.at)),
        unreadable=unreadable,
    )


def _status(value: object) -> MetricStatus:
    text = _str(value).lower()
    if text in ("ok", "warn", "alert", "insufficient"):
        return text  # type: ignore[return-value]
    return "unknown"


def action_text(action: str) -> str:
    """The person-readable words of an action kind (the raw value when it is not one)."""
    try:
        return ACTIONS[ActionKind(action.strip().lower())].text
    except ValueError:
        return action


def auto_action_key(action: str, strategy: str = "") -> str | None:
    """Which auto-action switch (``AutoActions`` field) governs a metric's proposed action.

    The debt domain's action table is the one source of truth (``ActionSpec.governed_by``).
    """
    try:
        kind = ActionKind(action.strip().lower())
    except ValueError:
        return None
    return ACTIONS[kind].governed_by


def parse_debt(
    tenant_id: str,
    reports: Sequence[object],
    auto_actions: Mapping[str, str] | None = None,
    ingest_paused: str = "",
) -> DebtView:
    """Audit reports (oldest first; JSON text or dicts) → the latest :class:`DebtView`."""
    parsed = [load_json(r) for r in reports]
    if not parsed:
        return DebtView(tenant_id, ingest_paused=ingest_paused)
    latest = parsed[-1]
    if not isinstance(latest, dict) or not isinstance(latest.get("metrics"), list):
        return DebtView(tenant_id, unreadable=True, ingest_paused=ingest_paused)
    history: dict[str, list[float]] = {}
    series: dict[str, list[tuple[datetime, float]]] = {}
    for report in parsed:
        if isinstance(report, dict) and isinstance(report.get("metrics"), list):
            at = as_datetime(report.get("at"))
            for m in report["metrics"]:
                if isinstance(m, dict) and (v := as_float(m.get("value"))) is not None:
                    history.setdefault(_str(m.get("name")), []).append(v)
                    if at is not None:
                        series.setdefault(_str(m.get("name")), []).append((at, v))
    auto = auto_actions or {}
    metrics: list[MetricView] = []
    for m in latest["metrics"]:
        if not isinstance(m, dict):
            metrics.append(MetricView(UNREADABLE, None, None))
            continue
        name, action, strategy = _str(m.get("name")), _str(m.get("action")), _str(m.get("strategy"))
        key = auto_action_key(action, strategy)
        note = _str(m.get("note"))
        counts = _INSUFFICIENT_NOTE.search(note)
        metrics.append(
            MetricView(
                name=name or UNREADABLE,
                value=as_float(m.get("value")),
                threshold=as_float(m.get("threshold")),
                status=_status(m.get("status")),
                action=action_text(action),
                strategy=strategy,
                history=tuple(history.get(name, ())),
                series=tuple(series.get(name, ())),
                auto_mode=auto.get(key, "") if key else "",
                window=_str(m.get("window")),
                sample_size=_int(m.get("sample_size")),
                note=note,
                sample_n=int(counts[1]) if counts else None,
                min_sample=int(counts[2]) if counts else None,
            )
        )
    return DebtView(
        tenant_id,
        at=as_datetime(latest.get("at")),
        metrics=tuple(metrics),
        ingest_paused=ingest_paused,
        held=_held_metrics(latest.get("actions")),
        pause_waived=tuple(_str(r) for r in latest.get("pause_waived") or () if r),
    )


def _held_metrics(actions: object) -> tuple[str, ...]:
    """Metrics of the audit's actions skipped as approved-and-changed-nothing (decision 221)."""
    if not isinstance(actions, list):
        return ()
    held = [
        _str(name)
        for a in actions
        if isinstance(a, dict) and a.get("skipped") and isinstance(a.get("metrics"), list)
        for name in a["metrics"]
    ]
    return tuple(dict.fromkeys(held))


def worst_metric(debt: DebtView) -> tuple[MetricStatus, str]:
    """``(status, label)`` of the worst metric, for the overview."""
    if debt.unreadable:
        return "unknown", UNREADABLE
    worst = debt.worst
    if worst is None:
        return "unknown", ""
    if STATUS_RANK.get(worst.status, 0) <= 1:
        return worst.status, ""
    return worst.status, f"{worst.name} {format_metric(worst.value)}"


def parse_confirmation(raw: object, fallback_id: str = "") -> ConfirmationView:
    """One entry of the ``confirmations`` hash."""
    data = load_json(raw)
    if not isinstance(data, dict):
        return ConfirmationView(fallback_id, UNREADABLE, UNREADABLE, _str(raw)[:200])
    return ConfirmationView(
        id=_str(data.get("id")) or fallback_id,
        kind=_str(data.get("kind")),
        title=_str(data.get("title")),
        detail=_str(data.get("detail")),
        created_at=as_datetime(data.get("created_at")),
        status=_str(data.get("status")) or "pending",
    )


def pending_confirmations(values: Iterable[object]) -> list[ConfirmationView]:
    """Only the confirmations still waiting (unreadable ones count: a person must look)."""
    out = [parse_confirmation(v) for v in values]
    return [c for c in out if c.status.lower() in PENDING or c.kind == UNREADABLE]


def pending_reviews(values: Iterable[object]) -> int:
    """Pairs still waiting in a review-queue hash (resolved ones stay there as history).

    A substring test, not a JSON parse: the hash keeps every resolution ever made and the
    overview counts it for every tenant every second. Entries without a status (or
    unreadable ones) count: a person should look at them.
    """
    return sum(
        1
        for v in values
        if isinstance(v, str) and ('"status":"pending"' in v or '"status"' not in v)
    )


def _side(data: object) -> MemorySide:
    if not isinstance(data, dict):
        return MemorySide()
    meta = _dict(data.get("meta") or data.get("NIKA_META"))
    return MemorySide(
        id=_str(data.get("id")),
        text=_str(data.get("text")),
        timestamp=as_datetime(
            data.get("valid_from") or data.get("timestamp") or meta.get("timestamp")
        ),
        session=_str(meta.get("session_id") or data.get("session_id")),
        agent=_str(meta.get("agent_type") or data.get("agent_type")),
        turn=_str(data.get("turn") or meta.get("turn") or meta.get("parent_id")),
    )


def parse_review_item(tenant_id: str, raw: object, fallback_id: str = "") -> ReviewItemView:
    """One entry of the review-queue hash (an UNCERTAIN pair).

    Accepts the engine's flat ``ReviewItem`` (``old_id``, ``old_text``, ``old_valid_from``...)
    and the nested form (``old: {id, text, valid_from, meta}``) used by fixtures.
    """
    data = load_json(raw)
    if not isinstance(data, dict):
        return ReviewItemView(fallback_id, tenant_id, raw=_str(raw), unreadable=True)
    if isinstance(data.get("old"), dict):
        old, new = _side(data.get("old")), _side(data.get("new"))
    elif "old_text" in data or "old_id" in data:
        old = MemorySide(
            _str(data.get("old_id")),
            _str(data.get("old_text")),
            as_datetime(data.get("old_valid_from")),
        )
        new = MemorySide(
            _str(data.get("new_id")),
            _str(data.get("new_text")),
            as_datetime(data.get("new_valid_from")),
        )
    else:
        return ReviewItemView(fallback_id, tenant_id, raw=_str(raw), unreadable=True)
    judgement = _dict(data.get("judgement"))
    return ReviewItemView(
        id=_str(data.get("id")) or fallback_id,
        tenant_id=tenant_id,
        old=old,
        new=new,
        reason=_str(data.get("reason") or judgement.get("reason")),
        judge=_str(data.get("judge") or judgement.get("judge")),
        created_at=as_datetime(data.get("created_at") or data.get("queued_at")),
        status=_str(data.get("status")) or "pending",
    )


def provenance(side: MemorySide, record: object) -> MemorySide:
    """Fill a side's session / agent / turn from a memory record (``history`` op reply)."""
    rec = _dict(record)
    meta = _dict(rec.get("meta"))
    return MemorySide(
        id=side.id,
        text=side.text or _str(rec.get("text")),
        timestamp=side.timestamp or as_datetime(rec.get("valid_from")),
        session=_str(meta.get("session_id")),
        agent=_str(meta.get("agent_type")),
        turn=_str(meta.get("turn") or meta.get("parent_id")),
    )


def parse_purge_plan(tenant_id: str, data: object) -> PurgePlanView:
    """The ``purge.plan`` reply → :class:`PurgePlanView`."""
    if not isinstance(data, dict):
        return PurgePlanView(tenant_id)
    items: list[PurgeItemView] = []
    for it in data.get("items") or []:
        if not isinstance(it, dict):
            continue
        blocked = it.get("blocked_by") or it.get("active_refs") or []
        items.append(
            PurgeItemView(
                memory_id=_str(it.get("memory_id") or it.get("id")),
                text=_str(it.get("text")),
                replacement_id=_str(it.get("replacement_id") or it.get("superseded_by")),
                replacement_text=_str(it.get("replacement_text")),
                reason=_str(it.get("reason")),
                blocked_by=tuple(_str(b) for b in blocked) if isinstance(blocked, list) else (),
            )
        )
    count = _int(data.get("dry_run_count")) if "dry_run_count" in data else None
    if count is None:
        count = sum(1 for i in items if not i.blocked_by)
    return PurgePlanView(tenant_id, tuple(items), count)


def parse_bus_line(tenant_id: str, raw: str) -> BusLineView:
    """One JSONL bus line; an unreadable one keeps its raw text."""
    data = load_json(raw)
    if not isinstance(data, dict):
        return BusLineView(tenant_id=tenant_id, raw=raw, unreadable=True, summary=raw[:200])
    meta = _dict(data.get("NIKA_META"))
    body = _dict(data.get("body"))
    summary = ", ".join(f"{k}={_short(v)}" for k, v in list(body.items())[:4])
    return BusLineView(
        tenant_id=_str(data.get("tenant_id")) or tenant_id,
        raw=raw,
        at=as_datetime(data.get("at")),
        kind=_str(data.get("kind")),
        action_type=_str(meta.get("action_type")),
        domain=_str(meta.get("domain")),
        summary=summary,
        memory_id=_str(body.get("memory_id") or body.get("old_id") or ""),
    )


def _short(value: object, width: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def parse_recall(tenant_id: str, query: str, data: object) -> RecallView:
    """A ``RecallResult`` (dict) → :class:`RecallView`."""
    if not isinstance(data, dict):
        return RecallView(tenant_id, query, palace=f"no memory for {query}")
    hits: list[RecallHitView] = []
    for h in data.get("hits") or []:
        if not isinstance(h, dict):
            continue
        record = _dict(h.get("record"))
        hits.append(
            RecallHitView(
                id=_str(record.get("id")),
                text=_str(record.get("text")),
                score=as_float(h.get("score")) or 0.0,
                cosine=as_float(h.get("cosine")),
                layer=_str(record.get("layer")),
                envelope=_dict(record.get("meta")),
                status=_str(record.get("status")) or "current",
                valid_from=as_datetime(
                    record.get("valid_from") or _dict(record.get("meta")).get("timestamp")
                ),
                superseded_by=_str(record.get("superseded_by")),
            )
        )
    palace = data.get("palace")
    return RecallView(tenant_id, query, tuple(hits), _str(palace) if palace else None)


def parse_counts(data: object) -> dict[str, dict[str, int]]:
    """The ``stats`` reply → layer → status → count (several reply shapes accepted)."""
    out: dict[str, dict[str, int]] = {}
    if not isinstance(data, dict):
        return out
    tenants = data.get("tenants")
    if isinstance(tenants, dict) and len(tenants) == 1:  # the engine's {"tenants": {t: ...}}
        data = next(iter(tenants.values()))
        if not isinstance(data, dict):
            return out
    counts = data.get("counts", data)
    if isinstance(counts, list):  # [{"layer", "status", "count"}]
        for c in counts:
            if isinstance(c, dict) and (n := _int(c.get("count"))) is not None:
                out.setdefault(_str(c.get("layer")), {})[_str(c.get("status"))] = n
        return out
    if isinstance(counts, dict):
        for layer, per in counts.items():
            if isinstance(per, dict):
                row = {str(s): n for s, v in per.items() if (n := _int(v)) is not None}
                if row:
                    out[str(layer)] = row
    return out
