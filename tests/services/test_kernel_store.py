"""Kernel status in Redis: hook events, heartbeat TTL, freshness window, pod_ttfl samples."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pytest
import redis

from nika_tui.domain.kernel_state import KernelState, StateSource
from nika_tui.services import confirmation_queue, kernel_store, redis_keys
from tests.helpers import retry_until

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


class HookCase(NamedTuple):
    test_id: str
    event: str
    payload: dict[str, Any]
    expected: KernelState | None


HOOK_CASES = [
    HookCase("prompt-submitted", "UserPromptSubmit", {"prompt": "fix it"}, KernelState.WORKING),
    HookCase("turn-stopped", "Stop", {}, KernelState.IDLE),
    HookCase(
        "permission-prompt",
        "Notification",
        {"notification_type": "permission_prompt", "message": "Claude needs your permission"},
        KernelState.WAITING_INPUT,
    ),
    HookCase(
        "idle-prompt",
        "Notification",
        {"message": "Claude is waiting for your input"},
        KernelState.WAITING_INPUT,
    ),
    HookCase(
        "auth-success-is-not-a-question",
        "Notification",
        {"notification_type": "auth_success"},
        None,
    ),
    HookCase("session-start", "SessionStart", {"source": "startup"}, KernelState.IDLE),
    HookCase(
        "session-start-after-compact", "SessionStart", {"source": "compact"}, KernelState.WORKING
    ),
    HookCase("session-end", "SessionEnd", {"reason": "exit"}, KernelState.EXITED),
    HookCase(
        "codex-turn-complete",
        "agent-turn-complete",
        {"type": "agent-turn-complete"},
        KernelState.IDLE,
    ),
    HookCase("pre-compact-changes-no-state", "PreCompact", {"trigger": "auto"}, None),
    HookCase("unknown-event", "SubagentStop", {}, None),
]


@pytest.mark.parametrize("case", HOOK_CASES, ids=[c.test_id for c in HOOK_CASES])
def test_record_hook_event(case: HookCase, redis_client: redis.Redis) -> None:
    kernel_store.start_kernel(redis_client, "acme", cli="claude-code", session="s", pid=1, now=NOW)
    later = NOW + timedelta(seconds=5)
    written = kernel_store.record_hook_event(redis_client, "acme", case.event, later, case.payload)
    assert written is case.expected
    status = kernel_store.read_status(redis_client, "acme", later)
    assert status is not None
    assert status.last_event == case.event
    if case.expected is None:
        assert status.state is KernelState.STARTING
        assert status.source is StateSource.MANAGER
    else:
        assert status.state is case.expected
        assert status.source is StateSource.HOOK
        assert status.state_at == later
    if case.expected is KernelState.EXITED:
        assert status.heartbeat_age_s is None
        assert not status.stale
    else:
        assert status.heartbeat_age_s == pytest.approx(0.0, abs=0.01)


def test_pre_compact_alone_records_no_compaction(redis_client: redis.Redis) -> None:
    # Claude Code runs PreCompact for a /compact it then refuses: the hook records the
    # compaction only once the CLI confirms it (record_compaction).
    redis_client.hset(redis_keys.working_memory("acme"), "fill_percent", "63.5")
    kernel_store.record_hook_event(redis_client, "acme", "PreCompact", NOW, {"trigger": "auto"})
    assert redis_client.xlen(redis_keys.compactions("acme")) == 0
    kernel_store.record_compaction(redis_client, "acme", NOW, "auto")
    entries = redis_client.xrange(redis_keys.compactions("acme"))
    assert len(entries) == 1
    fields = entries[0][1]
    assert fields["trigger"] == "auto"
    assert float(fields["fill"]) == pytest.approx(63.5)


def test_hook_state_is_fresh_only_for_hooks_within_the_window(redis_client: redis.Redis) -> None:
    kernel_store.record_hook_event(redis_client, "acme", "UserPromptSubmit", NOW)
    fields = kernel_store.read_fields(redis_client, "acme")
    assert kernel_store.hook_state_is_fresh(fields, NOW + timedelta(seconds=10), window_s=60)
    assert not kernel_store.hook_state_is_fresh(fields, NOW + timedelta(seconds=61), window_s=60)
    kernel_store.set_state(redis_client, "acme", KernelState.IDLE, StateSource.PANE, NOW)
    fields = kernel_store.read_fields(redis_client, "acme")
    assert not kernel_store.hook_state_is_fresh(fields, NOW, window_s=60)


def test_heartbeat_lapse_makes_a_live_kernel_stale(redis_client: redis.Redis) -> None:
    now = datetime.now(UTC)
    kernel_store.start_kernel(
        redis_client, "acme", cli="shell", session="s", pid=1, now=now, heartbeat_ttl_s=0.2
    )
    status = kernel_store.read_status(redis_client, "acme", now)
    assert status is not None and not status.stale
    stale = retry_until(
        lambda: (
            (s := kernel_store.read_status(redis_client, "acme", datetime.now(UTC))) and s.stale
        ),
        what="the heartbeat to lapse",
    )
    assert stale
    kernel_store.heartbeat(redis_client, "acme", datetime.now(UTC))
    status = kernel_store.read_status(redis_client, "acme", datetime.now(UTC))
    assert status is not None and not status.stale


def test_exited_kernel_is_never_stale(redis_client: redis.Redis) -> None:
    kernel_store.set_state(redis_client, "acme", KernelState.EXITED, StateSource.MANAGER, NOW)
    status = kernel_store.read_status(redis_client, "acme", NOW)
    assert status is not None
    assert status.heartbeat_age_s is None and not status.stale


def test_pod_ttfl_samples_newest_first(redis_client: redis.Redis) -> None:
    for value in (0.5, 0.25, 1.5):
        kernel_store.record_pod_ttfl(redis_client, "acme", value)
    assert kernel_store.pod_ttfl_samples(redis_client, "acme") == [1.5, 0.25, 0.5]
    assert redis_client.hget(redis_keys.kernel_state("acme"), "pod_ttfl_s") == "1.5000"


def test_list_statuses_skips_tenants_without_a_kernel(redis_client: redis.Redis) -> None:
    kernel_store.start_kernel(redis_client, "b", cli="codex", session="s", pid=2, now=NOW)
    kernel_store.start_kernel(redis_client, "a", cli="shell", session="s", pid=1, now=NOW)
    statuses = kernel_store.list_statuses(redis_client, ["a", "nobody", "b"], NOW)
    assert [(s.tenant_id, s.cli, s.pid) for s in statuses] == [("a", "shell", 1), ("b", "codex", 2)]


def test_confirmations_are_queued_once_per_kind(redis_client: redis.Redis) -> None:
    assert confirmation_queue.pending_confirmation(redis_client, "acme", "compact") is None
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "compact", "Compact?", "d", NOW
    )
    found = confirmation_queue.pending_confirmation(redis_client, "acme", "compact")
    assert found == item
    assert set(item) == {"id", "tenant_id", "kind", "title", "detail", "created_at", "status"}
    assert confirmation_queue.pending_confirmation(redis_client, "acme", "purge") is None
