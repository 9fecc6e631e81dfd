"""The scripted session the demo's replay agent plays (pure data).

A developer works on ``acme-shop`` for eleven turns: the context climbs past 61% at turn 9
(auto compaction, handoff packet), and turn 10 contradicts turn 1 with a hedge, so the
supersede judge cannot decide and the pair lands in the review queue.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROJECT = "acme-shop"
MODEL = "claude-sonnet-4-5-20250929"
WINDOW = 200_000


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call and what it returned."""

    name: str
    input: dict[str, Any]
    result: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One user prompt and the agent's work on it."""

    prompt: str
    reply: str
    context_tokens: int
    """Tokens in the context window after this turn (input + cache reads + cache writes)."""
    pause_s: float
    """Seconds before the prompt, at speed 1."""
    tools: tuple[ToolUse, ...] = field(default_factory=tuple)


def _edit(path: str, old: str, new: str) -> ToolUse:
    return ToolUse(
        "Edit",
        {"file_path": path, "old_string": old, "new_string": new},
        f"The file {path} has been updated.",
    )


def _bash(command: str, out: str) -> ToolUse:
    return ToolUse("Bash", {"command": command, "description": "Run the tests"}, out)


def turns(root: str) -> list[Turn]:
    """The session, with file paths under the project directory ``root``."""
    api, tests = f"{root}/api", f"{root}/tests"
    return [
        Turn(
            "Production deploys happen on Fridays after 16:00 UTC; the release checklist "
            "lives in docs/release.md.",
            "Noted: production deploys are on Fridays after 16:00 UTC, following docs/release.md.",
            22_400,
            8.0,
            (ToolUse("Read", {"file_path": f"{root}/docs/release.md"}, "# Release\n1. Tag\n"),),
        ),
        Turn(
            "Add rate limiting to the checkout endpoint: 20 requests per minute per user.",
            "Decision: a sliding-window limiter of 20 requests per minute per user, applied "
            "as a dependency on POST /checkout.",
            35_100,
            14.0,
            (
                ToolUse(
                    "TodoWrite",
                    {
                        "todos": [
                            {"content": "Limiter on POST /checkout", "status": "in_progress"},
                            {"content": "Store limiter state in Redis", "status": "pending"},
                            {"content": "Tests for the limiter reset", "status": "pending"},
                            {"content": "Document the limiter in docs/api.md", "status": "pending"},
                        ]
                    },
                    "Todos have been modified successfully.",
                ),
                _edit(
                    f"{api}/checkout.py",
                    "@router.post('/checkout')\n",
                    "@router.post('/checkout', dependencies=[Depends(limit(20, 60))])\n",
                ),
            ),
        ),
        Turn(
            "Use Redis for the rate limiter state, not the in-process dict.",
            "Decision: limiter counters live in Redis sorted sets keyed by user id, with a "
            "60 s TTL, so all workers share them.",
            48_700,
            16.0,
            (
                _edit(
                    f"{api}/ratelimit.py",
                    "_hits: dict[str, list[float]] = {}\n",
                    "def hits(r, user):\n    return r.zcount(f'rl:{user}', now() - 60, '+inf')\n",
                ),
            ),
        ),
        Turn(
            "Write tests for the limiter, including the reset after one minute.",
            "Added tests/test_ratelimit.py: 21st request in a minute gets 429, and the "
            "counter resets after 60 s. All 6 tests pass.",
            61_900,
            15.0,
            (
                ToolUse(
                    "Write",
                    {
                        "file_path": f"{tests}/test_ratelimit.py",
                        "content": "def test_limit():\n    ...\n\ndef test_reset():\n    ...\n",
                    },
                    f"File created successfully at: {tests}/test_ratelimit.py",
                ),
                _bash("pytest tests/test_ratelimit.py -q", "6 passed in 0.42s"),
            ),
        ),
        Turn(
            "The payment webhook sometimes times out; raise its timeout to 15 s and log slow "
            "calls.",
            "Raised the payment webhook timeout to 15 s and log calls slower than 5 s at "
            "WARNING with the provider's request id.",
            74_800,
            17.0,
            (_edit(f"{api}/webhooks.py", "timeout=5\n", "timeout=15\n"),),
        ),
        Turn(
            "Document the limiter in docs/api.md.",
            "Documented the limiter (limits, headers Retry-After and X-RateLimit-Remaining) "
            "in docs/api.md.",
            87_600,
            14.0,
            (_edit(f"{root}/docs/api.md", "## Checkout\n", "## Checkout\nRate limited.\n"),),
        ),
        Turn(
            "Refactor the order model so totals are computed in one place.",
            "Decision: Order.total() is the single place totals are computed; the three "
            "call sites now use it.",
            101_300,
            18.0,
            (
                _edit(
                    f"{root}/models/order.py", "total = sum(", "def total(self):\n    return sum("
                ),
            ),
        ),
        Turn(
            "Run the whole suite and fix what breaks.",
            "The suite passes (142 tests) after fixing a rounding difference in the discount test.",
            113_900,
            16.0,
            (
                _bash("pytest -q", "1 failed, 141 passed"),
                _edit(f"{tests}/test_discount.py", "== 9.99", "== pytest.approx(9.99)"),
                _bash("pytest -q", "142 passed in 3.1s"),
            ),
        ),
        Turn(
            "Prepare the changelog entry for this release.",
            "Drafted the 2.4.0 changelog entry: checkout rate limiting, Redis-backed limiter, "
            "webhook timeout 15 s, order totals refactor.",
            124_600,
            15.0,
            (_edit(f"{root}/CHANGELOG.md", "## Unreleased\n", "## 2.4.0\n- Rate limiting\n"),),
        ),
        Turn(
            "Maybe production deploys happen on Thursdays now? I'm not sure, ask ops before "
            "the release.",
            "I will not change the release day on a maybe: I flagged the conflict with the "
            "Friday rule for a human to confirm with ops.",
            31_200,
            14.0,
        ),
        Turn(
            "Continue with the changelog and the open tasks.",
            "The changelog entry is final and the limiter tasks are done; the release day "
            "still waits for ops' answer.",
            40_500,
            16.0,
            (_edit(f"{root}/CHANGELOG.md", "- Rate limiting\n", "- Rate limiting (20/min)\n"),),
        ),
    ]


def compaction_summary() -> str:
    """The summary Claude Code writes after an automatic compaction."""
    return (
        "This session is being continued from a previous conversation that ran out of "
        "context. Summary: acme-shop checkout rate limiting (Redis-backed, 20/min/user) is "
        "implemented, tested and documented; payment webhook timeout raised to 15 s; order "
        "totals refactored; changelog 2.4.0 drafted."
    )
