"""What the ``nika import`` tests share: the tenant, a two-turn session and its clock, an
in-process ``nika import --json`` and a read of the ingest stream."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import redis

from nika_tui.cli import main
from nika_tui.domain.requests import RememberRequest

TENANT = "acme"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# A session of TURNS makes 5 memories: 3 semantic (the sentences that state a fact: both
# prompts, which state nothing else, and the first answer's "staging is on …"; the second
# answer only reports what the agent did) and 2 episodic (the answers).
TURNS = [
    (
        "The staging server is db-staging-1, deploy there first.",
        "Noted: staging is on db-staging-1 and I deployed the API there.",
    ),
    (
        "Our deploys happen on Tuesdays after the standup.",
        "Understood, I scheduled the release pipeline for Tuesday mornings.",
    ),
]


def run_import(*args: str) -> tuple[int, dict[str, Any]]:
    """Run ``nika import --json`` in-process; (exit code, report)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["import", "--tenant", TENANT, "--json", *args])
    return code, json.loads(out.getvalue()) if out.getvalue() else {}


def stream(r: redis.Redis) -> list[RememberRequest]:
    return [RememberRequest.model_validate_json(f["req"]) for _id, f in r.xrange("nika:ingest")]
