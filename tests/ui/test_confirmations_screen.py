"""The confirmations screen on the real embedded Redis (the live source): approve applies, reject
only records, the purge kind wants the typed tenant id, Redis / service down is shown and the
screen stays up; and on the fixture source (the offline preview, a deterministic snapshot)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import redis
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, Static

from nika_tui.dashboard.fixture_source import FixtureSource
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.kernel_state import KernelState
from nika_tui.domain.tenant import AgentCli, AutoActions, AutoMode, KernelConfig, TenantConfig
from nika_tui.services import confirmation_queue, redis_keys
from nika_tui.services.bus import open_bus
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard, make_app
from nika_tui.ui.screens.confirmations import ConfirmationsScreen
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import notes, ready, run, screen_is, wait_for

if TYPE_CHECKING:  # libtmux is imported by the tmux fixture at use (issue 12)
    import libtmux

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
"""The dashboard's clock and the confirmations' queue time (deterministic screens)."""
LATER = datetime(2026, 12, 2, 12, 5, tzinfo=UTC)


@pytest.fixture
def env(isolated_env: dict[str, str], redis_url: str) -> dict[str, str]:
    """The test's environment with the embedded Redis of the session."""
    return {**isolated_env, "REDIS_URL": redis_url}


def _tenant(tenant_id: str, env: dict[str, str], workdir: Path | None = None) -> None:
    kernel = KernelConfig()
    if workdir is not None:
        # The stand-in agent speaks like a CLI: "/compact" answers "Conversation compacted".
        kernel = KernelConfig(
            workdir=str(workdir), command=[sys.executable, "-m", "nika_tui.assets.standin_agent"]
        )
    save_tenant(
        TenantConfig(
            tenant_id=tenant_id,
            display_name=tenant_id.title(),
            agent_cli=AgentCli.SHELL,
            auto_actions=AutoActions(compact=AutoMode.ESCALATE),
            kernel=kernel,
        ),
        Settings.from_env(env).roots,
    )


def _app(env: dict[str, str], tmp_path: Path) -> NikaDashboard:
    return make_app(
        Settings.from_env(env),
        source=RedisDashboardSource(Settings.from_env(env), child_env=env),
        clock=lambda: NOW,
        show_welcome=False,
        settings_file=tmp_path / "ui.yaml",
    )


def _stored(client: redis.Redis, tenant_id: str, item_id: str) -> dict[str, Any]:
    raw = client.hget(redis_keys.confirmations(tenant_id), item_id)
    return dict(json.loads(str(raw)))


def _resolved(tenant_id: str) -> list[dict[str, object]]:
    return [
        line.data["body"]
        for line in open_bus(tenant_id).read()
        if line.data and line.data["kind"] == "confirmation.resolved"
    ]


def _screen(app: NikaDashboard) -> ConfirmationsScreen:
    screen = app.screen
    assert isinstance(screen, ConfirmationsScreen)
    return screen


def _text(app: NikaDashboard, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def _listed(pilot: Pilot[Any], count: int) -> ConfirmationsScreen:
    await screen_is(pilot, "ConfirmationsScreen")
    app = pilot.app
    assert isinstance(app, NikaDashboard)
    await wait_for(pilot, lambda: len(_screen(app).items) == count, f"{count} confirmation(s)")
    return _screen(app)


def test_reject_records_the_decision_and_runs_nothing(
    env: dict[str, str], redis_client: redis.Redis, tmp_path: Path
) -> None:
    _tenant("acme", env)
    _tenant("beta", env)
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "compact", "Compact acme's context (70% full)?", "61% line", NOW
    )
    other = confirmation_queue.queue_confirmation(
        redis_client, "beta", "rem.run", "run REM", "idle", NOW
    )

    async def scenario() -> None:
        async with _app(env, tmp_path).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            app.selected_tenant = "acme"
            await pilot.press("c")  # from the overview
            screen = await _listed(pilot, 1)
            table = screen.query_one("#confirmation-items", DataTable)
            row = [str(c) for c in table.get_row(item["id"])]
            assert row == [
                "acme",
                "compact",
                "Compact acme's context (70% full)?",
                "2026-12-02 12:00",
                "61% line",
            ]
            await pilot.press("t")  # every tenant
            await wait_for(pilot, lambda: len(screen.items) == 2, "both tenants")
            assert {i.tenant_id for i in screen.items} == {"acme", "beta"}
            await pilot.press("t")
            await wait_for(pilot, lambda: len(screen.items) == 1, "acme only again")
            await pilot.press("x")
            await wait_for(pilot, lambda: not screen.items, "the list emptied")
            await wait_for(
                pilot, lambda: any("rejected compact for acme" in n for n in notes(app)), "said"
            )
            assert app.screen is screen

    run(scenario())
    assert _stored(redis_client, "acme", item["id"])["status"] == "rejected"
    assert _resolved("acme") == [{"id": item["id"], "kind": "compact", "status": "rejected"}]
    assert redis_client.xlen(redis_keys.compactions("acme")) == 0  # nothing was compacted
    assert _stored(redis_client, "beta", other["id"])["status"] == "pending"


