"""The importer and the MCP server are thin writers/readers: no torch, qdrant or textual."""

from __future__ import annotations

from tests.support.boundaries import loaded_after_import, modules_under

HEAVY = {"torch", "sentence_transformers", "qdrant_edge", "qdrant_client", "textual"}


def test_importer_and_mcp_load_no_model_store_or_ui() -> None:
    modules = [
        *modules_under("importer"),
        "nika_tui.cli.import_cmd",
        "nika_tui.mcp.server",
        "nika_tui.mcp.tools",
    ]
    loaded = loaded_after_import(modules)
    assert not (loaded & HEAVY), loaded & HEAVY
