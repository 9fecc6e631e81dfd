"""One contract for every VectorStore adapter: Qdrant Edge (tmp dir) and qdrant-client (:memory:).

Vectors are small synthetic ones (8-d) where the embedder is not the point: the contract is
about storage, filtering, ranking and isolation.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.memory import Layer, MemoryRecord, content_hash
from nika_tui.domain.ports import PointFilter, VectorPoint, VectorStore
from nika_tui.errors import PointNotFound, StoreUnavailable, ValidationFailed

DIM = 8
SEM = Layer.SEMANTIC

# qdrant-client's local mode ignores payload indexes and says so; the server honours them.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


def unit(*head: float) -> list[float]:
    """An 8-d unit vector whose first components are ``head``."""
    raw = [*head, *([0.0] * (DIM - len(head)))]
    norm = math.sqrt(sum(v * v for v in raw))
    return [v / norm for v in raw]


def point(
    tenant: str,
    vector: Sequence[float],
    text: str = "a fact",
    *,
    project: str = "p1",
    status: str = "current",
    pid: str | None = None,
    **extra: Any,
) -> VectorPoint:
    """A point with the memory payload's filter keys at the top level."""
    pid = pid or str(uuid.uuid4())
    payload = {
        "id": pid,
        "tenant_id": tenant,
        "layer": "semantic",
        "text": text,
        "status": status,
        "project_id": project,
        "job_id": "",
        "task_id": "",
        "domain": "infra",
        "action_type": "deploy",
        "content_hash": content_hash(tenant, SEM, text, project),
        "valid_from_ts": 1_700_000_000.0,
        **extra,
    }
    return VectorPoint(id=pid, vector=vector, text=text, payload=payload)


