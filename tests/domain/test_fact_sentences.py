"""Which sentences of a session message state a fact or a decision (semantic memory)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.fact_sentences import fact_sentences, split_sentences


class Case(NamedTuple):
    test_id: str
    text: str
    expected: list[str]


CASES = [
    Case(
        "host stated",
        "The cache host is cache-2.corp.example.",
        ["The cache host is cache-2.corp.example."],
    ),
    Case(
        "decision in an answer",
        "We settled on Poetry for packaging. I ran it once.",
        ["We settled on Poetry for packaging."],
    ),
    Case("rule", "Never push directly to main.", ["Never push directly to main."]),
    Case("task request", "Please bump the linter to the latest version.", []),
    Case("imperative request", "Rename the config loader to settings.py.", []),
    Case("question", "Which port does the gateway use?", []),
    Case("hedged", "The gateway probably uses port 8088.", []),
    Case("first-person report", "I updated the gateway to port 8088.", []),
    Case("past-tense bullet of work done", "- Updated the gateway port to 8088", []),
    Case("offer", "Would you like the gateway on 8088 as well?", []),
    Case("thanks", "Thanks a lot, that fixed it!", []),
    Case(
        "interjection then fact",
        "Yes, the gateway listens on 8088.",
        ["Yes, the gateway listens on 8088."],
    ),
    Case(
        "request carrying its decision",
        "Use pnpm here, we agreed on it in March.",
        ["Use pnpm here, we agreed on it in March."],
    ),
    Case("code block ignored", "```\nThe port is 1234.\n```\nThat is the snippet:", []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_fact_sentences(case: Case) -> None:
    assert fact_sentences(case.text) == case.expected


def test_split_keeps_abbreviations_versions_and_hosts_inside_a_sentence() -> None:
    text = "Use tools, e.g. ruff. The API is api.acme.io on v3.12.\n- first item\n1. second item"
    assert split_sentences(text) == [
        "Use tools, e.g. ruff.",
        "The API is api.acme.io on v3.12.",
        "first item",
        "second item",
    ]
