"""An RPC of a tenant made on the primary just now, read by a joined worker before the primary
published its config, waits for the config instead of answering "unknown tenant" (decision
511), as its ingest entries do (decision 457); a tenant that never comes is still refused."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis

from nika_tui.domain.tenant import TenantConfig
from nika_tui.engine.context import EngineContext
from nika_tui.engine.server.loop import MemoryService
from nika_tui.engine.tenant_configs import DELETED, publish
from nika_tui.engine.worker import Worker
from nika_tui.engine.worker_keys import alive_key
from nika_tui.errors import TenantNotFound
from nika_tui.paths import roots
from nika_tui.services import redis_keys
from nika_tui.services.embeddings import SentenceTransformerEmbedder
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.settings import Settings
from tests.helpers import retry_until

JOINED = "wb"


def _delivered(r: redis.Redis, times: int) -> bool:
    """The one pending RPC entry was read, kept pending and read again at least ``times``."""
    rows: Any = r.xpending_range(redis_keys.RPC_STREAM, redis_keys.RPC_GROUP, "-", "+", 10)
    return len(rows) == 1 and int(rows[0]["times_delivered"]) >= times


def _rpc(r: redis.Redis, tenant: str, entry_id: str = "*", deadline_s: float = 60) -> str:
    """A ``stats`` RPC of ``tenant`` written as the client writes it; its request id."""
    request_id = uuid.uuid4().hex
    fields = {"id": request_id, "op": "stats", "body": json.dumps({"tenant_id": tenant}),
              "deadline": f"{time.time() + deadline_s:.3f}"}  # fmt: skip
    r.xadd(redis_keys.RPC_STREAM, fields, id=entry_id)  # type: ignore[arg-type]
    return request_id


def _answer(r: redis.Redis, request_id: str) -> dict[str, Any]:
    key = redis_keys.rpc_reply(request_id)
    [reply] = retry_until(lambda: r.lrange(key, 0, -1), timeout=30, interval=0.05,
                          what="the RPC's answer")  # fmt: skip
    answer: dict[str, Any] = json.loads(reply)
    return answer


@pytest.mark.embedder
@pytest.mark.parametrize("readers", [0, 2], ids=["loop-only", "with-readers"])
def test_a_new_tenants_rpc_waits_for_its_config_on_a_joined_worker(
    readers: int,
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
    embedder: SentenceTransformerEmbedder,
    tmp_path: Path,
) -> None:
    env = dict(os.environ, NIKA_OS_CONFIG_DIR=str(tmp_path / "cfg-b"),
               NIKA_OS_DATA_DIR=str(tmp_path / "data-b"))  # fmt: skip
    own = redis.Redis.from_url(str(os.environ["REDIS_URL"]), decode_responses=True)
    store = EdgeVectorStore(tmp_path / "qdrant-b", 384, flush_writes=False)
    ctx = EngineContext(settings=Settings.from_env(env), redis=own, vectors=store,
                        child_env=env, secrets_env=env,
                        embedder=embedder)  # fmt: skip
    worker = Worker(own, JOINED, tmp_path / "data-b", store, ttl_s=30)
    service = MemoryService(ctx, embed_ahead=False, worker=worker, readers=readers)
    thread = threading.Thread(target=service.run, daemon=True)
    thread.start()
    try:
        retry_until(lambda: redis_client.exists(alive_key(JOINED)), timeout=60,
                    what="the joined worker is live")  # fmt: skip
        # An RPC a minute old, of a tenant no primary ever published: refused as before.
        seconds, _ = redis_client.time()
        ghost = _rpc(redis_client, "ghost", f"{(int(seconds) - 60) * 1000}-0")
        answer = _answer(redis_client, ghost)
        assert answer["ok"] is False and answer["kind"] == TenantNotFound.__name__, answer

        # A tenant deleted on the primary: not on its way, refused at once, young as it is.
        redis_client.sadd(DELETED, "gone")
        # (Kept waiting instead, it would pass its 15 s deadline unanswered: no reply at all.)
        answer = _answer(redis_client, _rpc(redis_client, "gone", deadline_s=15))
        assert answer["ok"] is False and answer["kind"] == TenantNotFound.__name__, answer

        # A tenant made on the primary's host just now, its config not published yet.
        make_tenant("newco")
        newco = _rpc(redis_client, "newco")
        retry_until(lambda: _delivered(redis_client, 2), timeout=30, interval=0.05,
                    what="the worker kept newco's RPC pending and retried it")  # fmt: skip
        assert redis_client.llen(redis_keys.rpc_reply(newco)) == 0, "answered before its config"
        assert publish(redis_client, roots()) == ["newco"]  # the primary's next sync
        answer = _answer(redis_client, newco)
        assert answer["ok"] is True, answer
        assert answer["result"]["tenants"]["newco"]["semantic"] == {"current": 0, "retired": 0}
    finally:
        service.stop()
        thread.join(timeout=60)
        store.close()
        own.close()
