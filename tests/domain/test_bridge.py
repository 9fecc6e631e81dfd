"""The bridge's pure parts: sender ids, links, the kernel line, the token bucket, retries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import pytest

from nika_tui.domain.bridge import (
    BridgeConfig,
    Gateway,
    InboundMessage,
    SenderInvalid,
    TokenBucket,
    bridge_meta,
    kernel_line,
    link,
    normalize_sender,
    retry_delay,
    unlink,
)
from nika_tui.domain.envelope import Trigger


class SenderCase(NamedTuple):
    test_id: str
    gateway: Gateway
    raw: str
    expected: str | None  # None: refused


SENDERS = [
    SenderCase("wa-e164", Gateway.WHATSAPP, "+33 6 12 34 56 78", "33612345678"),
    SenderCase("wa-wa-id", Gateway.WHATSAPP, "33612345678", "33612345678"),
    SenderCase("wa-dashes", Gateway.WHATSAPP, "+1 (555) 000-1111", "15550001111"),
    SenderCase("wa-letters", Gateway.WHATSAPP, "call-me", None),
    SenderCase("wa-shell", Gateway.WHATSAPP, "$(reboot)", None),
    SenderCase("wa-too-long", Gateway.WHATSAPP, "+1234567890123456", None),
    SenderCase("teams-id", Gateway.TEAMS, " 29:1AbC-xyz ", "29:1AbC-xyz"),
    SenderCase("teams-space", Gateway.TEAMS, "29:a b", None),
    SenderCase("gchat-user", Gateway.GCHAT, "users/1234567", "users/1234567"),
    SenderCase("gchat-empty", Gateway.GCHAT, "  ", None),
]


@pytest.mark.parametrize("case", SENDERS, ids=[c.test_id for c in SENDERS])
def test_normalize_sender(case: SenderCase) -> None:
    if case.expected is None:
        with pytest.raises(SenderInvalid):
            normalize_sender(case.gateway, case.raw)
    else:
        assert normalize_sender(case.gateway, case.raw) == case.expected


def test_link_routes_and_refuses_a_second_owner() -> None:
    config = link(BridgeConfig(), Gateway.WHATSAPP, "+33 6 12 34 56 78", "acme")
    assert config.tenant_of(Gateway.WHATSAPP, "33612345678") == "acme"
    assert config.tenant_of(Gateway.TEAMS, "33612345678") is None
    assert link(config, Gateway.WHATSAPP, "33612345678", "acme") is config
    with pytest.raises(ValueError, match="already linked to tenant acme"):
        link(config, Gateway.WHATSAPP, "33612345678", "globex")
    removed, changed = unlink(config, Gateway.WHATSAPP, "+33612345678")
    assert changed and removed.tenant_of(Gateway.WHATSAPP, "33612345678") is None
    assert unlink(removed, Gateway.WHATSAPP, "33612345678")[1] is False


def test_a_hand_edited_config_cannot_give_a_sender_two_tenants() -> None:
    raw = {"links": [
        {"gateway": "gchat", "sender": "users/1", "tenant_id": "acme"},
        {"gateway": "gchat", "sender": "users/1", "tenant_id": "globex"},
    ]}  # fmt: skip
    with pytest.raises(ValueError, match="linked to two tenants"):
        BridgeConfig.model_validate(raw)
    with pytest.raises(ValueError, match="canonical"):
        BridgeConfig.model_validate(
            {"links": [{"gateway": "whatsapp", "sender": "+33 612345678", "tenant_id": "acme"}]}
        )


class LineCase(NamedTuple):
    test_id: str
    text: str
    expected: str


LINES = [
    LineCase("plain", "hello", "hello"),
    LineCase("newlines", "first\nsecond\r\nthird", "first / second / third"),
    LineCase("escape", "red \x1b[31mtext\x1b[0m", "red [31mtext[0m"),
    LineCase("tab-and-bell", "a\tb\x07c", "abc"),
    LineCase("blank-lines", "\n\n x \n\n", "x"),
]


@pytest.mark.parametrize("case", LINES, ids=[c.test_id for c in LINES])
def test_kernel_line(case: LineCase) -> None:
    assert kernel_line(case.text) == case.expected


def test_kernel_line_cuts_long_messages() -> None:
    line = kernel_line("word " * 2000, limit=100)
    assert len(line) <= 100 and line.endswith("[…cut]")


def test_token_bucket_allows_a_burst_then_the_rate() -> None:
    bucket = TokenBucket(per_minute=6, burst=2)
    assert [bucket.take(0.0) for _ in range(3)] == [True, True, False]
    assert bucket.take(5.0) is False  # 0.5 token after 5 s at 6/min
    assert bucket.take(10.0) is True
    assert bucket.take(10.0) is False


def test_retry_delay_doubles_and_is_capped() -> None:
    assert [retry_delay(n, 1.0, 10.0) for n in (1, 2, 3, 4, 5)] == [1, 2, 4, 8, 10]


def test_bridge_meta_is_the_persons_message() -> None:
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    message = InboundMessage(Gateway.TEAMS, "act-1", "29:x", "a:conv", "hi")
    meta = bridge_meta(message, "acme", "codex", "nika-tenant-acme", now)
    assert meta.trigger is Trigger.USER and meta.agent_type == "codex@teams"
    assert meta.session_id == "teams:a:conv" and meta.tmux == "nika-tenant-acme"
    assert meta.timestamp == now
    assert InboundMessage.from_fields(message.to_fields()) == message
