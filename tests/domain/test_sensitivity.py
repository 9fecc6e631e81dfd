"""Which memories a public knowledge repo may receive."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest

from nika_tui.domain.sensitivity import RepoVisibility, may_publish, why_private


class Case(NamedTuple):
    test_id: str
    payload: dict[str, Any]
    reason: str | None


CASES = [
    Case("plain", {"text": "The API listens on port 8080"}, None),
    Case("flag", {"text": "x", "sensitivity": "private"}, "marked private"),
    Case("bool", {"text": "x", "private": True}, "marked private"),
    Case("masker-count", {"text": "x", "masked_secrets": 2}, "held a masked secret"),
    Case("entity", {"text": "x", "meta": {"entity_ids": ["private"]}}, "marked private"),
    Case("tag", {"text": "#private salary of Bob"}, "tagged #private"),
    Case("redacted", {"text": "token=[REDACTED] in env"}, "held a masked secret"),
    Case("masked-kind", {"text": "key [MASKED:openai] set"}, "held a masked secret"),
    Case("stars", {"text": "password is ********"}, "held a masked secret"),
    Case("live-key", {"text": "use sk-abcdefghijklmnopqrstuv"}, "looks like it holds a credential"),
    Case("assigned", {"text": "api_key = abcdef123456"}, "looks like it holds a credential"),
    Case("hashtag-word", {"text": "the #privateer project"}, None),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_why_private(case: Case) -> None:
    assert why_private(case.payload) == case.reason
    public_ok = may_publish(case.payload, RepoVisibility.PUBLIC)
    assert public_ok is (case.reason is None)
    assert may_publish(case.payload, RepoVisibility.PRIVATE)
