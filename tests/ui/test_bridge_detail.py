"""The bridge on the tenant detail: read from Redis and bridge.yaml, shown only where it serves."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import UTC, datetime

import redis
from textual.widgets import Static

from nika_tui.bridge.records import record_error, record_message
from nika_tui.bridge.settings import save_config
from nika_tui.dashboard.fixture_source import DEMO_SNAPSHOT, FixtureSource
from nika_tui.dashboard.model import BridgeView, TenantDetail
from nika_tui.dashboard.redis_source import RedisDashboardSource
from nika_tui.domain.bridge import BridgeConfig, Gateway, InboundMessage, link
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services import bridge_keys as keys
from nika_tui.services.config_store import save_tenant
from nika_tui.settings import Settings
from nika_tui.ui.app import NikaDashboard
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_source_reads_links_last_messages_and_errors(
    isolated_env: dict[str, str], redis_url: str, redis_client: redis.Redis
) -> None:
    env = {**isolated_env, "REDIS_URL": redis_url}
    where = Settings.from_env(env).roots
    for tenant in ("acme", "globex"):
        save_tenant(TenantConfig(tenant_id=tenant, display_name=tenant), where)
    config = link(BridgeConfig(), Gateway.WHATSAPP, "+33612345678", "acme")
    save_config(link(config, Gateway.GCHAT, "users/9", "globex"), where)
    message = InboundMessage(Gateway.WHATSAPP, "wamid.1", "33612345678", "33612345678", "hello")
    record_message(
        redis_client,
        where,
        "acme",
        "in",
        message,
        "hello there",
        "delivered",
        NOW,
    )
    record_message(
        redis_client,
        where,
        "acme",
        "out",
        message,
        "echo: hello",
        "reply",
        NOW,
    )
    record_error(
        redis_client,
        where,
        "acme",
        "whatsapp",
        "reply not delivered: HTTP 503",
        NOW,
    )
    redis_client.set(keys.SERVER_HEARTBEAT, "1")
    redis_client.hset(keys.SERVER, "gateways", '["gchat", "whatsapp"]')

    source = RedisDashboardSource(Settings.from_env(env), rpc=lambda op, body, t: {})
    bridge = source.tenant_detail("acme", NOW).bridge
    assert bridge is not None and bridge.running
    assert bridge.gateways == ("gchat", "whatsapp")
    assert bridge.senders == ("whatsapp:33612345678",)  # globex's sender is not shown
    assert bridge.last == ("12:00:00 → whatsapp 33612345678: echo: hello",
                           "12:00:00 ← whatsapp 33612345678: hello there")  # fmt: skip
    assert bridge.errors == ("12:00:00 whatsapp: reply not delivered: HTTP 503",)
    save_tenant(TenantConfig(tenant_id="initech", display_name="Initech"), where)
    assert source.tenant_detail("initech", NOW).bridge is None


class BridgedFixture(FixtureSource):
    """The demo fixture with a bridge on every tenant."""

    view = BridgeView(running=True, gateways=("whatsapp",), senders=("whatsapp:33612345678",),
                      pending=1, last=("12:00:00 ← whatsapp 33612345678: hello",),
                      errors=("12:01:00 whatsapp: kernel down",))  # fmt: skip

    def tenant_detail(self, tenant_id: str, now: datetime) -> TenantDetail:
        return dataclasses.replace(super().tenant_detail(tenant_id, now), bridge=self.view)


def test_detail_screen_shows_the_bridge_section(build_app: Callable[..., NikaDashboard]) -> None:
    source = BridgedFixture.from_file(DEMO_SNAPSHOT)

    async def scenario() -> None:
        async with build_app(source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)
            await pilot.press("enter")
            await screen_is(pilot, "TenantDetailScreen")

            def shown() -> str:
                widget = app.screen.query_one("#bridge", Static)
                return str(widget.render()) if widget.display else ""

            await wait_for(pilot, lambda: "serving whatsapp" in shown(), "the bridge section")
            text = shown()
            assert "senders: whatsapp:33612345678" in text
            assert "1 waiting for the kernel" in text and "⚠ 12:01:00 whatsapp: kernel down" in text

    run(scenario())
