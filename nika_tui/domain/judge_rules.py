"""The rules judge: offline, deterministic, pure; prefers UNCERTAIN to a wrong REPLACE.

It compares two parsed facts (see :mod:`nika_tui.domain.fact_parse`) and answers with one of
the three verdicts of seed 2 « Remplacer au lieu d'empiler » and DESIGN.md "Supersede":

1. Different work items (JOB-12 vs JOB-13) or different environments (staging vs production)
   → KEEP: another entity.
2. The new fact is backdated (valid time earlier than the old one's) → KEEP: the old one is
   still the valid one; a backdated fact never retires a newer one.
3. Both facts hold at nearly the same time (within :data:`SAME_TIME`) → UNCERTAIN if they
   conflict, else KEEP: no valid-time order to decide by.
4. The new fact is hedged ("maybe", "I think", "peut-être", "à voir", a question…) → UNCERTAIN if
   it conflicts, else KEEP.
5. An additive cue ("too", "also", "aussi") → KEEP unless the new fact names the outgoing value.
6. "Same subject" needs half of the smaller fact's subject stems shared and a third of the
   larger's (one common word such as "service" is not enough), or the same work item.
7. Conflicts that justify REPLACE (new is later and definite):
   - *explicit*: the new fact names a current old value as outgoing ("from X to", "instead of
     X", "no longer X", "replaced X", "au lieu de X", "de X à Y", "plus de X") and the facts
     share something besides that value;
   - *retraction*: same subject and values, opposite polarity ("… is not on X anymore"), the
     new fact no narrower than the old;
   - *swap*: identical subject words, exactly one value family differs (host, day, version,
     port, owner…), nothing else differs; a swap of a bare identifier (Q3 → Q4) is UNCERTAIN;
   - *cue change*: a change cue ("moved", "now", "renamed", "désormais", "a déménagé"…), half
     of the larger subject shared, and a value of a family the old fact has changes (or, with
     no value involved, exactly one word replaces one word).
8. Maybe another entity → UNCERTAIN: one fact names a narrower subject ("the database" vs "the
   analytics database") with a differing value; a subject word *and* a value differ under a
   change cue; a word change next to an unchanged value.
9. Everything else → KEEP (duplicate, complementary, another attribute, unrelated).

Duplicates (same subject, same value) are KEEP: nothing is outdated, both can be current, and
merging duplicates is the REM pass's job, not supersede's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from nika_tui.domain.fact_parse import ID, NAME, TICKET, ParsedFact, parse_fact, stem
from nika_tui.domain.verdicts import Fact, Judgement, Verdict

SAME_TIME = timedelta(minutes=15)
"""Two facts whose valid times are this close have no usable order: a conflict is UNCERTAIN."""

SUBJECT_OVERLAP = 0.5
"""Share of the smaller fact's subject stems the other must contain to be 'the same subject'."""

SUBJECT_MIN_COVERAGE = 1 / 3
"""Share of the *larger* fact's subject stems that must be shared: one common word out of
four ("service") does not make the same subject."""

REPLACE_MIN_COVERAGE = 0.5
"""A stated change retires the old fact only when half of the larger subject is shared."""

RULES_JUDGE_NAME = "rules"


class Conflict(StrEnum):
    """How the new fact relates to the old one, before time and hedges are considered."""

    EXPLICIT = "explicit"  # new names an old value as outgoing
    RETRACTION = "retraction"  # same statement, opposite polarity
    SWAP = "swap"  # same subject words, one value family differs
    CUE_CHANGE = "cue-change"  # change cue, overlapping subject, something new
    REFINEMENT = "refinement"  # differing value, one side names a narrower subject
    NONE = "none"  # duplicate, complementary or unrelated


REPLACING = frozenset({Conflict.EXPLICIT, Conflict.RETRACTION, Conflict.SWAP, Conflict.CUE_CHANGE})
CONFLICTING = REPLACING | {Conflict.REFINEMENT}