@pytest.fixture(params=["edge", "client"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    """Each adapter, empty, 8-d."""
    if request.param == "edge":
        from nika_tui.services.vectors.edge import EdgeVectorStore

        adapter: VectorStore = EdgeVectorStore(tmp_path / "qdrant", DIM)
    else:
        from qdrant_client import QdrantClient

        from nika_tui.services.vectors.client import ClientVectorStore

        adapter = ClientVectorStore(QdrantClient(":memory:"), DIM)
    assert isinstance(adapter, VectorStore)
    yield adapter
    adapter.close()


def test_upsert_then_retrieve_returns_payload_and_normalised_vector(store: VectorStore) -> None:
    a = point("acme", [3.0, 4.0, 0, 0, 0, 0, 0, 0], "staging is host-42")
    store.upsert("acme", SEM, [a])
    missing = str(uuid.uuid4())
    [hit] = store.retrieve("acme", SEM, [missing, a.id], with_vectors=True)
    assert hit.id == a.id
    assert hit.payload["text"] == "staging is host-42"
    assert hit.payload["tenant_id"] == "acme"
    assert hit.payload["valid_from_ts"] == 1_700_000_000.0
    assert hit.vector is not None
    assert list(hit.vector)[:2] == pytest.approx([0.6, 0.8], abs=1e-6)


def _staging_record() -> MemoryRecord:
    """A full memory record of tenant acme (project infra, job j-7)."""
    now = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    text = "the staging server moved to host-42"
    return MemoryRecord(
        id=str(uuid.uuid4()),
        tenant_id="acme",
        text=text,
        meta=NikaMeta(timestamp=now, project_id="infra", job_id="j-7"),
        valid_from=now,
        asserted_at=now,
        content_hash=content_hash("acme", SEM, text, "infra"),
    )


def test_memory_record_payload_round_trips(store: VectorStore) -> None:
    record = _staging_record()
    text = record.text
    store.upsert("acme", SEM, [VectorPoint(record.id, unit(1), text, record.to_payload())])
    [hit] = store.retrieve("acme", SEM, [record.id])
    assert MemoryRecord.from_payload(dict(hit.payload)) == record
    assert store.count("acme", SEM, PointFilter(equals={"job_id": "j-7"})) == 1


def test_upsert_same_id_replaces(store: VectorStore) -> None:
    a = point("acme", unit(1), "deploys happen on friday")
    store.upsert("acme", SEM, [a])
    store.upsert("acme", SEM, [point("acme", unit(0, 1), "deploys happen on monday", pid=a.id)])
    assert store.count("acme", SEM) == 1
    [hit] = store.retrieve("acme", SEM, [a.id])
    assert hit.payload["text"] == "deploys happen on monday"


def test_set_payload_merges_and_refuses_unknown_ids(store: VectorStore) -> None:
    a = point("acme", unit(1))
    store.upsert("acme", SEM, [a])
    store.set_payload("acme", SEM, a.id, {"status": "retired", "superseded_by": "x"})
    [hit] = store.retrieve("acme", SEM, [a.id])
    assert hit.payload["status"] == "retired"
    assert hit.payload["superseded_by"] == "x"
    assert hit.payload["text"] == "a fact"
    assert store.count("acme", SEM, PointFilter(equals={"status": "current"})) == 0
    with pytest.raises(PointNotFound):
        store.set_payload("acme", SEM, str(uuid.uuid4()), {"status": "retired"})
    with pytest.raises(ValidationFailed, match="tenant_id"):
        store.set_payload("acme", SEM, a.id, {"tenant_id": "other"})


def test_delete_removes_only_the_given_ids(store: VectorStore) -> None:
    a, b = point("acme", unit(1)), point("acme", unit(0, 1))
    store.upsert("acme", SEM, [a, b])
    store.delete("acme", SEM, [a.id])
    assert [p.id for p in store.scroll("acme", SEM)] == [b.id]
    assert store.retrieve("acme", SEM, [a.id]) == []


def test_scroll_and_count_cover_every_matching_point(store: VectorStore) -> None:
    points = [point("acme", unit(1, i), project="p1" if i < 7 else "p2") for i in range(10)]
    store.upsert("acme", SEM, points)
    assert store.count("acme", SEM) == 10
    scrolled = list(store.scroll("acme", SEM, PointFilter(equals={"project_id": "p1"}), batch=3))
    assert sorted(p.id for p in scrolled) == sorted(p.id for p in points[:7])
    assert store.count("acme", SEM, PointFilter(equals={"project_id": "p2"})) == 3


def test_dense_search_scores_are_cosine(store: VectorStore) -> None:
    same, near, orth = unit(1), unit(1, 1), unit(0, 0, 1)
    pts = [point("acme", v, f"fact {i}") for i, v in enumerate((orth, near, same))]
    store.upsert("acme", SEM, pts)
    hits = store.search_dense("acme", SEM, unit(1), limit=3, with_vectors=True)
    assert [h.id for h in hits] == [pts[2].id, pts[1].id, pts[0].id]
    assert [h.score for h in hits] == pytest.approx([1.0, math.sqrt(0.5), 0.0], abs=1e-5)
    assert hits[0].vector is not None
    assert store.search_dense("acme", SEM, unit(1), limit=1)[0].vector is None


def test_hybrid_ranks_an_exact_rare_token_first(store: VectorStore) -> None:
    # The target's dense vector is the farthest from the query; only BM25 can lift it.
    others = [
        point("acme", unit(1, 0.1 * i), f"deploy notes number {i} for the web app")
        for i in range(5)
    ]
    target = point("acme", unit(1, 0.9), "ticket XK-9931 blocks the release")
    store.upsert("acme", SEM, [*others, target])
    dense = store.search_dense("acme", SEM, unit(1), limit=6)
    assert dense[-1].id == target.id
    hybrid = store.search_hybrid("acme", SEM, unit(1), "XK-9931", limit=6)
    assert hybrid[0].id == target.id
    assert {h.id for h in hybrid} == {p.id for p in [*others, target]}
    # A query of stop words only has no BM25 side: ranking falls back to the dense order.
    fallback = store.search_hybrid("acme", SEM, unit(1), "the of and", limit=6)
    assert [h.id for h in fallback] == [h.id for h in dense]


def test_filters_equals_and_any_of(store: VectorStore) -> None:
    a = point("acme", unit(1), project="p1", status="current")
    b = point("acme", unit(1, 0.1), project="p2", status="current")
    c = point("acme", unit(1, 0.2), project="p1", status="retired")
    store.upsert("acme", SEM, [a, b, c])
    only_p1 = PointFilter(equals={"project_id": "p1"})
    assert {h.id for h in store.search_dense("acme", SEM, unit(1), only_p1)} == {a.id, c.id}
    current_p1 = PointFilter(equals={"project_id": "p1", "status": "current"})
    assert [h.id for h in store.search_hybrid("acme", SEM, unit(1), "fact", current_p1)] == [a.id]
    any_status = PointFilter(any_of={"status": ["current", "retired"], "project_id": ["p2"]})
    assert [h.id for h in store.search_dense("acme", SEM, unit(1), any_status)] == [b.id]
    nothing = PointFilter(any_of={"project_id": []})
    assert store.search_dense("acme", SEM, unit(1), nothing) == []
    assert store.count("acme", SEM, nothing) == 0


def test_filter_excludes_the_given_ids(store: VectorStore) -> None:
    a = point("acme", unit(1), project="p1")
    b = point("acme", unit(1, 0.1), project="p1")
    c = point("acme", unit(1, 0.2), project="p2")
    store.upsert("acme", SEM, [a, b, c])
    not_a = PointFilter(equals={"project_id": "p1"}, exclude_ids=(a.id,))
    assert [h.id for h in store.search_dense("acme", SEM, unit(1), not_a)] == [b.id]
    assert [h.id for h in store.search_hybrid("acme", SEM, unit(1), "fact", not_a)] == [b.id]
    assert store.count("acme", SEM, not_a) == 1
    assert [p.id for p in store.scroll("acme", SEM, not_a)] == [b.id]
    only_ids = PointFilter(exclude_ids=(a.id, b.id))
    assert [h.id for h in store.search_dense("acme", SEM, unit(1), only_ids)] == [c.id]


def test_tenant_b_never_sees_tenant_a(store: VectorStore) -> None:
    secret = point("acme", unit(1), "acme secret XK-9931 on host-42")
    store.upsert("acme", SEM, [secret])
    store.upsert("globex", SEM, [point("globex", unit(0, 1), "globex fact")])
    assert all(h.id != secret.id for h in store.search_dense("globex", SEM, unit(1), limit=50))
    hybrid = store.search_hybrid("globex", SEM, unit(1), "XK-9931 host-42", limit=50)
    assert all(h.id != secret.id for h in hybrid)
    assert store.retrieve("globex", SEM, [secret.id]) == []
    assert all(p.id != secret.id for p in store.scroll("globex", SEM))
    assert store.count("globex", SEM) == 1
    with pytest.raises(PointNotFound):
        store.set_payload("globex", SEM, secret.id, {"status": "retired"})
    store.delete("globex", SEM, [secret.id])
    assert store.retrieve("acme", SEM, [secret.id])[0].payload["status"] == "current"


def test_layers_are_separate(store: VectorStore) -> None:
    store.upsert("acme", Layer.EPISODIC, [point("acme", unit(1), layer="episodic")])
    assert store.count("acme", Layer.EPISODIC) == 1
    assert store.count("acme", SEM) == 0


def test_a_point_naming_another_tenant_is_refused(store: VectorStore) -> None:
    with pytest.raises(ValidationFailed, match="tenant_id"):
        store.upsert("globex", SEM, [point("acme", unit(1))])
    assert store.count("globex", SEM) == 0


@pytest.mark.parametrize(
    ("tenant", "vector", "pid", "message"),
    [
        pytest.param("acme", [1.0, 0.0], None, "dimensions", id="wrong-dimension"),
        pytest.param("acme", [0.0] * DIM, None, "zero", id="zero-vector"),
        pytest.param("acme", [math.nan] * DIM, None, "finite", id="nan-vector"),
        pytest.param("../etc", unit(1), None, "tenant id", id="bad-tenant"),
        pytest.param("acme", unit(1), "point-7", "point id", id="bad-id"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error(
    store: VectorStore, tenant: str, vector: list[float], pid: str | None, message: str
) -> None:
    bad = VectorPoint(id=pid or str(uuid.uuid4()), vector=vector, text="x", payload={})
    with pytest.raises(ValidationFailed, match=message) as info:
        store.upsert(tenant, SEM, [bad])
    assert info.value.hint


def test_reads_of_an_unknown_tenant_are_empty(store: VectorStore) -> None:
    assert store.search_dense("nobody", SEM, unit(1)) == []
    assert store.search_hybrid("nobody", SEM, unit(1), "x") == []
    assert store.count("nobody", SEM) == 0
    assert list(store.scroll("nobody", SEM)) == []
    assert store.retrieve("nobody", SEM, [str(uuid.uuid4())]) == []


# --- Qdrant Edge only: files, reopen, single writer, durability ---------------------------------


def test_edge_layout_is_one_private_shard_per_tenant_and_layer(tmp_path: Path) -> None:
    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "qdrant", DIM)
    store.upsert("acme", SEM, [point("acme", unit(1))])
    store.upsert("globex", Layer.EPISODIC, [point("globex", unit(1), layer="episodic")])
    store.search_dense("initech", SEM, unit(1))  # a read creates nothing
    assert (tmp_path / "qdrant/acme/semantic/edge_config.json").is_file()
    assert (tmp_path / "qdrant/globex/episodic/edge_config.json").is_file()
    assert not (tmp_path / "qdrant/initech").exists()
    assert (tmp_path / "qdrant/acme").stat().st_mode & 0o777 == 0o700
    assert store.tenants() == ["acme", "globex"]
    store.close()


def test_edge_reopen_after_close_keeps_data(tmp_path: Path) -> None:
    from nika_tui.services.vectors.edge import EdgeVectorStore

    a = point("acme", unit(1), "ticket XK-9931 blocks the release")
    first = EdgeVectorStore(tmp_path / "qdrant", DIM)
    first.upsert("acme", SEM, [a])
    first.close()
    again = EdgeVectorStore(tmp_path / "qdrant", DIM)
    assert [h.id for h in again.search_hybrid("acme", SEM, unit(1), "XK-9931")] == [a.id]
    assert again.count("acme", SEM, PointFilter(equals={"project_id": "p1"})) == 1
    again.close()
    # The same instance reopens lazily after close.
    assert again.count("acme", SEM) == 1
    again.close()


def test_edge_stores_the_envelope_as_one_string_and_reads_both_forms(tmp_path: Path) -> None:
    """NIKA_META goes to Edge as one JSON string (per-value conversion is the write's main
    cost); reads give the dict back, also for points written as a nested dict before."""
    import qdrant_edge

    from nika_tui.services.vectors.common import DENSE
    from nika_tui.services.vectors.edge import EdgeVectorStore

    record = _staging_record()
    text = record.text
    store = EdgeVectorStore(tmp_path / "qdrant", DIM)
    store.upsert("acme", SEM, [VectorPoint(record.id, unit(1), text, record.to_payload())])
    shard = store._shard("acme", SEM, create=False)
    [raw] = shard.retrieve([uuid.UUID(record.id)], with_payload=True, with_vector=False)
    assert isinstance(raw.payload["meta"], str)
    # A point written by an earlier version: the envelope as a nested object.
    old_id = str(uuid.uuid4())
    old_payload = {**record.to_payload(), "id": old_id}
    shard.update(
        qdrant_edge.UpdateOperation.upsert_points(
            [qdrant_edge.Point(old_id, {DENSE: unit(2)}, old_payload)]
        )
    )
    by_id = {h.id: h for h in store.retrieve("acme", SEM, [record.id, old_id])}
    assert MemoryRecord.from_payload(dict(by_id[record.id].payload)) == record
    assert by_id[old_id].payload["meta"] == record.to_payload()["meta"]
    store.set_payload("acme", SEM, old_id, {"meta": {**old_payload["meta"], "job_id": "j-8"}})
    [patched] = store.retrieve("acme", SEM, [old_id])
    assert patched.payload["meta"]["job_id"] == "j-8"
    store.close()


def test_edge_keeps_payloads_of_optimised_segments_in_memory(tmp_path: Path) -> None:
    """Optimised segments hold their payloads populated (recall returns every hit's payload;
    Edge's "cold" default read them from disk on first touch after each restart)."""
    import json

    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "qdrant", DIM)
    store.upsert("acme", SEM, [point("acme", unit(1.0, float(i))) for i in range(40)])
    store.optimize("acme", SEM)
    store.close()
    config = json.loads((tmp_path / "qdrant/acme/semantic/edge_config.json").read_text())
    assert config["payload_memory"] == "cached"
    kinds = {
        json.loads(seg.read_text())["config"]["payload_storage_type"]["type"]
        for seg in (tmp_path / "qdrant/acme/semantic/segments").glob("*/segment.json")
    }
    assert kinds == {"in_ram_mmap"}


def test_edge_indexes_no_key_that_is_constant_in_a_shard(tmp_path: Path) -> None:
    """A shard is one tenant's layer: tenant_id and layer indexes cost on every write and flush
    and narrow nothing. A shard written by an earlier version loses them on open."""
    from qdrant_edge import PayloadSchemaType, UpdateOperation

    from nika_tui.services.vectors import INDEXED_KEYS
    from nika_tui.services.vectors.edge import EdgeVectorStore
    from nika_tui.services.vectors.edge_codec import EDGE_INDEXED_KEYS

    store = EdgeVectorStore(tmp_path / "qdrant", DIM)
    store.upsert("acme", SEM, [point("acme", unit(1))])
    shard = store._shard("acme", SEM, create=False)
    assert set(shard.info().payload_schema) == set(EDGE_INDEXED_KEYS)
    assert set(INDEXED_KEYS) - set(EDGE_INDEXED_KEYS) == {"tenant_id", "layer"}
    for field in ("tenant_id", "layer"):  # as an earlier version left it
        shard.update(UpdateOperation.create_field_index(field, PayloadSchemaType.Keyword))
    store.close()
    again = EdgeVectorStore(tmp_path / "qdrant", DIM)
    assert set(again._shard("acme", SEM, create=False).info().payload_schema) == set(
        EDGE_INDEXED_KEYS
    )
    assert again.count("acme", SEM, PointFilter(equals={"project_id": "p1"})) == 1
    again.close()


def test_edge_second_opener_gets_a_clear_error(tmp_path: Path) -> None:
    from nika_tui.services.vectors.edge import EdgeVectorStore

    owner = EdgeVectorStore(tmp_path / "qdrant", DIM)
    owner.upsert("acme", SEM, [point("acme", unit(1))])
    intruder = EdgeVectorStore(tmp_path / "qdrant", DIM)
    with pytest.raises(StoreUnavailable) as info:
        intruder.count("acme", SEM)
    assert "another process" in info.value.hint
    owner.close()


def test_edge_refuses_a_store_built_with_another_dimension(tmp_path: Path) -> None:
    from nika_tui.services.vectors.edge import EdgeVectorStore

    first = EdgeVectorStore(tmp_path / "qdrant", DIM)
    first.upsert("acme", SEM, [point("acme", unit(1))])
    first.close()
    with pytest.raises(StoreUnavailable):
        EdgeVectorStore(tmp_path / "qdrant", DIM * 2).count("acme", SEM)


_KILLED_WRITER = """
import os, signal, sys, uuid
from pathlib import Path
from nika_tui.domain.memory import Layer
from nika_tui.domain.ports import VectorPoint
from nika_tui.services.vectors.edge import EdgeVectorStore
store = EdgeVectorStore(Path(sys.argv[1]), 8)
for i in range(20):
    vec = [1.0, i / 20, 0, 0, 0, 0, 0, 0]
    store.upsert("acme", Layer.SEMANTIC, [VectorPoint(str(uuid.uuid4()), vec, f"fact {i}", {})])
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_edge_writes_survive_kill_9_once_upsert_returned(tmp_path: Path) -> None:
    import subprocess
    import sys

    from nika_tui.services.vectors.edge import EdgeVectorStore

    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(tmp_path / "qdrant")], check=False, timeout=120
    )
    assert proc.returncode == -9
    store = EdgeVectorStore(tmp_path / "qdrant", DIM)
    assert store.count("acme", SEM) == 20
    store.close()


def test_edge_optimize_keeps_points_and_ranking(tmp_path: Path) -> None:
    from nika_tui.services.vectors.edge import EdgeVectorStore

    store = EdgeVectorStore(tmp_path / "qdrant", DIM)
    pts = [point("acme", unit(1, 0.05 * i), f"fact {i}") for i in range(40)]
    store.upsert("acme", SEM, pts)
    store.delete("acme", SEM, [p.id for p in pts[:10]])
    before = [h.id for h in store.search_dense("acme", SEM, unit(1), limit=5)]
    store.optimize("acme", SEM)
    assert store.count("acme", SEM) == 30
    assert [h.id for h in store.search_dense("acme", SEM, unit(1), limit=5)] == before
    assert store.optimize("nobody", SEM) is False
    store.close()
