"""The RPC table is built explicitly, one handler per protocol op, without import side effects."""

from __future__ import annotations

from nika_tui.domain.protocol import READ_ONLY_OPS, Op
from nika_tui.engine.server.rpc import build_rpc_table


def test_every_protocol_op_has_exactly_one_handler() -> None:
    table = build_rpc_table()
    assert set(table) == {op.value for op in Op}
    assert all(callable(handler) for handler in table.values())
    assert set(table) >= READ_ONLY_OPS


def test_each_build_is_a_fresh_table() -> None:
    """No module-level registry: changing one table (a test's extra op) leaves the next alone."""
    first = build_rpc_table()
    first["test.extra"] = first[Op.PING]
    assert "test.extra" not in build_rpc_table()