@dataclass(frozen=True, slots=True)
class Comparison:
    """The evidence the verdict is built from (also used to write the reason)."""

    conflict: Conflict
    shared_subject: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
    """(family, old values, new values) for every value family that differs."""
    detail: str
    tension: bool
    """True when the facts touch the same subject with something different (for hedges)."""


def _reconcile(a: ParsedFact, b: ParsedFact) -> tuple[set[str], dict[str, set[str]]]:
    """Decide, knowing the other fact, whether a sentence-initial capitalised word is a name.

    "Felix is working on JOB-142" vs "JOB-142 is assigned to Felix": the other fact uses it as
    a name. "Alice owns billing" vs "Billing moved to Bob": the other fact names someone, this
    one names nobody, and the word does not occur in the other fact: a name candidate.
    """
    content = set(a.content)
    values = {k: set(v) for k, v in a.values.items()}
    other_names = b.values.get(NAME, frozenset())
    own_names = a.values.get(NAME, frozenset())
    for word in a.sentence_initial:
        candidate = bool(other_names) and not own_names and word not in b.mentions
        if word in other_names or (candidate and stem(word) in content):
            content.discard(stem(word))
            values.setdefault(NAME, set()).add(word)
    return content, values


def _align(words: set[str], other: set[str]) -> set[str]:
    """Map a short whole word to the other side's longer stem it begins ("own" → "owner")."""
    out: set[str] = set()
    for word in words:
        longer = sorted(w for w in other if w != word and w.startswith(word))
        out.add(longer[0] if 3 <= len(word) < 5 and longer else word)
    return out


