"""Escalate: a tuning's ``tune.adopt`` confirmation approved by a person through the real
``nika confirm approve`` process, against a running memory service on real Redis and Qdrant
Edge; the parameters it holds are then in force, recall ranks with them and the dashboard's
line says the tuning was approved."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
import redis

from nika_tui.domain.recall_params import RecallParams
from nika_tui.domain.requests import RecallQuery
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.recall import recall
from nika_tui.engine.server.loop import MemoryService
from nika_tui.services.confirmation_queue import pending_confirmation
from nika_tui.services.memory_client import MemoryClient
from nika_tui.services.recall_params import describe, read_params
from nika_tui.tuning.tuner import TUNE_CONFIRMATION, tune
from tests.engine.tuning_tenant import constructed_tenant, set_tune_mode
from tests.helpers import retry_until


@pytest.fixture
def service(debt_ctx: EngineContext, redis_url: str) -> Iterator[None]:
    """The memory service loop on the test's stores, in a thread (stopped afterwards)."""
    own = redis.Redis.from_url(redis_url, decode_responses=True)
    ctx = EngineContext(settings=debt_ctx.settings, redis=own,
                        child_env=debt_ctx.child_env, secrets_env=debt_ctx.secrets_env,
                        vectors=debt_ctx.vectors, embedder=debt_ctx.embedder,
                        clock=debt_ctx.clock)  # fmt: skip
    svc = MemoryService(ctx, embed_ahead=False)
    thread = threading.Thread(target=svc.run, name="memory-service", daemon=True)
    thread.start()
    client = MemoryClient(redis.Redis.from_url(redis_url, decode_responses=True), timeout=30.0)
    retry_until(client.service_alive, timeout=10, what="service heartbeat")
    yield
    svc.stop()
    thread.join(timeout=30)
    own.close()
    assert not thread.is_alive(), "the service thread did not stop"


def _nika(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", *args], capture_output=True, text=True, timeout=120
    )


def test_nika_confirm_approve_puts_the_tuned_parameters_in_force(
    debt_ctx: EngineContext, service: None
) -> None:
    # Answers at cosine 0.32, under the default floor (0.40): a lower floor is a real gain.
    labels = constructed_tenant(debt_ctx, relevant_cos=0.32)
    set_tune_mode(AutoMode.ESCALATE)
    out = tune(debt_ctx, "acme", trials=15, seed=1, judged=labels)
    assert out["action"] == "confirmation" and out["past_2x_noise"]
    item = pending_confirmation(debt_ctx.redis, "acme", TUNE_CONFIRMATION)
    assert item is not None
    held = RecallParams(**json.loads(item["detail"])["params"])
    assert held == RecallParams(**out["best"]) and held != RecallParams()
    assert read_params(debt_ctx.redis, "acme") == (RecallParams(), False)  # not yet
    assert recall(debt_ctx, RecallQuery(tenant_id="acme", query="question 0")).palace is not None

    listed = _nika("confirm", "list", "--tenant", "acme", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [i["kind"] for i in json.loads(listed.stdout)] == [TUNE_CONFIRMATION]
    approved = _nika("confirm", "approve", str(item["id"])[:12], "--tenant", "acme", "--json")
    assert approved.returncode == 0, approved.stderr
    reply = json.loads(approved.stdout)
    assert reply["status"] == "approved" and reply["kind"] == TUNE_CONFIRMATION

    params, adopted = read_params(debt_ctx.redis, "acme")
    assert adopted and params == held
    hits = recall(debt_ctx, RecallQuery(tenant_id="acme", query="question 0")).hits
    assert [h.record.text for h in hits] == ["fact number 0"]  # the lower floor in force
    assert pending_confirmation(debt_ctx.redis, "acme", TUNE_CONFIRMATION) is None
    # The dashboard's line tells the outcome as it now is: approved, no longer waiting.
    line = describe(debt_ctx.redis, "acme")
    assert line.startswith(f"tuned floor {held.palace_floor:.2f}")
    assert line.endswith(f"gain {out['gain']:+.3f} ± {out['noise_sd']:.3f} (approved)")
