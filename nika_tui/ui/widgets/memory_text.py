"""How the memory browser draws a memory: table cells, the detail pane, the timeline span."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.text import Text

from nika_tui.dashboard.memory_views import ChainVersion, MemoryEvent, MemoryView
from nika_tui.dashboard.model import ReviewItemView

STATUS_STYLE = {
    "current": "green",
    "retired": "dim strike",
    "in review": "bold yellow",
    "unreadable": "italic red",
}
SPAN_WIDTH = 24


def when(at: datetime | None) -> str:
    """``2026-12-01 15:02`` or ``—``."""
    return f"{at:%Y-%m-%d %H:%M}" if at else "—"


def source_text(m: MemoryView) -> str:
    """Who wrote it: ``claude-code · s-77 · user`` (agent, session, hook), or the import file."""
    parts = [p for p in (m.agent, m.session, m.hook) if p]
    if m.source:
        parts.append(f"import {m.source}")
    return " · ".join(parts) or "—"


def short(text: str, width: int = 60) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def span_bar(
    m: MemoryView, lo: datetime, hi: datetime, as_of: datetime | None, width: int = SPAN_WIDTH
) -> Text:
    """The memory's valid time as a bar over ``[lo, hi]``; ``│`` marks the as-of date.

    ``█`` while it was true, ``░`` before and after; a current memory runs to the right edge.
    """
    if m.valid_from is None or hi <= lo:
        return Text("·" * width, style="dim")
    span = (hi - lo).total_seconds()

    def cell(at: datetime) -> int:
        return max(0, min(width - 1, int((at - lo).total_seconds() / span * (width - 1))))

    start = cell(m.valid_from)
    end = cell(m.valid_until) if m.valid_until else width - 1
    mark = cell(as_of) if as_of is not None and lo <= as_of <= hi else None
    style = STATUS_STYLE.get(m.status, "")
    text = Text()
    for i in range(width):
        if i == mark:
            text.append("│", style="bold magenta")
        elif start <= i <= end:
            text.append("█", style=style.replace(" strike", ""))
        else:
            text.append("░", style="dim")
    return text


def time_range(memories: Sequence[MemoryView], now: datetime) -> tuple[datetime, datetime]:
    """The valid-time range a timeline spans: the oldest start to ``now``."""
    starts = [m.valid_from for m in memories if m.valid_from is not None]
    return (min(starts) if starts else now), now


def refusal(run: str, m: MemoryView) -> str:
    """Why ``run`` cannot apply to ``m`` ('' when it can): said instead of asking for nothing."""
    if run == "retire" and m.status == "retired":
        return "is already retired (`u` restores it)"
    if run == "restore" and m.status != "retired":
        return f"is {m.status}: only a retired memory can be restored"
    if run == "review" and m.status == "in review":
        return "is already in the review queue"
    return ""


def detail_text(
    m: MemoryView, chain: Sequence[ChainVersion], history: Sequence[MemoryEvent] = ()
) -> Text:
    """The selected memory in full, with its provenance, its history and supersede chain."""
    text = Text(f"{m.id}", style="bold")
    text.append(f"  [{m.layer or '?'}] ", style="dim")
    text.append(m.status, style=STATUS_STYLE.get(m.status, ""))
    if m.review_id:
        text.append(f" (review {m.review_id})", style="yellow")
    text.append(f"\n{m.text}\n", style="")
    text.append(f"valid {when(m.valid_from)} → {when(m.valid_until) if m.valid_until else 'now'}")
    text.append(f" · learnt {when(m.asserted_at)}\n", style="dim")
    text.append(f"project {m.project or '—'} · source {source_text(m)}\n", style="magenta")
    if m.retire_reason:
        text.append(f"retired because: {m.retire_reason}\n", style="dim")
    if history:
        text.append("history:\n", style="bold")
        for e in history:
            text.append(f"  {when(e.at)}  ", style="dim")
            text.append(e.what, style="cyan")
            text.append(f" — {e.why}\n" if e.why else "\n")
    if len(chain) > 1:
        text.append("supersede chain (oldest first):\n", style="bold")
        for v in chain:
            mark = "▶ " if v.memory.id == m.id else "  "
            text.append(f"{mark}{when(v.memory.valid_from)}  ", style="dim")
            text.append(f"[{v.memory.id}] ", style="cyan")
            text.append(short(v.memory.text, 70))
            if v.replaced_by:
                text.append(f"  → {v.replaced_by}", style="dim")
            text.append("\n")
            if v.why:
                # The judge's or the person's reason: a timeline that only says "replaced"
                # leaves the reader to guess whether it was a newer fact or a correction.
                label = "replaced because" if v.replaced_by else "retired because"
                text.append(f"      {label}: {v.why}\n", style="dim italic")
    elif chain:
        text.append("no other version (nothing superseded it, it superseded nothing)", style="dim")
    return text


def review_toast(tenant_id: str, count: int, items: Sequence[ReviewItemView]) -> str:
    """The toast of newly queued review pairs: the newest with the judge's reason and the pair.

    One pair in full, the others counted: a burst of pairs (a replayed session) must not cover
    an 80x24 screen. ``items`` empty (the queue could not be read): the count, as before.
    """
    if not items:
        return f"{tenant_id}: {count} new pair(s) in the review queue (v opens it)"
    it = items[-1]
    lines = [f"{tenant_id}: review {it.id} queued ({it.judge or 'judge'}: {short(it.reason, 90)})"]
    lines.append(f"  old: {short(it.old.text, 60)}")
    if it.new.text:
        lines.append(f"  new: {short(it.new.text, 60)}")
    more = f" ({count - 1} more)" if count > 1 else ""
    lines.append(f"v opens the review queue{more}")
    return "\n".join(lines)