def compare(old: ParsedFact, new: ParsedFact) -> Comparison:
    """Classify how ``new`` relates to ``old`` (ignoring time and hedges).

    Args:
        old: The parsed older memory.
        new: The parsed incoming fact.

    Returns:
        The :class:`Comparison` with the conflict kind and the evidence.
    """
    old_content, old_values = _reconcile(old, new)
    new_content, new_values = _reconcile(new, old)
    old_content = _align(old_content, new_content)
    new_content = _align(new_content, old_content)
    shared = old_content & new_content
    old_only = old_content - new_content
    new_only = new_content - old_content
    smaller = min(len(old_content), len(new_content))
    larger = max(len(old_content), len(new_content))
    families = (set(old_values) & set(new_values)) - {TICKET}
    shared_values = any(old_values[f] & new_values[f] for f in families)
    # With no subject words on one side, a shared value is the only sign of a shared subject.
    fallback = SUBJECT_OVERLAP if shared_values else 0.0
    containment = len(shared) / smaller if smaller else fallback
    # Share of the *larger* subject covered: low when one fact says much more.
    coverage = len(shared) / larger if larger else fallback
    # The same work item (JOB-12 on both sides) is the same subject whatever the wording.
    same_ticket = bool(old_values.get(TICKET, set()) & new_values.get(TICKET, set()))
    if same_ticket:
        containment = coverage = 1.0
    same_subject = same_ticket or (
        containment >= SUBJECT_OVERLAP and coverage >= SUBJECT_MIN_COVERAGE
    )

    changed = tuple(
        (f, tuple(sorted(old_values[f])), tuple(sorted(new_values[f])))
        for f in sorted(families)
        if old_values[f] != new_values[f]
    )
    # A family conflicts when each side holds a value the other lacks; "adds" when the new
    # side brings a value the old side lacks (covers "from X to Y", which keeps X).
    conflicts = [f for f, o, n in changed if set(o) - set(n) and set(n) - set(o)]
    adds = [f for f, o, n in changed if set(n) - set(o)]
    subject = tuple(sorted(shared))
    new_families = set(new_values) - set(old_values) - {TICKET}
    # What each side says that the other does not, outside the conflicting families: subject
    # words and values of families the other side lacks.
    old_extra = set(old_only) | {
        f"{f}:{v}" for f, vs in old_values.items() if f not in new_values for v in vs
    }
    new_extra = set(new_only) | {
        f"{f}:{v}" for f, vs in new_values.items() if f not in old_values for v in vs
    }

    def result(kind: Conflict, detail: str, tension: bool) -> Comparison:
        return Comparison(kind, subject, changed, detail, tension)

    # An outgoing value must be one the old fact holds now, not one it itself retired.
    old_current = ({v for vs in old_values.values() for v in vs} | old.mentions) - (
        old.retired_mentions | old.retired_clause
    )
    old_value_tokens = {v for vs in old_values.values() for v in vs} - old.retired_mentions
    explicit = (new.retired_mentions & old_current) | (new.retired_clause & old_value_tokens)
    # The facts must share something besides the outgoing value itself: "Carla replaced Bob as
    # tech lead" says nothing about "Bob owns billing".
    kept_in_common = any(
        (old_values[f] & new_values[f]) - explicit for f in set(old_values) & set(new_values)
    )
    if explicit and ((shared and coverage >= SUBJECT_MIN_COVERAGE) or kept_in_common):
        return result(
            Conflict.EXPLICIT, "the new fact retires " + ", ".join(sorted(explicit)), True
        )

    tension = same_subject and bool(
        conflicts or adds or (new_extra and (new.change_cue or old_extra))
    )
    if old.negated != new.negated:
        values_agree = shared_values and not conflicts
        no_values = not old_values and not new_values
        if same_subject and not new_only and coverage >= 0.5 and (values_agree or no_values):
            polarity = "denies" if new.negated else "asserts"
            return result(
                Conflict.RETRACTION, f"the new fact {polarity} what the old one stated", True
            )
        if tension and new_only:
            return result(Conflict.REFINEMENT, "opposite polarity about a narrower subject", True)
        return result(Conflict.NONE, "a negation about another value: both can hold", tension)
    if not same_subject:
        detail = "different subjects" if not shared else "subjects overlap too little"
        return result(Conflict.NONE, detail, False)

    if new.change_cue:
        if not adds and not new_extra:
            return result(Conflict.NONE, "same content restated", False)
        if adds and new_extra and not old_extra:
            return result(
                Conflict.REFINEMENT,
                "the new fact names a narrower subject: maybe another entity",
                True,
            )
        if conflicts and old_only and new_only:
            # A subject word differs on each side *and* a value differs ("the search service
            # … 8080" / "the billing service now … 8081"): maybe another entity, not a change.
            return result(
                Conflict.REFINEMENT,
                "both a subject word and a value differ: maybe another entity",
                True,
            )
        if coverage < REPLACE_MIN_COVERAGE and (adds or old_extra):
            return result(
                Conflict.REFINEMENT, "the subjects only partly overlap: maybe another entity", True
            )
        if adds:
            return result(Conflict.CUE_CHANGE, "a stated change", True)
        if not old_extra:
            return result(Conflict.NONE, "adds detail", tension)
        if new_families:
            # The new fact speaks of another attribute (a day where the old one had a host).
            return result(Conflict.NONE, "a change of another attribute: both can hold", tension)
        if shared_values or len(old_extra) > 1 or len(new_extra) > 1:
            # Words changed, not a value: safe only when one word replaces one word and no
            # value is common to both ("Camille … paiements" / "Camille … facturation").
            return result(Conflict.REFINEMENT, "a change, but of what is unclear", True)
        return result(Conflict.CUE_CHANGE, "a stated change", True)

    if len(conflicts) == 1 and not old_extra and not new_extra:
        if conflicts[0] == ID:
            # Q3 vs Q4, eu-1 vs eu-2: identifiers often name the entity itself.
            return result(Conflict.REFINEMENT, "another identifier: maybe another entity", True)
        return result(Conflict.SWAP, "one value changed", True)
    if len(conflicts) == 1 and bool(old_extra) != bool(new_extra):
        return result(
            Conflict.REFINEMENT, "one fact names a narrower subject: maybe another entity", True
        )
    if len(conflicts) >= 2:
        return result(Conflict.NONE, "several values differ: another thing, not a change", tension)
    if conflicts:
        return result(Conflict.NONE, "different subjects", tension)
    if not changed and not old_only and not new_only:
        return result(Conflict.NONE, "duplicate", False)
    return result(Conflict.NONE, "compatible details", tension)