@pytest.mark.tmux
def test_approve_from_tenant_detail_compacts_the_kernel_after_yes(
    env: dict[str, str],
    redis_client: redis.Redis,
    tmux_server: libtmux.Server,
    tmp_path: Path,
) -> None:
    from nika_tui.engine.kernels.manager import KernelManager

    _tenant("acme", env, tmp_path)
    manager = KernelManager(Settings.from_env(env), child_env=env, redis_client=redis_client)
    manager.spawn("acme")
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "compact", "Compact acme's context?", "61% line", NOW
    )

    def idle() -> bool:
        state = manager.poll("acme")
        return state is not None and state.state is KernelState.IDLE

    async def scenario() -> None:
        async with _app(env, tmp_path).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await wait_for(pilot, idle, "an idle kernel", timeout=20)
            await pilot.press("enter")
            await screen_is(pilot, "TenantDetailScreen")
            await pilot.press("c")
            screen = await _listed(pilot, 1)
            await pilot.press("a")
            await screen_is(pilot, "ApproveAction")
            await pilot.press("n")  # no: nothing happens
            await screen_is(pilot, "ConfirmationsScreen")
            assert _stored(redis_client, "acme", item["id"])["status"] == "pending"
            await pilot.press("a")
            await screen_is(pilot, "ApproveAction")
            await pilot.press("y")
            await wait_for(pilot, lambda: not screen.items, "resolved", timeout=20)
            await wait_for(
                pilot, lambda: any("approved compact for acme" in n for n in notes(app)), "said"
            )

    run(scenario())
    assert _stored(redis_client, "acme", item["id"])["status"] == "approved"
    assert _resolved("acme") == [{"id": item["id"], "kind": "compact", "status": "approved"}]
    from tests.helpers import retry_until

    retry_until(lambda: "Conversation compacted" in manager.screen("acme"), what="compacted")
    assert redis_client.xlen(redis_keys.compactions("acme")) == 1


def test_purge_wants_the_tenant_id_and_service_down_is_shown(
    env: dict[str, str], redis_client: redis.Redis, tmp_path: Path
) -> None:
    _tenant("acme", env)
    item = confirmation_queue.queue_confirmation(
        redis_client, "acme", "purge.apply", "purge 3 retired memories", "escalate mode", NOW
    )

    async def scenario() -> None:
        async with _app(env, tmp_path).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("ctrl+p")  # the command palette's per-tenant entry
            await screen_is(pilot, "CommandPalette")
            await pilot.press(*"confirmations: acme")
            options = app.screen.query_one(OptionList)
            await wait_for(
                pilot,
                lambda: (
                    options.option_count
                    and "Confirmations: acme" in str(options.get_option_at_index(0).prompt)
                ),
                "the palette entry",
            )
            await pilot.press("enter")
            screen = await _listed(pilot, 1)
            await pilot.press("a")
            await screen_is(pilot, "ConfirmPurgeApproval")
            await pilot.press(*"beta", "enter")
            await wait_for(
                pilot, lambda: "is not 'acme'" in _text(app, "#confirm-error"), "refusal"
            )
            assert type(app.screen).__name__ == "ConfirmPurgeApproval"  # still open
            assert app.screen.query_one("#confirm-input", Input).value == ""
            assert _stored(redis_client, "acme", item["id"])["status"] == "pending"
            await pilot.press(*"acme", "enter")  # right id: sent, but no service runs
            await screen_is(pilot, "ConfirmationsScreen")
            await wait_for(
                pilot,
                lambda: "memory service is not running" in _text(app, "#confirmations-error"),
                "the service error in the screen",
            )
            assert app.screen is screen and len(screen.items) == 1  # still up, still pending

    run(scenario())
    assert _stored(redis_client, "acme", item["id"])["status"] == "pending"
    assert _resolved("acme") == []


