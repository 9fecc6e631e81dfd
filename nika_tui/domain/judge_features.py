"""What the learned judge sees of one (old, new) pair: a fixed vector of named numbers. Pure.

Three kinds of evidence, each general (no word of a particular fact, no id of a data set):

- **slot similarity** from the embedder, computed by the caller and passed in
  (:class:`PairSimilarity`): the cosine of the two sentences, and of the two sentences with
  their values masked (:func:`~nika_tui.domain.fact_parse.mask_values`) — "same attribute of the
  same thing, another value" scores high on the masked cosine even when the wording changes;
- **value changes by family** (hosts/URLs, versions, numbers, days, names, ids, statuses…) and
  the rules judge's own reading (:func:`~nika_tui.domain.judge_rules.compare`), as features;
- **stance** of each sentence: hedges, plans, proposals, questions, temporary changes,
  retractions (English and French);
- the **slot logits** of :mod:`nika_tui.domain.judge_projection`: a linear read-out of the
  two sentences' embeddings (value-masked and full), fitted with the trees.

The valid-time gap is **not** a feature (decision 260): it only gates — a backdated fact never
retires a newer one, and two facts of the same minute have no order unless the new one says it
corrects the old. Authors who wrote updates months after the old fact taught an earlier model
that "long gap means update", and it missed updates stated days apart.

A missing embedder gives ``PairSimilarity(None, None)``: the lexical subject overlap stands in
and the slot logits are zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from nika_tui.domain.fact_parse import ParsedFact, join_digit_groups, parse_fact
from nika_tui.domain.judge_cues import bare_subject, stance, states_transition
from nika_tui.domain.judge_entity import (
    align,
    distinct_handles,
    numbered_sibling,
    one_value_changed,
    sibling_entity,
    unresolved_subject,
    unshared_words,
)
from nika_tui.domain.judge_rules import Conflict, compare, decide
from nika_tui.domain.judge_trials import unsettled
from nika_tui.domain.quantities import same_quantities
from nika_tui.domain.verdicts import Fact, Verdict

# Items of a list: commas, "and", "+". Not a colon ("Open RFIs: 37" is a key and a value) and
# not a slash ("10 h/week", "€/mot" are units), decision 589.
_LIST_SPLIT = re.compile(r",|;|\band\b|\bet\b|\+")


@dataclass(frozen=True, slots=True)
class PairSimilarity:
    """Cosines computed by the embedder (``None`` when no embedder is at hand)."""

    full: float | None
    """Cosine of the two sentences."""
    masked: float | None
    """Cosine of the two sentences with their values masked: same slot?"""
    slot: tuple[float, ...] | None = None
    """The model's slot logits for the pair (:mod:`~nika_tui.domain.judge_projection`);
    ``None`` while training (filled in by the fit) or without an embedder."""
    entity: float | None = None
    """Cosine of the words only the old fact has against the words only the new one has
    (:func:`~nika_tui.domain.judge_entity.unshared_words`); 1.0 when a side has none."""
    swap: float | None = None
    """The lowest cosine of two word spans swapped at the same place once the sentences are
    aligned (:func:`~nika_tui.domain.judge_entity.align`); 1.0 when nothing was swapped."""


def _values(p: ParsedFact) -> set[tuple[str, str]]:
    return {(family, v) for family, vals in p.values.items() for v in vals}


def _list_size(text: str) -> int:
    return len([part for part in _LIST_SPLIT.split(text) if part.strip()])


def _overlap(a: frozenset[str], b: frozenset[str]) -> tuple[float, float]:
    """(Jaccard, containment of the smaller set) of two stem sets."""
    if not a or not b:
        return 0.0, 0.0
    shared = len(a & b)
    return shared / len(a | b), shared / min(len(a), len(b))


FEATURE_NAMES: tuple[str, ...] = (
    "cos_full",
    "cos_masked",
    "cos_gap",
    "subject_jaccard",
    "subject_containment",
    "rules_replace",
    "rules_uncertain",
    "conflict_explicit",
    "conflict_retraction",
    "conflict_swap",
    "conflict_cue",
    "conflict_refinement",
    "tension",
    "families_changed",
    "values_shared",
    "values_new_only",
    "values_old_only",
    "any_value_changed",
    "old_values_kept",
    "words_new_only",
    "words_old_only",
    "env_one_side",
    "new_hedge",
    "new_plan",
    "new_dated_plan",
    "new_proposal",
    "new_question",
    "new_unsettled",
    "new_temporary",
    "new_retraction",
    "new_additive",
    "new_reaffirm",
    "new_complete",
    "new_update",
    "new_change_cue",
    "new_negated",
    "polarity_flip",
    "old_hedge_or_plan",
    "old_intent",
    "old_temporary",
    "retracts_intent",
    "reaffirms_state",
    "bare_subject",
    "list_growth",
    "list_items",
    "quantities_restated",
    "quantities_changed",
    "new_less_specific",
    "length_ratio",
    "entity_cos",
    "entity_both",
    "swap_cos",
    "swap_count",
    "value_edits",
    "word_edits",
    "align_ratio",
    "new_transition",
    "slot_replace",
    "slot_keep",
    "slot_uncertain",
    "slot_unrelated",
)
SLOT_FEATURES = slice(len(FEATURE_NAMES) - 4, len(FEATURE_NAMES))
"""Where the slot logits sit in the vector (the fit replaces them out of fold)."""


@dataclass(frozen=True, slots=True)
class PairFeatures:
    """The features of one pair, plus the gates decided before (or around) any model."""

    values: tuple[float, ...]
    backdated: bool
    same_time: bool
    rules_verdict: Verdict
    rules_reason: str
    tentative: bool = False
    """The new fact is hedged, a question, a proposal, a trial, or a conditional or undated
    plan: it does not claim a present value, so it is UNCERTAIN whatever the model says
    (the spec's conventions, decision 262)."""
    provisional: bool = False
    """The new fact is a temporary change or a firm dated plan: the old value is still the
    standing one (KEEP)."""
    additive: bool = False
    """The new fact adds ("also", "aussi") and retracts nothing."""
    other_entity: bool = False
    """The two facts name different environments or different work items."""
    reaffirms: bool = False
    """The new fact calls off a change the old one never stated and keeps a value ("forget
    what I said about X, we stay on Y" against "we use Y"): it confirms the old fact (KEEP)."""
    value_only: bool = False
    """The new fact is the old sentence with only its values changed ("Rate limit on orders:
    500/min" → "… 777/min"): by the definition of REPLACE, an update unless it is hedged,
    temporary or additive."""
    unresolved: bool = False
    """The old fact gives one value for two things together and the new one names at most one
    of them ("Stores 118 and 181 both close at 22:00" / "The store now closes at 23:00"):
    UNCERTAIN whatever the model says (decision 536)."""
    correction: bool = False
    """The new fact says it corrects or retracts ("Correction:", "scratch that",
    "finalement"): a same-minute pair is then ordered after all."""

    @property
    def gated(self) -> bool:
        """Decided by a gate whatever the model says (backdated, another entity, same time
        without a correction): not an example the model learns the content question from."""
        return self.backdated or self.other_entity or (self.same_time and not self.correction)

    def as_dict(self) -> dict[str, float]:
        """Feature name → value (for reading)."""
        return dict(zip(FEATURE_NAMES, self.values, strict=True))


SAME_MINUTE = timedelta(seconds=60)
"""Facts this close in valid time have no order (the authors' "same minute"): the pair is
UNCERTAIN unless the new fact corrects the old or the model is sure both hold. A fix stated
a few minutes later is an ordinary, ordered update."""


def with_slot(features: PairFeatures, logits: Sequence[float]) -> PairFeatures:
    """``features`` with its slot logits replaced (the fit sets them out of fold)."""
    values = list(features.values)
    values[SLOT_FEATURES] = list(logits)
    return replace(features, values=tuple(values))


def as_read(fact: Fact) -> Fact:
    """``fact`` as the features read it: digit groups joined ("1,142" is one number)."""
    text = join_digit_groups(fact.text)
    return fact if text == fact.text else replace(fact, text=text)


def pair_features(old: Fact, new: Fact, sim: PairSimilarity) -> PairFeatures:
    """Extract the features of (old, new).

    Args:
        old: The current memory.
        new: The incoming fact.
        sim: The embedder's cosines for the pair (``None`` fields when unavailable).

    Returns:
        The feature vector in :data:`FEATURE_NAMES` order and the gates.
    """
    old, new = as_read(old), as_read(new)
    po, pn = parse_fact(old.text), parse_fact(new.text)
    delta: timedelta = new.timestamp - old.timestamp
    cmp = compare(po, pn)
    rules_verdict, rules_reason = decide(po, pn, delta)
    so, sn = stance(old.text), stance(new.text)
    vo, vn = _values(po), _values(pn)
    families_changed = sum(
        1 for family in set(po.values) & set(pn.values) if po.values[family] != pn.values[family]
    )
    jaccard, containment = _overlap(po.content, pn.content)
    old_only, new_only = unshared_words(old.text, new.text)
    aligned = align(old.text, new.text)
    # A correction ("Correction:", "finalement pas mardi") is about the old fact's own
    # thing, whatever the words it swaps on the way.
    transition = states_transition(new.text)
    # "FDC fab 2 -> fdc-f2-b": a stated transition names the old thing's new value.
    named = sibling_entity(aligned) or numbered_sibling(old.text, new.text)
    sibling = (named and not sn.retraction and not transition) or (
        # An explicit change ("migrated to", "replaces", "Correction:") says the new
        # identifier is the new value of the old thing, not another thing.
        distinct_handles(old.text, new.text)
        and not (pn.change_cue or sn.update or sn.complete or sn.retraction or pn.hedged)
        and not (sn.hedge or sn.question or sn.proposal or unsettled(new.text))
    )
    full = sim.full if sim.full is not None else jaccard
    masked = sim.masked if sim.masked is not None else containment
    env_differ = bool(po.environments and pn.environments and not po.environments & pn.environments)
    env_one_side = bool(po.environments) != bool(pn.environments)
    to, tn = po.values.get("ticket", frozenset()), pn.values.get("ticket", frozenset())
    restated, q_changed = same_quantities(old.text, new.text)
    hedged = sn.hedge or pn.hedged
    trial = unsettled(new.text) and not (sn.temporary or sn.dated_plan)
    old_intent = so.intent and not so.temporary
    # Calling off *another* change keeps the old fact only when the old fact's values are the
    # ones kept ("forget what I said about Mollie, we are staying on Stripe"). When the old
    # fact is itself the change called off ("pickup moved to P2" / "ignore that, still at
    # P4"), its value is not kept and it is the one retracted (decision 589).
    reaffirms = sn.retraction and sn.reaffirm and not old_intent and bool(vo) and vo <= vn
    flags = (
        float(rules_verdict is Verdict.REPLACE),
        float(rules_verdict is Verdict.UNCERTAIN),
        float(cmp.conflict is Conflict.EXPLICIT),
        float(cmp.conflict is Conflict.RETRACTION),
        float(cmp.conflict is Conflict.SWAP),
        float(cmp.conflict is Conflict.CUE_CHANGE),
        float(cmp.conflict is Conflict.REFINEMENT),
        float(cmp.tension),
    )
    values = (
        full,
        masked,
        masked - full,
        jaccard,
        containment,
        *flags,
        float(families_changed),
        float(len(vo & vn)),
        float(len(vn - vo)),
        float(len(vo - vn)),
        float(bool(vn - vo) and bool(vo - vn)),
        float(bool(vo) and vo <= vn),
        float(len(pn.content - po.content)),
        float(len(po.content - pn.content)),
        float(env_one_side),
        float(hedged),
        float(sn.plan),
        float(sn.dated_plan),
        float(sn.proposal),
        float(sn.question),
        float(trial),
        float(sn.temporary),
        float(sn.retraction),
        float(sn.additive),
        float(sn.reaffirm),
        float(sn.complete),
        float(sn.update),
        float(pn.change_cue),
        float(pn.negated),
        float(po.negated != pn.negated),
        float(so.hedge or so.plan or so.proposal or so.question),
        float(old_intent),
        float(so.temporary),
        float(sn.retraction and old_intent),
        float(reaffirms),
        float(bare_subject(old.text, new.text)),
        float(_list_size(new.text) - _list_size(old.text)),
        float(min(_list_size(new.text), _list_size(old.text))),
        float(restated),
        float(q_changed),
        float(bool(pn.content) and pn.content < po.content),
        math.log((len(new.text) + 1) / (len(old.text) + 1)),
        sim.entity if sim.entity is not None else float(not (old_only and new_only)),
        float(bool(old_only and new_only)),
        sim.swap if sim.swap is not None else float(not aligned.word_swaps),
        float(len(aligned.word_swaps)),
        float(aligned.value_edits),
        float(aligned.word_edits),
        aligned.ratio,
        float(transition),
        *(sim.slot if sim.slot is not None else (0.0, 0.0, 0.0, 0.0)),
    )
    return PairFeatures(
        values=values,
        backdated=delta < -SAME_MINUTE,
        same_time=abs(delta) <= SAME_MINUTE,
        rules_verdict=rules_verdict,
        rules_reason=rules_reason,
        tentative=hedged or sn.question or sn.proposal or trial,
        provisional=sn.temporary or sn.dated_plan,
        additive=(sn.additive or pn.additive) and not sn.retraction,
        reaffirms=reaffirms,
        correction=sn.retraction and not reaffirms,
        other_entity=env_differ or bool(to and tn and not to & tn) or sibling,
        value_only=one_value_changed(aligned),
        unresolved=unresolved_subject(old.text, new.text),
    )
