"""Optimising a Qdrant Edge shard in a child process: pending count, offline mark, crash safety.

Real Qdrant Edge shards in the tmp dir and real child processes
(``python -m nika_tui.services.vectors.optimize_shard``). Shards that must really be indexed
hold 7,000 points: Qdrant leaves an appendable segment under its indexing threshold
(10,000 KB of vectors = 6,667 points at 384-d) unindexed, so a smaller shard is a no-op.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nika_tui.domain.memory import Layer
from nika_tui.errors import StoreUnavailable
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.services.vectors.optimizer import ShardOptimizer
from tests.helpers import retry_until
from tests.support.vector_fill import DIM, INDEXED_N, SEM, fill, fill_points


def _payloads(store: EdgeVectorStore, ids: list[str]) -> dict[str, dict[str, Any]]:
    return {p.id: p.payload for p in store.retrieve("acme", SEM, ids)}


def test_pending_index_counts_points_outside_hnsw(edge_store: EdgeVectorStore) -> None:
    assert edge_store.pending_index("acme", SEM) == 0  # no shard: nothing pending, none created
    assert not (edge_store.root / "acme").exists()
    fill(edge_store, "acme", 300)
    assert edge_store.pending_index("acme", SEM) == 300
    fill(edge_store, "acme", 20, seed=1)
    assert edge_store.pending_index("acme", SEM) == 320


def test_offline_shard_refuses_calls_with_a_clear_message_then_comes_back(
    edge_store: EdgeVectorStore,
) -> None:
    points = fill(edge_store, "acme", 200)
    fill(edge_store, "beta", 10, seed=1)
    ids = [p.id for p in points[:20]]
    before = _payloads(edge_store, ids)

    path = edge_store.take_offline("acme", SEM)

    assert path == edge_store.root / "acme" / "semantic"
    assert edge_store.is_offline("acme", SEM) and not edge_store.is_open("acme", SEM)
    calls = {
        "search": lambda: edge_store.search_dense("acme", SEM, points[0].vector),
        "hybrid": lambda: edge_store.search_hybrid("acme", SEM, points[0].vector, "host1"),
        "retrieve": lambda: edge_store.retrieve("acme", SEM, ids),
        "count": lambda: edge_store.count("acme", SEM),
        "scroll": lambda: list(edge_store.scroll("acme", SEM)),
        "pending": lambda: edge_store.pending_index("acme", SEM),
        "upsert": lambda: edge_store.upsert("acme", SEM, fill_points(1)),
        "delete": lambda: edge_store.delete("acme", SEM, ids[:1]),
    }
    for name, call in calls.items():
        with pytest.raises(StoreUnavailable) as err:
            call()
        assert err.value.message == "the semantic memory of tenant acme is being optimised", name
        assert err.value.hint == "retry in a few seconds", name
    # Other shards are untouched: another tenant, and the same tenant's other layer.
    assert edge_store.count("beta", SEM) == 10
    assert edge_store.count("acme", Layer.EPISODIC) == 0

    edge_store.bring_online("acme", SEM)

    assert not edge_store.is_offline("acme", SEM)
    assert edge_store.count("acme", SEM) == 200  # reopened lazily, nothing lost
    assert _payloads(edge_store, ids) == before
    edge_store.upsert("acme", SEM, fill_points(1))
    assert edge_store.count("acme", SEM) == 201


def test_take_offline_of_a_missing_shard_marks_nothing(edge_store: EdgeVectorStore) -> None:
    assert edge_store.take_offline("ghost", SEM) is None
    assert not edge_store.is_offline("ghost", SEM)
    assert edge_store.optimize_offline("ghost", SEM) is False
    assert edge_store.search_dense("ghost", SEM, [1.0] + [0.0] * (DIM - 1)) == []


@pytest.mark.slow
def test_optimize_offline_indexes_everything_and_changes_no_data(
    edge_store: EdgeVectorStore,
) -> None:
    points = fill(edge_store, "acme", INDEXED_N)
    probe = points[1234]
    ids = [p.id for p in points[::400]]
    before = _payloads(edge_store, ids)
    top_before = edge_store.search_dense("acme", SEM, probe.vector, limit=5)
    assert top_before[0].id == probe.id
    assert edge_store.pending_index("acme", SEM) == INDEXED_N

    assert edge_store.optimize_offline("acme", SEM) is True

    assert not edge_store.is_offline("acme", SEM)
    assert edge_store.pending_index("acme", SEM) == 0
    assert edge_store.count("acme", SEM) == INDEXED_N
    assert _payloads(edge_store, ids) == before
    top_after = edge_store.search_dense("acme", SEM, probe.vector, limit=5)
    assert top_after[0].id == probe.id
    assert top_after[0].score == pytest.approx(1.0, abs=1e-3)
    # Already optimal: the child finds nothing to do.
    assert edge_store.optimize_offline("acme", SEM) is False


def test_a_failing_child_raises_with_its_stderr_and_leaves_the_shard_online(
    edge_store: EdgeVectorStore,
) -> None:
    fill(edge_store, "acme", 50)
    edge_store.close()
    wrong = EdgeVectorStore(edge_store.root, 12)  # the child opens the shard with this dimension

    with pytest.raises(StoreUnavailable) as err:
        wrong.optimize_offline("acme", SEM)

    assert "optimising acme/semantic failed (exit 1)" in err.value.message
    assert "vector size 12" in err.value.message  # the child's own error, from its stderr
    assert not wrong.is_offline("acme", SEM)
    assert edge_store.count("acme", SEM) == 50


def test_a_timed_out_child_is_killed_and_the_shard_comes_back_online(
    edge_store: EdgeVectorStore,
) -> None:
    fill(edge_store, "acme", 50)

    with pytest.raises(StoreUnavailable) as err:
        edge_store.optimize_offline("acme", SEM, timeout_s=0.01)

    assert "took more than 0.01s and was stopped" in err.value.message
    assert not edge_store.is_offline("acme", SEM)
    assert edge_store.count("acme", SEM) == 50


@pytest.mark.slow
def test_a_child_killed_mid_optimize_leaves_the_shard_loadable_with_every_point(
    edge_store: EdgeVectorStore,
) -> None:
    points = fill(edge_store, "acme", INDEXED_N)
    path = edge_store.take_offline("acme", SEM)
    assert path is not None
    child = ShardOptimizer.start(edge_store.root, "acme", SEM, DIM)
    temp = path / "temp_segments"
    # Qdrant builds the merged segment under temp_segments/: once it appears, the child is
    # in the middle of optimize().
    retry_until(lambda: temp.is_dir() and any(temp.iterdir()), 60, what="a segment being built")

    os.kill(child.pid, signal.SIGKILL)
    with pytest.raises(StoreUnavailable) as err:
        child.wait(30)
    assert f"(exit {-signal.SIGKILL})" in err.value.message
    edge_store.bring_online("acme", SEM)

    assert edge_store.count("acme", SEM) == INDEXED_N
    assert edge_store.pending_index("acme", SEM) == INDEXED_N  # nothing half-swapped in
    assert edge_store.search_dense("acme", SEM, points[7].vector, limit=1)[0].id == points[7].id
    assert any(temp.iterdir())  # the killed run's half-built segment is still there

    # The next run succeeds and removes the killed run's leftovers.
    assert edge_store.optimize_offline("acme", SEM) is True
    assert edge_store.pending_index("acme", SEM) == 0
    assert edge_store.count("acme", SEM) == INDEXED_N
    assert list(temp.iterdir()) == []


def test_the_child_entry_point_reports_errors_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nika_tui.services.vectors.optimize_shard import main

    assert main([str(tmp_path), "acme", "semantic", "384"]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.splitlines() == [
        f"error: no shard at {tmp_path / 'acme' / 'semantic'} — nothing to optimise"
    ]
    assert main(["too", "few"]) == 1
    assert capsys.readouterr().err.startswith("error: usage: python -m ")