def test_redis_down_is_shown_and_the_screen_recovers(
    isolated_env: dict[str, str], tmp_path: Path
) -> None:
    from nika_tui.paths import roots
    from nika_tui.services.redis_server import ensure_embedded, stop_embedded

    _tenant("acme", isolated_env)  # the data dir's embedded Redis: not started

    async def scenario() -> None:
        async with _app(isolated_env, tmp_path).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("c")
            await screen_is(pilot, "ConfirmationsScreen")
            await wait_for(
                pilot,
                lambda: "Redis is not reachable" in _text(app, "#confirmations-error"),
                "Redis down said",
            )
            await pilot.press("a")  # nothing listed: said, no crash
            await wait_for(pilot, lambda: "nothing waits for a decision" in notes(app), "said")
            client = redis.Redis.from_url(
                ensure_embedded(roots(isolated_env)), decode_responses=True
            )
            confirmation_queue.queue_confirmation(client, "acme", "rem.run", "run REM", "idle", NOW)
            await pilot.press("r")
            screen = await _listed(pilot, 1)
            assert _text(app, "#confirmations-error") == ""
            assert screen.items[0].view.kind == "rem.run"

    try:
        run(scenario())
    finally:
        stop_embedded(roots(isolated_env))


@pytest.mark.embedder
def test_approve_runs_debt_and_purge_actions_in_the_memory_service(
    running_service: Any,
    make_tenant: Callable[..., TenantConfig],
    env: dict[str, str],
    redis_client: redis.Redis,
    tmp_path: Path,
) -> None:
    make_tenant("acme")
    diagnose = confirmation_queue.queue_confirmation(
        redis_client, "acme", "debt.diagnose_spawn", "diagnose spawn", "pod_ttfl alert", NOW
    )
    purge = confirmation_queue.queue_confirmation(
        redis_client, "acme", "purge.apply", "purge 0 retired memories", "escalate", LATER
    )

    async def scenario() -> None:
        async with _app(env, tmp_path).run_test(size=SIZE) as pilot:
            await ready(pilot)
            await pilot.press("c")
            screen = await _listed(pilot, 2)
            await pilot.press("a")  # a report-only action: no question
            await wait_for(pilot, lambda: len(screen.items) == 1, "diagnosis applied", timeout=60)
            await pilot.press("a")
            await screen_is(pilot, "ConfirmPurgeApproval")
            await pilot.press(*"acme", "enter")
            await wait_for(pilot, lambda: not screen.items, "purge applied", timeout=60)
            assert _text(pilot.app, "#confirmations-error") == ""  # type: ignore[arg-type]

    run(scenario())
    assert redis_client.exists(redis_keys.spawn_diagnosis("acme"))  # the service ran it
    assert _stored(redis_client, "acme", diagnose["id"])["status"] == "approved"
    assert _stored(redis_client, "acme", purge["id"])["status"] == "approved"
    assert {(r["kind"], r["status"]) for r in _resolved("acme")} >= {("purge.apply", "approved")}


SNAPSHOT_ITEMS: tuple[tuple[str, dict[str, str]], ...] = (
    ("acme", {"id": "c-1", "kind": "compact", "title": "Compact acme's context (66% full)?",
              "detail": "The context crossed the 61% line. The kernel will receive /compact.",
              "created_at": "2026-12-02T09:59:00+00:00"}),
    ("acme", {"id": "c-2", "kind": "purge.apply",
              "title": "purge 12 retired memories from the live index",
              "detail": "review with `nika purge plan --tenant acme`; archived, restorable",
              "created_at": "2026-12-02T10:05:00+00:00"}),
    ("beta", {"id": "c-3", "kind": "debt.dedup",
              "title": "memory debt: merge near-duplicate memories",
              "detail": "metrics in alert: duplicate_rate",
              "created_at": "2026-12-02T08:30:00+00:00"}),
    ("beta", {"id": "c-4", "kind": "rem.run", "title": "run the REM consolidation pass",
              "detail": "the tenant's kernels are idle: merge duplicates, re-judge contradictions",
              "created_at": "2026-12-02T11:00:00+00:00"}),
)  # fmt: skip
"""Fixed ids and queue times: the snapshot does not depend on uuids or the wall clock."""


