"""The LLM digest's prompt and strict parsing (pure)."""

from __future__ import annotations

import json

from nika_tui.domain.digest_prompt import (
    apply_answer,
    candidate_ids,
    digest_user_prompt,
    parse_digest_answer,
)
from nika_tui.domain.synthesis import DigestLine, NodeDigest


def _node(node_id: str, *ids: str) -> NodeDigest:
    node = NodeDigest(node_id, "project", "Shop", "in_progress", None)
    node.current = [DigestLine("status: in_progress (from the hierarchy)", ())]
    node.current += [DigestLine(f"fact {i} token ghp_{'a' * 36}", (i,)) for i in ids]
    node.open = [DigestLine("job j1: todo", ())]
    return node


def test_prompt_holds_the_candidates_masked_with_their_ids() -> None:
    prompt = digest_user_prompt([_node("shop", "m1", "m2")])
    assert prompt.startswith("NODE shop (project, status in_progress) — Shop\n")
    assert "- [m1] fact m1 token" in prompt and "ghp_" not in prompt
    assert "status:" not in prompt and "job j1" not in prompt  # hierarchy lines are not sent
    assert candidate_ids(_node("shop", "m1", "m2")) == {"m1", "m2"}


def test_parsing_is_strict_per_node() -> None:
    a, b, c, d = _node("a", "m1"), _node("b", "m2"), _node("c", "m3"), _node("d", "m4")
    answer = {"nodes": [
        {"node_id": "a", "current": [{"text": " one  line ", "ids": ["m1", "m1"]}]},
        {"node_id": "b", "current": [{"text": "x", "ids": ["m1"]}]},
        {"node_id": "c", "current": [{"text": "x", "ids": []}]},
    ]}  # fmt: skip
    got = parse_digest_answer("```json\n" + json.dumps(answer) + "\n```", [a, b, c, d])
    assert got[0].lines is not None and got[0].lines["current"] == [DigestLine("one line", ("m1",))]
    assert got[1].lines is None and "m1" in got[1].problem
    assert got[2].lines is None and "cites no ids" in got[2].problem
    assert got[3].lines is None and "missing" in got[3].problem
    assert all(x.lines is None for x in parse_digest_answer("KEEP", [a]))
    merged = apply_answer(a, got[0])
    assert [x.text for x in merged.current] == [
        "status: in_progress (from the hierarchy)",
        "one line",
    ]
    assert [x.text for x in merged.open] == ["job j1: todo"]
    assert apply_answer(b, got[1]) is b
