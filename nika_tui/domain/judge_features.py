"""What the learned judge sees of one (old, new) pair: a fixed vector of named numbers. Pure.

Three kinds of evidence, each general (no word of a particular fact, no id of a data set):

- **slot similarity** from the embedder, computed by the caller and passed in
  (:class:`PairSimilarity`): the cosine of the two sentences, and of the two sentences with
  their values masked (:func:`~nika_tui.domain.fact_parse.mask_values`) — "same attribute of the
  same thing, another value" scores high on the masked cosine even when the wording changes;
- **value changes by family** (hosts/URLs, versions, numbers, days, names, ids, statuses…) and
  the rules judge's own reading (:func:`~nika_tui.domain.judge_rules.compare`), as features;
- **stance** of each sentence: hedges, plans, proposals, questions, temporary changes,
  retractions (English and French), and **valid-time order**.

A missing embedder gives ``PairSimilarity(None, None)``: the lexical subject overlap stands in.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import timedelta

from nika_tui.domain.fact_parse import ParsedFact, fold, parse_fact
from nika_tui.domain.judge_rules import SAME_TIME, Conflict, compare, decide
from nika_tui.domain.quantities import same_quantities
from nika_tui.domain.verdicts import Fact, Verdict

# Stance cues, accent-free lower case, matched on word boundaries. General vocabulary only.
PLAN_CUES: tuple[str, ...] = (
    "booked",
    "planned for",
    "scheduled for",
    "will",
    "going to",
    "plan",
    "plans",
    "planned",
    "planning",
    "next week",
    "next month",
    "next quarter",
    "next sprint",
    "scheduled",
    "roadmap",
    "target",
    "by end of",
    "once",
    "prevu",
    "prevue",
    "on va",
    "va passer",
    "vont",
    "compte",
    "d'ici",
    "le mois prochain",
    "la semaine prochaine",
    "au prochain",
    "planifie",
)
PROPOSAL_CUES: tuple[str, ...] = (
    "proposing",
    "please comment",
    "vote",
    "thoughts?",
    "should we",
    "we should",
    "what if",
    "how about",
    "suggest",
    "suggested",
    "propose",
    "proposed",
    "proposal",
    "idea",
    "could we",
    "let's consider",
    "rfc",
    "draft",
    "on pourrait",
    "je propose",
    "proposition",
    "suggere",
    "et si",
    "faudrait",
    "devrait",
    "devrions",
)
HEDGE_CUES: tuple[str, ...] = (
    "maybe",
    "might",
    "perhaps",
    "probably",
    "possibly",
    "not sure",
    "i think",
    "i believe",
    "i guess",
    "apparently",
    "rumour",
    "rumor",
    "heard",
    "someone said",
    "unconfirmed",
    "tbc",
    "tbd",
    "not decided",
    "nothing is decided",
    "if i remember",
    "pretty sure",
    "should be",
    "plutot",
    "on envisage",
    "on parle de",
    "rien n'est acte",
    "iirc",
    "peut-etre",
    "peut etre",
    "il parait",
    "je crois",
    "je pense",
    "a confirmer",
    "a verifier",
    "pas sur",
    "rien n'est decide",
    "rien de decide",
    "semble",
    "serait",
    "aurait",
    "rumeur",
    "on m'a dit",
    "si je me souviens",
)
TEMPORARY_CUES: tuple[str, ...] = (
    "temporarily",
    "temporary",
    "for now",
    "until",
    "for the time being",
    "during",
    "this week only",
    "while",
    "temporairement",
    "temporaire",
    "pour l'instant",
    "jusqu'a",
    "jusqu'au",
    "pendant",
    "le temps de",
)
RETRACTION_CUES: tuple[str, ...] = (
    "no longer",
    "not anymore",
    "anymore",
    "any more",
    "was wrong",
    "is wrong",
    "ignore",
    "disregard",
    "correction",
    "actually",
    "turns out",
    "scrap",
    "cancelled",
    "canceled",
    "rolled back",
    "reverted",
    "n'est plus",
    "ne sont plus",
    "plus de",
    "etait faux",
    "erreur",
    "en fait",
    "finalement",
    "annule",
    "annulee",
    "abandonne",
)
ADDITIVE_CUES: tuple[str, ...] = (
    "too",
    "also",
    "as well",
    "additionally",
    "in addition",
    "besides",
    "alongside",
    "on top of",
    "aussi",
    "egalement",
    "en plus",
    "de plus",
    "en complement",
)


def _cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(c) for c in sorted(cues, key=len, reverse=True))
    return re.compile(rf"(?<![\w]){alternatives}(?![\w])")


_PLAN = _cue_pattern(PLAN_CUES)
_PROPOSAL = _cue_pattern(PROPOSAL_CUES)
_HEDGE = _cue_pattern(HEDGE_CUES)
_TEMPORARY = _cue_pattern(TEMPORARY_CUES)
_RETRACTION = _cue_pattern(RETRACTION_CUES)
_ADDITIVE = _cue_pattern(ADDITIVE_CUES)
# The plan cues firm enough to say "not yet": the gate ignores "will"/"on va", which also
# announce present changes ("deploys will go through Argo from now on").
_DATED_PLAN = _cue_pattern(
    (
        "booked",
        "planned for",
        "scheduled for",
        "next week",
        "next month",
        "next quarter",
        "next sprint",
        "prevu",
        "prevue",
        "planifie",
        "le mois prochain",
        "la semaine prochaine",
    )
)
_LIST_SPLIT = re.compile(r",|\band\b|\bet\b|\+|/")


@dataclass(frozen=True, slots=True)
class PairSimilarity:
    """Cosines computed by the embedder (``None`` when no embedder is at hand)."""

    full: float | None
    """Cosine of the two sentences."""
    masked: float | None
    """Cosine of the two sentences with their values masked: same slot?"""


@dataclass(frozen=True, slots=True)
class Stance:
    """How one sentence states its content."""

    hedge: bool
    plan: bool
    proposal: bool
    question: bool
    temporary: bool
    retraction: bool
    additive: bool


def stance(text: str) -> Stance:
    """Read the stance cues of one sentence (English and French).

    Args:
        text: A fact.

    Returns:
        Which cues it carries.
    """
    folded = fold(text).replace("’", "'")
    return Stance(
        hedge=bool(_HEDGE.search(folded)),
        plan=bool(_PLAN.search(folded)),
        proposal=bool(_PROPOSAL.search(folded)),
        question="?" in text,
        temporary=bool(_TEMPORARY.search(folded)),
        retraction=bool(_RETRACTION.search(folded)),
        additive=bool(_ADDITIVE.search(folded)),
    )


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
    "env_differ",
    "env_one_side",
    "tickets_differ",
    "new_hedge",
    "new_plan",
    "new_proposal",
    "new_question",
    "new_temporary",
    "new_retraction",
    "new_additive",
    "new_change_cue",
    "new_negated",
    "polarity_flip",
    "old_hedge_or_plan",
    "old_temporary",
    "list_growth",
    "quantities_restated",
    "quantities_changed",
    "new_less_specific",
    "length_ratio",
    "log_days",
)


@dataclass(frozen=True, slots=True)
class PairFeatures:
    """The features of one pair, plus the two gates decided before any model."""

    values: tuple[float, ...]
    backdated: bool
    same_time: bool
    rules_verdict: Verdict
    rules_reason: str
    tentative: bool = False
    """The new fact is hedged, a question, a proposal, a dated plan or a temporary change: it
    does not state a present value, so it never retires one."""
    additive: bool = False
    """The new fact adds ("also", "aussi") and retracts nothing."""

    def as_dict(self) -> dict[str, float]:
        """Feature name → value (for reading and for the reason)."""
        return dict(zip(FEATURE_NAMES, self.values, strict=True))


def pair_features(old: Fact, new: Fact, sim: PairSimilarity) -> PairFeatures:
    """Extract the features of (old, new).

    Args:
        old: The current memory.
        new: The incoming fact.
        sim: The embedder's cosines for the pair (``None`` fields when unavailable).

    Returns:
        The feature vector in :data:`FEATURE_NAMES` order and the time gates.
    """
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
    full = sim.full if sim.full is not None else jaccard
    masked = sim.masked if sim.masked is not None else containment
    env_differ = bool(po.environments and pn.environments and not po.environments & pn.environments)
    env_one_side = bool(po.environments) != bool(pn.environments)
    to, tn = po.values.get("ticket", frozenset()), pn.values.get("ticket", frozenset())
    restated, q_changed = same_quantities(old.text, new.text)
    days = max(delta.total_seconds(), 0.0) / 86400.0
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
        float(env_differ),
        float(env_one_side),
        float(bool(to and tn and not to & tn)),
        float(sn.hedge or pn.hedged),
        float(sn.plan),
        float(sn.proposal),
        float(sn.question),
        float(sn.temporary),
        float(sn.retraction),
        float(sn.additive),
        float(pn.change_cue),
        float(pn.negated),
        float(po.negated != pn.negated),
        float(so.hedge or so.plan or so.proposal or so.question),
        float(so.temporary),
        float(_list_size(new.text) - _list_size(old.text)),
        float(restated),
        float(q_changed),
        float(bool(pn.content) and pn.content < po.content),
        math.log((len(new.text) + 1) / (len(old.text) + 1)),
        math.log1p(days),
    )
    return PairFeatures(
        values=values,
        backdated=delta < -SAME_TIME,
        same_time=abs(delta) <= SAME_TIME,
        rules_verdict=rules_verdict,
        rules_reason=rules_reason,
        tentative=sn.hedge
        or pn.hedged
        or sn.question
        or sn.proposal
        or sn.temporary
        or bool(_DATED_PLAN.search(fold(new.text))),
        additive=(sn.additive or pn.additive) and not sn.retraction,
    )
