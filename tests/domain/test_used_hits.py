"""When a reply counts as having used a recalled memory (a positive relevance label)."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from nika_tui.domain.used_hits import used


class Case(NamedTuple):
    test_id: str
    memory: str
    prompt: str
    reply: str
    expected: bool


MEMORY = "The staging server moved to 10.0.9.30 last week, the old address is retired."
CASES = [
    Case("value repeated", MEMORY, "What is the staging IP?", "Staging is at 10.0.9.30.", True),
    Case(
        "value only from the prompt",
        MEMORY,
        "Is 10.0.9.30 staging?",
        "Yes, that address is right.",
        False,
    ),
    Case("generic reply", MEMORY, "deploy please", "Done, all tests pass.", False),
    Case(
        "words of the memory",
        "Prefer small pull requests and never squash review fixes",
        "how should I open this change?",
        "Keep the pull requests small and do not squash the review fixes.",
        True,
    ),
    Case(
        "one shared word is not enough",
        "Prefer small pull requests and never squash review fixes",
        "open a change",
        "I opened the pull request.",
        False,
    ),
    Case("nothing distinctive left", "staging server", "staging server?", "staging server", False),
    Case(
        "a path",
        "Config lives in deploy/helm/values-prod.yaml",
        "where is the config?",
        "Edit deploy/helm/values-prod.yaml then redeploy.",
        True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_used(case: Case) -> None:
    assert used(case.memory, case.prompt, case.reply) is case.expected