def test_confirmations_snapshot(
    snap_compare: Any, env: dict[str, str], redis_client: redis.Redis, tmp_path: Path
) -> None:
    for tenant in ("acme", "beta"):
        _tenant(tenant, env)
    for tenant, item in SNAPSHOT_ITEMS:
        payload = {**item, "tenant_id": tenant, "status": "pending"}
        redis_client.hset(redis_keys.confirmations(tenant), item["id"], json.dumps(payload))

    async def before(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await pilot.press("c", "t")  # acme's, then every tenant's
        await _listed(pilot, len(SNAPSHOT_ITEMS))
        await pilot.pause(0.2)

    assert snap_compare(_app(env, tmp_path), terminal_size=SIZE, run_before=before)


def _fixture_app(env: dict[str, str], tmp_path: Path, source: FixtureSource) -> NikaDashboard:
    return make_app(
        Settings.from_env(env),
        source=source,
        clock=lambda: source.now,
        show_welcome=False,
        settings_file=tmp_path / "ui.yaml",
    )


def test_confirmations_snapshot_from_the_fixture(
    snap_compare: Any, isolated_env: dict[str, str], tmp_path: Path
) -> None:
    # The sample data `nika dashboard --offline-ui` and docs/screenshots show: no Redis.
    async def before(pilot: Pilot[Any]) -> None:
        app = await ready(pilot)
        assert app.selected_tenant == "beta"  # needs-me first
        await pilot.press("c", "t")  # beta's, then every tenant's
        await _listed(pilot, 3)
        await pilot.pause(0.2)

    app = _fixture_app(isolated_env, tmp_path, FixtureSource.from_file())
    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_the_screen_resolves_through_the_apps_source(
    isolated_env: dict[str, str], tmp_path: Path
) -> None:
    source = FixtureSource.from_file()

    async def scenario() -> None:
        async with _fixture_app(isolated_env, tmp_path, source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("c")
            screen = await _listed(pilot, 3)
            await pilot.press("x")  # the oldest: the purge, rejected without a question
            await wait_for(pilot, lambda: len(screen.items) == 2, "the purge left the list")
            await pilot.press("a")  # the compact: a yes/no question first
            await screen_is(pilot, "ApproveAction")
            await pilot.press("y")
            await wait_for(pilot, lambda: len(screen.items) == 1, "the compact left the list")
            assert [i.view.kind for i in screen.items] == ["debt.dedup"]
            await wait_for(
                pilot, lambda: any("approved compact for beta" in n for n in notes(app)), "said"
            )

    run(scenario())
    assert source.actions == [
        ("confirmation", "beta", "c-2", "rejected"),
        ("confirmation", "beta", "c-1", "approved"),
    ]


def test_approving_imports_no_engine_in_the_dashboard_process() -> None:
    # Everything an approval runs in the dashboard: the screen, resolve and the kernel
    # manager (compact); the engine's work happens in the service process.
    code = (
        "import json, sys\n"
        "import nika_tui.ui.screens.confirmations, nika_tui.engine.kernels.confirmations\n"
        "import nika_tui.engine.kernels.manager, nika_tui.dashboard.redis_source\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} | set(sys.modules))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(out.stdout))
    assert "nika_tui.engine.kernels.confirmations" in loaded
    heavy = {"torch", "sentence_transformers", "qdrant_client", "qdrant_edge", "transformers"}
    assert not (loaded & heavy), loaded & heavy
    # The kernels package lives under engine/ (application logic, issue #12) but imports no
    # other part of the engine: no store, judge or embedder code runs in the dashboard.
    engine = {m for m in loaded if m.startswith("nika_tui.engine")}
    assert engine - {"nika_tui.engine"} and all(
        m == "nika_tui.engine" or m.startswith("nika_tui.engine.kernels") for m in engine
    ), engine