def _describe_changes(cmp: Comparison) -> str:
    parts = [f"{f} {', '.join(o)} → {', '.join(n)}" for f, o, n in cmp.changed]
    return "; ".join(parts)


def _age(delta: timedelta) -> str:
    seconds = abs(delta.total_seconds())
    if seconds >= 86400:
        return f"{seconds / 86400:.0f} d"
    if seconds >= 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 60:.0f} min"


class RulesJudge:
    """Deterministic judge built from general rules (no lookup of particular facts)."""

    @property
    def name(self) -> str:
        """``rules``."""
        return RULES_JUDGE_NAME

    def judge(self, old: Fact, new: Fact) -> Judgement:
        """Compare ``old`` (a current memory) with ``new`` (the incoming fact).

        Args:
            old: The current memory's text and valid time.
            new: The incoming fact's text and valid time.

        Returns:
            REPLACE, KEEP or UNCERTAIN with a one-line reason.
        """
        verdict, reason = decide(
            parse_fact(old.text), parse_fact(new.text), new.timestamp - old.timestamp
        )
        return Judgement(verdict=verdict, reason=reason, judge=self.name)


def decide(old: ParsedFact, new: ParsedFact, delta: timedelta) -> tuple[Verdict, str]:
    """The verdict for two parsed facts whose valid times differ by ``delta`` (new − old).

    Args:
        old: The parsed older memory.
        new: The parsed incoming fact.
        delta: ``new.timestamp - old.timestamp``.

    Returns:
        (verdict, reason).
    """
    old_tickets = old.values.get(TICKET, frozenset())
    new_tickets = new.values.get(TICKET, frozenset())
    if old_tickets and new_tickets and not old_tickets & new_tickets:
        items = f"{', '.join(sorted(old_tickets))} vs {', '.join(sorted(new_tickets))}"
        return Verdict.KEEP, f"different work items ({items}): both can be current"
    if old.environments and new.environments and not old.environments & new.environments:
        envs = f"{', '.join(sorted(old.environments))} vs {', '.join(sorted(new.environments))}"
        return Verdict.KEEP, f"different environments ({envs}): both can be current"

    cmp = compare(old, new)
    changes = _describe_changes(cmp)
    evidence = f"{cmp.detail}" + (f" ({changes})" if changes else "")

    if delta < -SAME_TIME:
        return Verdict.KEEP, (
            f"the new fact is backdated by {_age(delta)}: the old one is still the valid one"
            + (f"; {evidence}" if cmp.conflict in CONFLICTING else "")
        )
    if abs(delta) <= SAME_TIME:
        if cmp.conflict in CONFLICTING or (cmp.tension and cmp.changed):
            return Verdict.UNCERTAIN, (
                f"contradictory facts {_age(delta)} apart, no order to decide by: {evidence}"
            )
        return Verdict.KEEP, f"both can be current: {evidence}"
    if new.hedged:
        if cmp.conflict in CONFLICTING or cmp.tension:
            return Verdict.UNCERTAIN, f"the new fact is hedged or tentative: {evidence}"
        return Verdict.KEEP, f"a tentative remark that conflicts with nothing: {evidence}"
    if new.additive and cmp.conflict is not Conflict.EXPLICIT:
        return Verdict.KEEP, f"the new fact adds to the old one: {evidence}"
    if cmp.conflict in REPLACING:
        return Verdict.REPLACE, f"{evidence}; the new fact is {_age(delta)} later"
    if cmp.conflict is Conflict.REFINEMENT:
        return Verdict.UNCERTAIN, evidence
    return Verdict.KEEP, f"both can be current: {evidence}"
