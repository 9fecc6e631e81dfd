"""``nika memory feedback`` and ``nika tune recall`` run as real processes against the running
service: ``--json`` output, a bad tenant, and the service's refusal of a too-small label set
travelling back through the RPC as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from nika_tui.domain.envelope import NikaMeta
from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.tenant import TenantConfig
from nika_tui.paths import roots
from nika_tui.services.config_store import save_tenant
from nika_tui.services.relevance_log import tuning_dir
from nika_tui.tuning.tuner import MIN_QUERIES
from tests.plugins.memory import RunningService

pytestmark = pytest.mark.embedder

FACT = "The acme billing service retries failed card charges three times, one hour apart"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", *args], capture_output=True, text=True, timeout=300
    )


def _remember(svc: RunningService, text: str) -> str:
    req = RememberRequest(
        tenant_id="acme",
        text=text,
        meta=NikaMeta(timestamp=datetime.now(UTC), project_id="billing"),
        idempotency_key="tune-cli-fact",
    )
    outcome = svc.client.wait_ingested("acme", svc.client.remember(req), timeout=60)
    return str(outcome["id"])


def _feedback(*args: str) -> subprocess.CompletedProcess[str]:
    return _cli("memory", "feedback", "--tenant", "acme", "--json", *args)


def test_feedback_then_tune_through_the_cli(running_service: RunningService) -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    fact_id = _remember(running_service, FACT)

    useful = _feedback("--query", "how often are card charges retried?", "--useful", fact_id)
    assert useful.returncode == 0, useful.stderr
    record = json.loads(useful.stdout)
    assert record["useful"] == [fact_id] and record["source"] == "feedback"
    none = _feedback("--query", "who owns the office plants?", "--none")
    assert none.returncode == 0, none.stderr
    lines = (tuning_dir("acme") / "relevance.jsonl").read_text().splitlines()
    assert [json.loads(x)["query"] for x in lines] == [
        "how often are card charges retried?",
        "who owns the office plants?",
    ]

    # Two labels: the service refuses, and its error reaches the terminal as one JSON line.
    short = _cli("tune", "recall", "--tenant", "acme", "--trials", "2", "--json")
    assert short.returncode == 2
    assert short.stderr.count("\n") == 1
    error = json.loads(short.stderr)
    assert error["error"] == f"tenant acme has 2 labelled queries; tuning needs {MIN_QUERIES}"
    assert "nika memory feedback --tenant acme" in error["hint"]
    plain = _cli("tune", "recall", "--tenant", "acme", "--trials", "2")
    assert plain.returncode == 2
    assert plain.stderr.splitlines()[0] == (
        f"error: tenant acme has 2 labelled queries; tuning needs {MIN_QUERIES}"
    )

    for i in range(MIN_QUERIES - 2):
        more = _feedback("--query", f"an unrelated question number {i}", "--none")
        assert more.returncode == 0, more.stderr
    run = _cli("tune", "recall", "--tenant", "acme", "--trials", "3", "--seed", "5", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["tenant_id"] == "acme"
    assert report["n_queries"] == MIN_QUERIES
    assert report["trials"] == 3 and report["seed"] == 5
    assert report["action"] in {"kept", "adopted", "confirmation", "off"}
    trials = [
        json.loads(x)
        for x in (tuning_dir("acme") / "optimisation.jsonl").read_text().splitlines()
        if json.loads(x)["event"] == "trial"
    ]
    assert len(trials) == 3


@pytest.mark.parametrize(
    "argv",
    [
        ("tune", "recall", "--tenant", "nobody", "--json"),
        ("memory", "feedback", "--tenant", "nobody", "--query", "q", "--none", "--json"),
    ],
    ids=["tune", "feedback"],
)
def test_unknown_tenant_is_one_json_line(
    running_service: RunningService, argv: tuple[str, ...]
) -> None:
    out = _cli(*argv)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.count("\n") == 1
    error = json.loads(out.stderr)
    assert error["error"] == "unknown tenant 'nobody'"
    assert "nika setup --tenant nobody" in error["hint"]
    assert not (roots().tenant_data_dir("nobody") / "tuning").exists()
