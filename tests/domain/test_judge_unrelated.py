"""Constructed unrelated pairs: the old fact of one pair beside the new fact of another pair
of the same domain about something else."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from nika_tui.domain.judge_eval import LabelledPair
from nika_tui.domain.judge_unrelated import UNRELATED_GAP, texts_of, unrelated_pairs
from nika_tui.domain.verdicts import Fact, Verdict

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _pair(pid: str, old: str, new: str, label: Verdict = Verdict.REPLACE) -> LabelledPair:
    return LabelledPair(pid, Fact(old, T0), Fact(new, T0 + timedelta(days=3)), label)


def _unit(angle_deg: float) -> list[float]:
    a = math.radians(angle_deg)
    return [math.cos(a), math.sin(a)]


PAIRS = [
    (
        _pair("a", "Deploys of acme are on Fridays.", "Deploys of acme are on Tuesdays now."),
        "ops",
    ),
    (
        _pair("b", "The staging server is 10.0.9.12.", "Staging server moved to 10.0.9.30."),
        "ops",
    ),
    (_pair("c", "Billing invoices go out monthly.", "Invoices are now sent weekly."), "ops"),
    (
        _pair("d", "Deploy freeze starts on Fridays.", "Deploy freeze starts Thursdays."),
        "ops",
    ),
    (_pair("e", "The VPN gateway is vpn-1.", "The VPN gateway moved to vpn-2."), "other"),
]
# Angles stand for meanings: a's old fact is nearest b's new one, then c's; e is far away.
ANGLES = {
    PAIRS[0][0].old.text: 0.0,
    PAIRS[1][0].new.text: 20.0,
    PAIRS[2][0].new.text: 40.0,
    PAIRS[3][0].new.text: 5.0,
    PAIRS[4][0].new.text: 1.0,
}


def _vector(text: str) -> list[float]:
    return _unit(ANGLES.get(text, 89.0))


def test_the_nearest_new_facts_of_other_subjects_in_the_same_domain_are_paired_as_keep() -> None:
    built = unrelated_pairs(PAIRS, _vector, per_pair=2, min_cosine=0.5)
    from_a = [(p, g) for p, g in built if p.id.startswith("a~")]
    # d shares a's subject words (deploy, friday): not unrelated. e is another domain.
    assert [p.id for p, _ in from_a] == ["a~b", "a~c"]
    pair, group = from_a[0]
    assert group == "ops"
    assert pair.label is Verdict.KEEP
    assert pair.old == PAIRS[0][0].old
    assert pair.new.text == PAIRS[1][0].new.text
    assert pair.new.timestamp == T0 + timedelta(days=3)  # b's own gap


def test_a_constructed_pair_never_falls_in_the_same_minute() -> None:
    quick = LabelledPair("b", PAIRS[1][0].old, Fact(PAIRS[1][0].new.text, T0), Verdict.REPLACE)
    built = unrelated_pairs([PAIRS[0], (quick, "ops")], _vector, 1, 0.5)
    assert [p.new.timestamp for p, _ in built if p.id == "a~b"] == [T0 + UNRELATED_GAP]


def test_the_cosine_floor_and_the_per_pair_count_hold() -> None:
    floor = math.cos(math.radians(30.0))
    built = unrelated_pairs(PAIRS, _vector, per_pair=5, min_cosine=floor)
    assert [p.id for p, _ in built if p.id.startswith("a~")] == ["a~b"]
    assert [p.id for p, _ in unrelated_pairs(PAIRS, _vector, 1, 0.5) if p.id[0] == "a"] == ["a~b"]


def test_new_facts_can_be_taken_from_some_labels_only() -> None:
    pairs = [
        *PAIRS[:2],
        (_pair("c", PAIRS[2][0].old.text, PAIRS[2][0].new.text, Verdict.KEEP), "ops"),
    ]
    built = unrelated_pairs(pairs, _vector, 5, 0.5, frozenset({Verdict.KEEP}))
    assert [p.id for p, _ in built if p.id.startswith("a~")] == ["a~c"]


def test_every_text_is_asked_once() -> None:
    texts = texts_of(PAIRS)
    assert len(texts) == len(set(texts)) == 10


def test_pairs_about_one_subject_in_other_words_are_not_crossed() -> None:
    """A shared value, or old facts that mean the same, make the two pairs one subject."""
    tool = _pair("t", "Expense notes go through Expensya.", "Receipts must be scanned.")
    moved = _pair("m", "Travel costs are booked by HR.", "We moved to Spendesk, Expensya is gone.")
    near = _pair("n", "Our SSO provider is Okta.", "The wiki now needs two-factor login.")
    angles = {tool.old.text: 0.0, moved.new.text: 10.0, near.old.text: 20.0, near.new.text: 5.0}

    def vector(text: str) -> list[float]:
        return _unit(angles.get(text, 89.0))

    built = unrelated_pairs([(tool, "ops"), (moved, "ops"), (near, "ops")], vector, 5, 0.5)
    # m shares the value Expensya with t; n's old fact is within 20 degrees of t's.
    assert [p.id for p, _ in built if p.id.startswith("t~")] == []
