"""The memory browser's calls against the real memory service (engine loop in a thread, real
stores, real embedder): list with filters and as-of, retire, restore, send to review."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from nika_tui.dashboard.memory_views import MemoryFilter
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import ValidationFailed
from nika_tui.services.memory_client import MemoryClient
from nika_tui.settings import Settings
from nika_tui.ui.widgets.memory_text import detail_text
from tests.plugins.memory import RunningService

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

STAGING = "The staging server is staging-1.acme.internal"
CI = "CI runs on the self-hosted runner ci-7 since the summer"


def _remember(client: MemoryClient, text: str, when: datetime) -> Any:
    meta = NikaMeta(timestamp=when, project_id="web", session_id="s-1", agent_type="codex")
    req = RememberRequest(tenant_id="acme", text=text, meta=meta)
    return client.wait_ingested("acme", client.remember(req), timeout=30)


def test_browse_retire_restore_and_review_through_the_service(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    staging = _remember(svc.client, STAGING, datetime(2026, 3, 1, tzinfo=UTC))["id"]
    ci = _remember(svc.client, CI, datetime(2026, 6, 1, tzinfo=UTC))["id"]
    src = RedisDashboardSource(Settings.from_env())

    listing = src.memories("acme", MemoryFilter())
    assert [m.id for m in listing.memories] == [ci, staging]  # newest valid time first
    first = listing.memories[1]
    assert (first.status, first.project, first.agent, first.session) == (
        "current",
        "web",
        "codex",
        "s-1",
    )
    assert first.valid_from == datetime(2026, 3, 1, tzinfo=UTC)
    assert [m.id for m in src.memories("acme", MemoryFilter(text="STAGING-1")).memories] == [
        staging
    ]
    assert [m.id for m in src.memories("acme", MemoryFilter(text=ci)).memories] == [ci]
    april = MemoryFilter(as_of=datetime(2026, 4, 1, tzinfo=UTC))
    assert [m.id for m in src.memories("acme", april).memories] == [staging]

    assert src.retire_memory("acme", staging, "wrong server") == f"{staging}: retired"
    retired = src.memories("acme", MemoryFilter(status="retired")).memories
    assert [(m.id, m.status) for m in retired] == [(staging, "retired")]
    assert "wrong server" in retired[0].retire_reason
    assert retired[0].valid_until is not None  # it stopped being true when retired
    assert [v.memory.id for v in src.memory_chain("acme", staging)] == [staging]

    assert src.restore_memory("acme", staging, "it came back") == f"{staging}: restored"
    assert src.memories("acme", MemoryFilter(status="retired")).memories == ()
    kinds = [ln.data["kind"] for ln in svc.ctx.bus("acme").read() if ln.data]
    assert "memory.retired" in kinds and "memory.restored" in kinds
    # Both reasons outlive the payload (restore clears retire_reason): the history keeps them.
    history = [(e.what, e.why) for e in src.memory_history("acme", staging)]
    assert history == [("retired", "person: wrong server"), ("restored", "person: it came back")]

    assert "in review as" in src.review_memory("acme", ci, "is this still true?")
    in_review = src.memories("acme", MemoryFilter(status="review")).memories
    assert [(m.id, m.status) for m in in_review] == [(ci, "in review")]
    (item,) = src.review_items("acme")
    assert item.old.id == ci and "is this still true?" in item.reason
    ((what, why),) = [(e.what, e.why) for e in src.memory_history("acme", ci)]
    assert what == f"queued for review {item.id}" and why == "person asks: is this still true?"

    with pytest.raises(ValidationFailed, match="no memory"):
        src.retire_memory("acme", "00000000-0000-0000-0000-000000000000", "x")


def test_a_three_version_supersede_chain_and_the_hook_source(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    """Each move of the staging server supersedes the one before: the browser reads the whole
    chain from any version, and shows what wrote each memory (here a hook, from an import)."""
    from nika_tui.domain.envelope import Trigger

    make_tenant("acme")
    svc = running_service
    ids = []
    for month, host in ((3, "staging-1"), (6, "staging-2"), (9, "staging-3")):
        text = (
            f"The staging server is {host}.acme.internal"
            if month == 3
            else f"The staging server moved to {host}.acme.internal"
        )
        meta = NikaMeta(
            timestamp=datetime(2026, month, 1, tzinfo=UTC),
            project_id="web",
            session_id="s-2",
            agent_type="claude-code",
            trigger=Trigger.HOOK,
            source=f"session.jsonl:{month}",
        )
        req = RememberRequest(tenant_id="acme", text=text, meta=meta)
        ids.append(svc.client.wait_ingested("acme", svc.client.remember(req), timeout=30)["id"])
    src = RedisDashboardSource(Settings.from_env())

    for start in ids:  # the same chain, oldest first, from any of its versions
        chain = src.memory_chain("acme", start)
        assert [v.memory.id for v in chain] == ids
    assert [v.replaced_by for v in chain] == [ids[1], ids[2], ""]
    assert [v.memory.status for v in chain][-1] == "current"
    assert {v.memory.status for v in chain[:2]} != {"current"}
    current = src.memories("acme", MemoryFilter(status="current")).memories
    assert [m.id for m in current] == [ids[2]]
    (shown,) = current
    assert (shown.hook, shown.source, shown.agent) == ("hook", "session.jsonl:9", "claude-code")


def test_the_chain_pane_shows_why_each_version_was_replaced(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")
    svc = running_service
    old = _remember(svc.client, STAGING, datetime(2026, 3, 1, tzinfo=UTC))["id"]
    moved = "The staging server moved to staging-2.acme.internal"
    new = _remember(svc.client, moved, datetime(2026, 6, 1, tzinfo=UTC))["id"]
    src = RedisDashboardSource(Settings.from_env())

    chain = src.memory_chain("acme", new)
    assert [(v.memory.id, v.replaced_by) for v in chain] == [(old, new), (new, "")]
    why = chain[0].why
    assert why  # the supersede's reason, as the service recorded it on the retired version
    (current,) = src.memories("acme", MemoryFilter(text="staging-2")).memories
    pane = detail_text(current, chain).plain
    assert f"[{old}]" in pane and f"→ {new}" in pane
    assert f"replaced because: {why}" in pane


def test_pages_through_the_service_reach_every_memory(
    running_service: RunningService, make_tenant: Callable[..., TenantConfig]
) -> None:
    """1,150 memories: the service answers 500 per page, ``offset`` gives the next one, and the
    pages together hold every memory once, newest valid time first."""
    import random
    from datetime import timedelta

    from nika_tui.dashboard.memory_views import PAGE
    from tests.plugins.debt import make_record, put, unit

    make_tenant("acme")
    rng = random.Random(7)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    records = [
        make_record("acme", f"fact {i}", valid_from=start + timedelta(hours=i)) for i in range(1150)
    ]
    put(running_service.ctx, [(r, unit(rng)) for r in records])
    src = RedisDashboardSource(Settings.from_env())

    pages = []
    while not pages or sum(len(p.memories) for p in pages) < pages[0].total:
        pages.append(src.memories("acme", MemoryFilter(), sum(len(p.memories) for p in pages)))
        assert pages[-1].memories, "an empty page before every memory was read"
    assert [len(p.memories) for p in pages] == [PAGE, PAGE, 150]
    assert {p.total for p in pages} == {1150}
    ids = [m.id for p in pages for m in p.memories]
    assert ids == [r.id for r in reversed(records)]  # each once, newest first, across pages
    assert src.memories("acme", MemoryFilter(), 1150).memories == ()  # past the end: empty
