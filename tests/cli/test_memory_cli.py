"""``nika memory …`` and ``nika review …``: bad input gets one clear line; the happy path works
end to end against the service loop; a missing service names the fix."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import NamedTuple

import pytest
import redis

from nika_tui.cli import main
from nika_tui.domain.memory import MAX_TEXT_CHARS
from nika_tui.domain.tenant import TenantConfig
from nika_tui.services import redis_keys
from tests.plugins.memory import RunningService


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


class Bad(NamedTuple):
    test_id: str
    argv: tuple[str, ...]
    error: str
    hint: str


BAD_INPUT = [
    Bad("empty", ("--text", "   "), "the text is empty", "--text TEXT"),
    Bad("oversized", ("--text", "x" * (MAX_TEXT_CHARS + 1)),
        f"one memory holds at most {MAX_TEXT_CHARS:,}", "split it"),
    Bad("bad-domain", ("--text", "a fact", "--domain", "cooking"),
        "domain: 'cooking' is not allowed; allowed values: hooks, infra", "--help"),
    Bad("bad-action", ("--text", "a fact", "--action-type", "nap"),
        "action_type: 'nap' is not allowed; allowed values: code, research", "--help"),
    Bad("bad-trigger", ("--text", "a fact", "--trigger", "moon"),
        "trigger: 'moon' is not allowed", "--help"),
    Bad("bad-layer", ("--text", "a fact", "--layer", "dream"), "layer", "--help"),
    Bad("bad-valid-from", ("--text", "a fact", "--valid-from", "last tuesday"),
        "--valid-from 'last tuesday' is not an ISO-8601 time", "2026-06-01"),
]  # fmt: skip


@pytest.mark.parametrize("case", BAD_INPUT, ids=[c.test_id for c in BAD_INPUT])
def test_remember_refuses_bad_input_with_one_line(
    case: Bad,
    capsys: pytest.CaptureFixture[str],
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
) -> None:
    make_tenant("acme")
    code, out, err = _run(capsys, "memory", "remember", "--tenant", "acme", *case.argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[0].startswith("error: ") and case.error in lines[0]
    assert lines[1].startswith("hint: ") and case.hint in lines[1]
    assert out == ""
    assert redis_client.exists(redis_keys.INGEST_STREAM) == 0  # nothing queued


def test_unknown_tenant_names_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "memory", "remember", "--tenant", "ghost", "--text", "x")
    assert code == 2
    assert "error: unknown tenant 'ghost'" in err
    assert "nika setup --tenant ghost" in err
    code, _, err = _run(capsys, "memory", "recall", "--tenant", "Bad_Id", "--json", "q")
    assert code == 2
    assert json.loads(err)["error"] == "invalid tenant id 'Bad_Id'"


def test_non_utf8_stdin_is_refused(
    capsys: pytest.CaptureFixture[str],
    make_tenant: Callable[..., TenantConfig],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant("acme")
    stdin = io.TextIOWrapper(io.BytesIO(b"caf\xe9 au lait"), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stdin)
    code, _, err = _run(capsys, "memory", "remember", "--tenant", "acme", "--text", "-")
    assert code == 2
    assert "error: stdin is not valid UTF-8 (byte 0xe9 at offset 3)" in err
    assert "iconv" in err


def test_service_down_names_the_fix_and_keeps_the_write(
    capsys: pytest.CaptureFixture[str],
    make_tenant: Callable[..., TenantConfig],
    redis_client: redis.Redis,
) -> None:
    make_tenant("acme")
    code, _, err = _run(capsys, "memory", "recall", "--tenant", "acme", "staging")
    assert code == 1
    assert err.splitlines() == [
        "error: memory service is not running",
        "hint: start it with `nika up`",
    ]
    code, _, err = _run(capsys, "memory", "history", "--tenant", "acme", "some-id")
    assert code == 1 and "memory service is not running" in err
    code, _, err = _run(capsys, "review", "list", "--tenant", "acme")
    assert code == 1 and "memory service is not running" in err
    # remember still queues durably (it is ingested once a service runs), then says so.
    code, _, err = _run(capsys, "memory", "remember", "--tenant", "acme", "--text", "a fact")
    assert code == 1
    assert "error: memory service is not running" in err and "queued" in err
    assert redis_client.xlen(redis_keys.INGEST_STREAM) == 1


def test_no_redis_at_all_is_service_not_running(
    capsys: pytest.CaptureFixture[str], make_tenant: Callable[..., TenantConfig]
) -> None:
    make_tenant("acme")  # no REDIS_URL and no embedded server in this data dir
    code, _, err = _run(capsys, "memory", "recall", "--tenant", "acme", "anything")
    assert code == 1 and "memory service is not running" in err


@pytest.mark.embedder
def test_remember_recall_history_review_round_trip(
    capsys: pytest.CaptureFixture[str],
    make_tenant: Callable[..., TenantConfig],
    running_service: RunningService,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    make_tenant("acme")
    code, out, _ = _run(capsys, "memory", "remember", "--tenant", "acme", "--project", "web",
                        "--domain", "infra", "--valid-from", "2026-03-01",
                        "--text", "The staging server is staging-1.acme.internal")  # fmt: skip
    assert code == 0
    old_id = out.strip()
    monkeypatch.setattr(
        "sys.stdin",
        io.TextIOWrapper(io.BytesIO(b"The staging server moved to staging-2.acme.internal")),
    )
    code, out, err = _run(capsys, "memory", "remember", "--tenant", "acme", "--project", "web",
                          "--valid-from", "2026-06-01", "--text", "-", "--json")  # fmt: skip
    assert code == 0
    new = json.loads(out)
    assert new["retired"] == [old_id]

    code, out, _ = _run(capsys, "memory", "recall", "--tenant", "acme", "--json",
                        "where", "is", "the", "staging", "server")  # fmt: skip
    hits = json.loads(out)["hits"]
    assert [h["record"]["id"] for h in hits] == [new["id"]]
    code, out, _ = _run(capsys, "memory", "recall", "--tenant", "acme", "staging", "server")
    assert code == 0 and new["id"] in out and "staging-2.acme.internal" in out

    code, out, _ = _run(capsys, "memory", "recall", "--tenant", "acme", "wifi password")
    assert (code, out) == (0, "no memory for wifi password\n")
    code, out, _ = _run(capsys, "memory", "recall", "--tenant", "acme", "--json", "wifi password")
    assert code == 0
    assert (
        json.loads(out)["hits"] == [] and json.loads(out)["palace"] == "no memory for wifi password"
    )

    code, out, _ = _run(capsys, "memory", "history", "--tenant", "acme", "--json", new["id"])
    assert [r["id"] for r in json.loads(out)["chain"]] == [old_id, new["id"]]
    code, out, _ = _run(capsys, "memory", "history", "--tenant", "acme", old_id)
    assert code == 0 and "retired" in out

    code, out, _ = _run(capsys, "review", "list", "--tenant", "acme")
    assert (code, out) == (0, "no pending review\n")
    code, _, err = _run(capsys, "review", "approve", "--tenant", "acme", "feedbeef0000")
    assert code == 2 and "no review 'feedbeef0000'" in err


def test_a_queued_review_says_why() -> None:
    from nika_tui.cli.memory import review_lines

    out = {
        "reviews": ["r1"],
        "judgements": [
            {"old_id": "a", "verdict": "KEEP", "reason": "other subject", "judge": "offline"},
            {"old_id": "b", "verdict": "UNCERTAIN", "reason": "hedged: 'might move'",
             "judge": "offline"},
        ],
    }  # fmt: skip
    assert review_lines(out, "acme") == [
        "review r1 queued (offline: hedged: 'might move'): see `nika review list --tenant acme`"
    ]


def test_a_queued_review_prints_its_reason_through_the_service(
    capsys: pytest.CaptureFixture[str],
    isolated_env: dict[str, str],
    running_service: RunningService,
) -> None:
    """A hedged fact about a remembered subject is judged UNCERTAIN by the service's judge:
    `nika memory remember` says which judge queued the review and why."""
    from nika_tui.domain.tenant import JudgeConfig, JudgeKind
    from nika_tui.services.config_store import save_tenant

    save_tenant(
        TenantConfig(tenant_id="acme", display_name="Acme", judge=JudgeConfig(kind=JudgeKind.RULES))
    )
    code, _, _ = _run(capsys, "memory", "remember", "--tenant", "acme", "--project", "web",
                      "--valid-from", "2026-03-01",
                      "--text", "The staging server is staging-1.acme.internal")  # fmt: skip
    assert code == 0
    hedged = "I think the staging server might move to staging-3.acme.internal"
    code, _, err = _run(capsys, "memory", "remember", "--tenant", "acme", "--project", "web",
                        "--valid-from", "2026-06-01", "--text", hedged)  # fmt: skip
    assert code == 0
    (line,) = [ln for ln in err.splitlines() if ln.startswith("review ")]
    assert " queued (rules: " in line, err
    assert "see `nika review list --tenant acme`" in line
