"""The key cache against the stand-in's JWKS, and the router against the embedded Redis."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import httpx
import pytest
import redis

from nika_tui.bridge.delivery import Outbox
from nika_tui.bridge.jwt_verify import JwksCache, verify_bearer
from nika_tui.bridge.router import Outcome, Router
from nika_tui.domain.bridge import BridgeConfig, Gateway, InboundMessage, RateLimit, link
from nika_tui.errors import BridgeRefused
from nika_tui.services import bridge_keys as keys
from nika_tui.settings import Settings
from tests.bridge import standins
from tests.bridge.standins import SigningKey, Standin


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_unknown_key_ids_refetch_at_most_once_per_interval(standin: Standin) -> None:
    clock = Clock()

    async def scenario() -> None:
        async with httpx.AsyncClient() as client:
            cache = JwksCache(f"{standin.url}/gchat/jwks", client, clock=clock, min_refresh_s=30)
            token = standin.gchat_token()
            claims = await verify_bearer(f"Bearer {token}", cache, audience=standins.GCHAT_PROJECT,
                                         issuers=[standins.GCHAT_ISSUER])  # fmt: skip
            assert claims["iss"] == standins.GCHAT_ISSUER
            assert standin.key_fetches["gchat"] == 1
            for _ in range(5):  # a stream of bogus key ids
                with pytest.raises(BridgeRefused, match="unknown key id"):
                    await cache.key("bogus")
            assert standin.key_fetches["gchat"] == 1  # within 30 s: no refetch
            clock.now += 31
            standin.gchat_keys.append(SigningKey("chat-key-2"))
            rotated = standin.gchat_token()
            await verify_bearer(f"Bearer {rotated}", cache, audience=standins.GCHAT_PROJECT,
                                issuers=[standins.GCHAT_ISSUER])  # fmt: skip
            assert standin.key_fetches["gchat"] == 2
            clock.now += 3599  # still fresh one second before the hour…
            await cache.key("chat-key-2")
            assert standin.key_fetches["gchat"] == 2
            clock.now += 1  # …expired at the hour (no Cache-Control: the default TTL)
            await cache.key("chat-key-2")
            assert standin.key_fetches["gchat"] == 3

    asyncio.run(scenario())


def test_a_none_or_hmac_token_is_refused_before_any_key_lookup(standin: Standin) -> None:
    import jwt

    async def scenario() -> None:
        async with httpx.AsyncClient() as client:
            cache = JwksCache(f"{standin.url}/gchat/jwks", client)
            claims = {"iss": standins.GCHAT_ISSUER, "aud": standins.GCHAT_PROJECT,
                      "exp": int(time.time()) + 600}  # fmt: skip
            for token in (jwt.encode(claims, "k" * 32, algorithm="HS256"),
                          jwt.encode(claims, None, algorithm="none"), "not.a.jwt"):  # fmt: skip
                with pytest.raises(BridgeRefused) as refused:
                    await verify_bearer(f"Bearer {token}", cache, audience=standins.GCHAT_PROJECT,
                                        issuers=[standins.GCHAT_ISSUER])  # fmt: skip
                assert refused.value.status == 401
            assert standin.key_fetches["gchat"] == 0

    asyncio.run(scenario())


def _message(n: int, sender: str = "33612345678") -> InboundMessage:
    return InboundMessage(Gateway.WHATSAPP, f"wamid.{n}", sender, sender, f"message {n}",
                          reply_to={"phone_number_id": "1"})  # fmt: skip


def test_router_rate_limits_per_sender_and_keeps_the_refusal(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    config = link(BridgeConfig(rate_limit=RateLimit(per_minute=1, burst=2)),
                  Gateway.WHATSAPP, "33612345678", "acme")  # fmt: skip
    config = link(config, Gateway.WHATSAPP, "4915112345678", "globex")
    env = {"NIKA_OS_DATA_DIR": str(tmp_path / "data")}
    settings = Settings.from_env(env)
    outbox = Outbox(redis_client, {}, settings.roots)
    clock = Clock()
    router = Router(config, redis_client, settings, env, outbox, monotonic=clock)
    router.ensure_worker = lambda tenant_id: None  # type: ignore[method-assign]
    outcomes = [router.take(_message(n))[0] for n in range(4)]
    assert outcomes == [Outcome.QUEUED, Outcome.QUEUED, Outcome.RATE_LIMITED,
                        Outcome.RATE_LIMITED]  # fmt: skip
    clock.now += 61  # a minute later: one more token, and the next refusal is told again
    assert router.take(_message(4))[0] is Outcome.QUEUED
    assert router.take(_message(5))[0] is Outcome.RATE_LIMITED
    # Another sender has its own bucket; a replay of a refused id is not refused twice.
    assert router.take(_message(9, "4915112345678")) == (Outcome.QUEUED, "globex")
    assert router.take(_message(2))[0] is Outcome.DUPLICATE
    assert redis_client.xlen(keys.inbox("acme")) == 3
    notices = [json.loads(f["out"]) for _, f in redis_client.xrange(keys.OUTBOX)]
    # Three refusals, two notices: one a minute per sender.
    assert [(n["kind"], n["message"]["message_id"]) for n in notices] == [
        ("rate-limited", "wamid.2"), ("rate-limited", "wamid.5")]  # fmt: skip
    assert all("wait a minute" in n["text"] for n in notices)


def test_router_finds_teams_users_by_aad_id_and_chat_users_by_email(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    config = link(BridgeConfig(), Gateway.TEAMS, "0f3c-aad-object-id", "acme")
    config = link(config, Gateway.GCHAT, "ana@globex.example", "globex")
    settings = Settings.from_env({})
    router = Router(config, redis_client, settings, {}, Outbox(redis_client, {}, settings.roots))
    teams = InboundMessage(Gateway.TEAMS, "a1", "29:per-bot-id", "c", "hi",
                           reply_to={"aad_object_id": "0f3c-aad-object-id"})  # fmt: skip
    chat = InboundMessage(Gateway.GCHAT, "m1", "users/77", "spaces/S", "hi",
                          reply_to={"email": "ana@globex.example"})  # fmt: skip
    stranger = InboundMessage(Gateway.TEAMS, "a2", "29:other", "c", "hi",
                              reply_to={"aad_object_id": "ana@globex.example"})  # fmt: skip
    assert router.tenant_of(teams) == "acme"
    assert router.tenant_of(chat) == "globex"
    assert router.tenant_of(stranger) is None  # a Chat link never routes a Teams sender
