"""Supersede verdicts: the judge answers, ordinary code applies (seed 2)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class Verdict(StrEnum):
    REPLACE = "REPLACE"  # same thing, both cannot be current, new is more recent → retire old
    KEEP = "KEEP"  # both can be current → nothing retired
    UNCERTAIN = "UNCERTAIN"  # may conflict, evidence insufficient → review queue


@dataclass(frozen=True, slots=True)
class Fact:
    """One side of a pair given to a judge."""

    text: str
    timestamp: datetime
    """Valid time: when the fact became true (not when we heard it)."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """A judge's answer: a verdict and a short reason a person can read."""

    verdict: Verdict
    reason: str
    judge: str = ""


def parse_verdict(raw: str) -> Verdict:
    """Map free text to a verdict; anything unparsable is UNCERTAIN (never a guessed REPLACE)."""
    token = raw.strip().strip("`\"'.:;,").upper()
    try:
        return Verdict(token)
    except ValueError:
        return Verdict.UNCERTAIN
