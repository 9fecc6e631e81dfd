"""The dashboard read side is Textual-free (issue #12): its model, parser and sources load
without the UI toolkit, the embedding model or the vector store."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = {"textual", "torch", "sentence_transformers", "qdrant_edge", "qdrant_client"}
MODULES = [
    "nika_tui.dashboard.model",
    "nika_tui.dashboard.parse",
    "nika_tui.dashboard.redis_reads",
    "nika_tui.dashboard.redis_source",
    "nika_tui.dashboard.fixture_source",
    "nika_tui.dashboard.memory_views",
    "nika_tui.dashboard.memory_parse",
    "nika_tui.dashboard.redis_memories",
    "nika_tui.dashboard.fixture_memories",
    "nika_tui.dashboard.leaving",
]


def test_dashboard_read_side_loads_no_textual_torch_or_qdrant() -> None:
    code = (
        "import importlib, json, sys\n"
        f"for m in {MODULES!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    loaded = set(json.loads(out.stdout))
    assert "nika_tui" in loaded  # the imports above really ran
    assert not (loaded & HEAVY), loaded & HEAVY
