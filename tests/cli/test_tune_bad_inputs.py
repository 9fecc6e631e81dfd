"""Bad ``--seed`` values and feedback ids: one-line error and hint, exit 2, nothing changed.

Real processes (``python -m nika_tui``); no service runs, so a command that got past its
checks would fail differently (the service is not running), not with exit 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import NamedTuple

import pytest

from nika_tui.domain.tenant import TenantConfig
from nika_tui.services.config_store import save_tenant
from nika_tui.services.relevance_log import tuning_dir


def _nika(*argv: str) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        [sys.executable, "-m", "nika_tui", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NIKA_NO_AUTOSTART": "1"},
    )
    assert "Traceback" not in out.stderr, out.stderr
    return out


@pytest.fixture(autouse=True)
def _acme() -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))


class Bad(NamedTuple):
    test_id: str
    argv: tuple[str, ...]
    says: str


SEEDS = ["abc", "-1", "4294967296", "1.5", ""]
SEED_SAYS = "--seed must be a whole number from 0 to 4294967295"
BAD = [
    *(
        Bad(f"tune-seed-{s or 'empty'}", ("tune", "recall", "--tenant", "acme", "--seed", s),
            SEED_SAYS)
        for s in SEEDS
    ),
    Bad("audit-seed", ("audit", "--tenant", "acme", "--seed", "-3"), SEED_SAYS),
    Bad(
        "feedback-id-not-a-uuid",
        ("memory", "feedback", "--tenant", "acme", "--query", "q", "--useful", "mem-1"),
        "--useful 'mem-1' is not a memory id",
    ),
    Bad(
        "feedback-not-useful-id-truncated",
        ("memory", "feedback", "--tenant", "acme", "--query", "q", "--not-useful", "3f2a9c1e"),
        "--not-useful '3f2a9c1e' is not a memory id",
    ),
    Bad(
        "feedback-id-both-ways",
        (
            "memory", "feedback", "--tenant", "acme", "--query", "q",
            "--useful", "0b6f3f5e-3c1e-5d8e-9a55-1c2b3d4e5f60",
            "--not-useful", "0B6F3F5E-3C1E-5D8E-9A55-1C2B3D4E5F60",
        ),
        "marked both useful and not useful",
    ),
]  # fmt: skip


@pytest.mark.parametrize("case", BAD, ids=[c.test_id for c in BAD])
def test_refused_in_one_line_with_a_hint_and_nothing_written(case: Bad) -> None:
    out = _nika(*case.argv)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: ") and lines[1].startswith("hint: ")
    assert case.says in lines[0]
    assert not (tuning_dir("acme") / "relevance.jsonl").exists()
    # --json: the same refusal as one JSON line.
    js = _nika(*case.argv, "--json")
    assert js.returncode == 2 and js.stderr.count("\n") == 1
    assert case.says in json.loads(js.stderr)["error"]


def test_a_good_id_is_stored_as_the_store_spells_it() -> None:
    memory_id = str(uuid.uuid4())
    out = _nika(
        "memory", "feedback", "--tenant", "acme", "--query", "q", "--useful",
        memory_id.upper(), "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["useful"] == [memory_id]
