"""``nika memory remember --private`` (issue 22, step 4): the fact never reaches a knowledge
repo marked public, and saying it again unmarked does not make it publishable."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nika_tui.cli import main
from nika_tui.domain.tenant import TenantConfig
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder

PRIVATE = "Acme Corp pays 12k euros per month for the shop"
SHAREABLE = "The shop deploys to production every Tuesday morning"


def _nika(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    loaded: dict[str, object] = json.loads(out.out)
    return loaded


def _texts(root: Path) -> str:
    return "".join(p.read_text() for p in sorted(root.rglob("knowledge/**/*.md")))


def test_a_private_fact_stays_out_of_a_public_repo(
    capsys: pytest.CaptureFixture[str],
    make_tenant: Callable[..., TenantConfig],
    running_service: RunningService,
    tmp_path: Path,
) -> None:
    make_tenant("acme")  # knowledge_repo_visibility: public (the default)
    remember = ("memory", "remember", "--tenant", "acme", "--project", "shop", "--text")
    private = _nika(capsys, *remember, PRIVATE, "--private")
    _nika(capsys, *remember, SHAREABLE)
    # The same text again without the flag (an agent repeating it) lands on the same point.
    again = _nika(capsys, *remember, PRIVATE)
    assert again["id"] == private["id"]

    result = _nika(capsys, "compress", "--tenant", "acme", "--repo", str(tmp_path / "repo"))
    public = _texts(tmp_path / "repo")
    assert SHAREABLE in public
    assert PRIVATE not in public
    tree = result["private"]
    assert isinstance(tree, dict)
    assert PRIVATE in _texts(Path(str(tree["tree"])))
