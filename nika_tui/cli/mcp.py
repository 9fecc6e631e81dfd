"""``nika mcp``: the MCP memory server on stdio (tools memory_recall / remember / history)."""

from __future__ import annotations

import argparse
from typing import Any


def _handle(args: argparse.Namespace) -> int:
    from nika_tui.mcp.server import run_stdio

    run_stdio()
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika mcp``."""
    parser = sub.add_parser(
        "mcp",
        help="MCP server on stdio: memory_recall, memory_remember, memory_history",
        description="Serve this tenant's memory tools over MCP (stdio). The tenant comes from "
        "NIKA_TENANT_ID; the memory service must be running for recall and history "
        "(`nika up`).",
    )
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.set_defaults(handler=_handle)
