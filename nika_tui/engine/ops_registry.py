"""Modules that register RPC ops (``@op``): the service imports each at start.

Add a module here when it defines ops (e.g. the debt audit, the purge executor, the REM pass).
"""

from __future__ import annotations

import importlib

from nika_tui.engine.ops import OPS, OpHandler

OP_MODULES: list[str] = [
    "nika_tui.engine.ops",
    "nika_tui.engine.audit.history",
    "nika_tui.engine.debt.run",
    "nika_tui.engine.debt.actions",
    "nika_tui.engine.purge",
    "nika_tui.engine.rem.schedule",
    "nika_tui.engine.compress",
    "nika_tui.automemory.runner",
    "nika_tui.tuning.tuner",
    "nika_tui.engine.timeline",
    "nika_tui.engine.agent_ops",
    "nika_tui.engine.snapshot",
    "nika_tui.engine.reset",
]


def load_ops() -> dict[str, OpHandler]:
    """Import every op module and return the registry."""
    for name in OP_MODULES:
        importlib.import_module(name)
    return OPS
