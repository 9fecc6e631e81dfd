"""Stance cues of one sentence, English and French, for the learned judge. Pure.

Each list is general vocabulary (no word of a particular fact): how people write that a value
is hedged, planned, proposed, asked about, temporary, retracted, reaffirmed, added to, complete
as listed, or changed. Matched accent-free and lower case, on word boundaries, longest phrase
first. A cue is evidence for the model, not a decision: only the gates of
:mod:`~nika_tui.domain.judge_model` act on a few of them, and only to prevent a REPLACE.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nika_tui.domain.fact_parse import TOO_AS_INTENSIFIER, fold
from nika_tui.domain.fact_vocabulary import STOPWORDS

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
# A decision about the future that an old fact can state and a later one can call off
# ("we will migrate…", "starting next month…", "on va supprimer…").
INTENT_CUES: tuple[str, ...] = (
    *PLAN_CUES,
    "starting",
    "adopting",
    "we're adopting",
    "we are adopting",
    "switching",
    "moving to",
    "will be",
    "from next",
    "a partir du",
    "a partir de",
    "sera",
    "seront",
    "ajoute",
    "on ajoute",
    "va etre",
    "vont etre",
    "demande",
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
    "on the table",
    "trialling",
    "trialing",
    "piloting",
    "evaluating",
    "spike",
    "en test",
    "on teste",
    "a l'etude",
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
    "nothing official",
    "if i remember",
    "pretty sure",
    "should be",
    "looks like",
    "seems",
    "there's talk",
    "talk of",
    "plutot",
    "on envisage",
    "on parle de",
    "rien n'est acte",
    "iirc",
    "peut-etre",
    "peut etre",
    "il parait",
    "apparemment",
    "je crois",
    "je pense",
    "a confirmer",
    "a verifier",
    "pas sur",
    "rien n'est decide",
    "rien de decide",
    "rien d'officiel",
    "semble",
    "serait",
    "aurait",
    "quitterait",
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
    "tomorrow only",
    "today only",
    "only this",
    "exceptionally",
    "while",
    "temporairement",
    "temporaire",
    "pour l'instant",
    "jusqu'a",
    "jusqu'au",
    "pendant",
    "le temps de",
    "exceptionnellement",
    "cette semaine seulement",
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
    "forget",
    "scratch",
    "after all",
    "called off",
    "vetoed",
    "didn't actually",
    "did not actually",
    "correction",
    "erratum",
    "rectificatif",
    "rectification",
    "je corrige",
    "my bad",
    "my mistake",
    "mea culpa",
    "typo",
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
    "oubliez",
    "oublie",
    "laissez tomber",
    "laisse tomber",
    "annule",
    "annulee",
    "abandonne",
)
# "…staying on X", "on garde X": the new sentence keeps a value rather than setting one.
REAFFIRM_CUES: tuple[str, ...] = (
    "stays",
    "stay",
    "staying",
    "remains",
    "remain",
    "keep",
    "keeping",
    "sticking with",
    "unchanged",
    "still",
    "reste",
    "restent",
    "on reste",
    "on garde",
    "garde",
    "inchange",
    "inchangee",
    "toujours",
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
# The new list is the whole list: a removed or swapped item retires the old list.
COMPLETE_CUES: tuple[str, ...] = (
    "only",
    "exactly",
    "the full list",
    "the list is",
    "are now",
    "is now",
    "after the cleanup",
    "after pruning",
    "uniquement",
    "seulement",
    "seuls",
    "seules",
    "la liste complete",
)
# Verbs and markers of a new value taking effect, beyond the parser's change cues.
UPDATE_CUES: tuple[str, ...] = (
    "since",
    "now",
    "from now on",
    "as of",
    "is out",
    "went",
    "got",
    "was moved",
    "were moved",
    "pushed",
    "slipped",
    "cut",
    "relaxed",
    "tightened",
    "extended",
    "shortened",
    "handed",
    "passed",
    "took over",
    "flashed",
    "rolled out",
    "released",
    "removed",
    "archived",
    "gone",
    "shut off",
    "switched off",
    "turned on",
    "turned off",
    "enabled",
    "disabled",
    "is back",
    "again",
    "fixed",
    "resized",
    "upgraded",
    "bumped",
    "replaced",
    "retired",
    "left",
    "discontinued",
    "stopped",
    # A new reading of a measured thing ("backlog down to 21", "budget revu à 102 k€").
    "down to",
    "up from",
    "down from",
    "revised",
    "revu",
    "revue",
    "rose to",
    "fell to",
    "grew to",
    "climbed to",
    "dropped to",
    "reached",
    "renewed",
    "relicensed",
    "cutover",
    "passe a",
    "passee a",
    "passes a",
    # Commit-message style states a change in the imperative ("bump gatk 4.4 -> 4.5",
    # "raise per-line quantity cap to 25"). Only verbs that are no noun and no standing
    # procedure: "switch", "upgrade", "move", "drop", "replace the filter" are (decision 588).
    "bump",
    "bumps",
    "raise",
    "raises",
    "migrate",
    "migrates",
    "desormais",
    "maintenant",
    "depuis",
    "dorenavant",
    "est passe",
    "est passee",
    "sont passes",
    "a ete",
    "ont ete",
    "repousse",
    "decale",
    "remplace",
    "supprime",
)
# Firm enough to say "not yet": "will" and "on va" also announce present changes ("deploys
# will go through Argo from now on"), so they are not here.
DATED_PLAN_CUES: tuple[str, ...] = (
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


def _cue_pattern(cues: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(c) for c in sorted(set(cues), key=lambda c: (-len(c), c)))
    # Grouped: without the group the boundaries bind only the first and last alternatives,
    # and "as of" matched inside "replicas of" (decision 267).
    return re.compile(rf"(?<![\w])(?:{alternatives})(?![\w])")


_PLAN = _cue_pattern(PLAN_CUES)
_INTENT = _cue_pattern(INTENT_CUES)
_PROPOSAL = _cue_pattern(PROPOSAL_CUES)
_FRENCH_OFFER = re.compile(
    r"\b(?:ne |n')?propos(?:e|ent|ons)\b"
    r"(?= (?:plus|desormais|maintenant|aussi|le|la|les|l'|des|du|un|une|d'|\d))"
)
"""French "propose" as "offers" ("le parking ne propose plus l'abonnement vélo"): a
state, not a proposal (decision 592). English proposes "to" or "that"."""
_HEDGE = _cue_pattern(HEDGE_CUES)
_TEMPORARY = _cue_pattern(TEMPORARY_CUES)
_RETRACTION = _cue_pattern(RETRACTION_CUES)
_REAFFIRM = _cue_pattern(REAFFIRM_CUES)
_ADDITIVE = _cue_pattern(ADDITIVE_CUES)
_COMPLETE = _cue_pattern(COMPLETE_CUES)
_UPDATE = _cue_pattern(UPDATE_CUES)
_DATED_PLAN = _cue_pattern(DATED_PLAN_CUES)
# "We're not doing X", "not going with X", "on ne passe pas à X": a change called off.
_CALLED_OFF = re.compile(
    r"\b(?:not|n't|no longer|ne|n')\s+(?:\w+\s+){0,2}?"
    r"(?:doing|going|moving|switching|adopting|passing|migrating|passe|va|fera|bascule)\b"
)


_CHANGE_VERB = (
    r"(?:moved|moving|switched|switching|changed|changing|went|migrated|migrating|raised|lowered"
    r"|increased|decreased|reduced|cut|bumped|upgraded|downgraded|dropped|extended|shortened"
    r"|swapped|revised|updated|reset|passe|passee|passes|passees|augmente|augmentee|reduit"
    r"|reduite|baisse|baissee|releve|relevee|ramene|ramenee|change|changee|migre|migree"
    r"|bascule|basculee)"
)
# A stated transition from one value to another: "3m -> 10m", "4 → 6", "moved from Trapeze
# to Optibus", "replaced Sift with Kount", "passé de 3 à 5", "remplacé par", "handed over to".
# Read on the folded text. Authors write updates this way without any other cue, and the
# arrow is never a change cue of the parser (decision 588).
_TRANSITION = re.compile(
    r"(?:->|→|=>|⇒)"
    rf"|\b{_CHANGE_VERB}\b[^.;]{{0,40}}?\bfrom\b[^.;]{{1,60}}?\bto\b"
    rf"|\b{_CHANGE_VERB}\s+(?:de|du|des)\s+[^.;]{{1,40}}?\s+(?:a|au|aux)\s"
    r"|\breplac(?:ed|ing|es)\b[^.;]{1,60}?\b(?:with|by)\b|\breplaced by\b"
    r"|\bremplace\w*\b[^.;]{0,40}?\bpar\b|\bswapped (?:out )?(?:for|to)\b"
    r"|\bhanded (?:it )?over\b|\btook over from\b|\bpasse la main\b"
)


def states_transition(text: str) -> bool:
    """The sentence states a change from one value to another (see ``_TRANSITION``)."""
    return bool(_TRANSITION.search(fold(text)))


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
    intent: bool = False
    """Announces a decision about the future (an old fact that a later one can call off)."""
    reaffirm: bool = False
    """Keeps a value ("stays on", "on garde")."""
    complete: bool = False
    """Presents its list or value as the whole of it ("only", "exactly", "seulement")."""
    update: bool = False
    """Marks a new value taking effect ("since", "now", "pushed to", "désormais")."""
    dated_plan: bool = False
    """A firm, dated plan: the present value holds until then."""


def stance(text: str) -> Stance:
    """Read the stance cues of one sentence (English and French).

    Args:
        text: A fact.

    Returns:
        Which cues it carries.
    """
    folded = fold(text).replace("’", "'")
    called_off = bool(_CALLED_OFF.search(folded))
    return Stance(
        hedge=bool(_HEDGE.search(folded)),
        plan=bool(_PLAN.search(folded)),
        proposal=bool(_PROPOSAL.search(_FRENCH_OFFER.sub("", folded))),
        question="?" in text,
        temporary=bool(_TEMPORARY.search(folded)),
        retraction=bool(_RETRACTION.search(folded)) or called_off,
        additive=bool(_ADDITIVE.search(TOO_AS_INTENSIFIER.sub("", folded))),
        intent=bool(_INTENT.search(folded)),
        reaffirm=bool(_REAFFIRM.search(folded)),
        complete=bool(_COMPLETE.search(folded)),
        update=bool(_UPDATE.search(folded)),
        dated_plan=bool(_DATED_PLAN.search(folded)),
    )


_WORDS = re.compile(r"[a-z0-9][a-z0-9'_-]*")
# Where a short fact's subject ends: the first verb, or a colon.
_SUBJECT_END = frozenset(
    (
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "got",
        "gets",
        "get",
        "runs",
        "run",
        "uses",
        "use",
        "goes",
        "go",
        "lives",
        "live",
        "moved",
        "changed",
        "changes",
        "held",
        "holds",
        "handles",
        "owns",
        "listens",
        "points",
        "sits",
        "stays",
        "went",
        "became",
        "est",
        "sont",
        "etait",
        "etaient",
        "a",
        "ont",
        "passe",
        "tourne",
        "utilise",
        "va",
        "vont",
        "gere",
    )
)
_ARTICLES = frozenset(("the", "le", "la", "les", "l'", "our", "notre", "nos"))


def subject_words(text: str) -> tuple[str, ...]:
    """The words of the sentence's subject: up to its first verb or colon (folded).

    A heuristic for short facts ("The catalog database is 180 GB" → the, catalog, database);
    empty when no verb or colon comes within the first eight words.
    """
    folded = fold(text).replace("’", "'")
    head = folded.split(":", 1)[0] if ":" in folded[:60] else folded
    words = _WORDS.findall(head)
    for i, word in enumerate(words[:8]):
        if word in _SUBJECT_END:
            return tuple(words[:i])
    return tuple(words) if ":" in folded[:60] else ()


def bare_subject(old: str, new: str) -> bool:
    """The new fact names its subject with fewer qualifiers than the old one and none of its
    own ("The database is at 420 GB" after "The catalog database is 180 GB"): it may be
    about another entity of the same kind."""
    so, sn = subject_words(old), subject_words(new)
    if not so or not sn or sn[0] not in _ARTICLES:
        return False
    content_old = {w.split("'")[0] for w in so} - _ARTICLES - STOPWORDS
    content_new = {w.split("'")[0] for w in sn} - _ARTICLES - STOPWORDS
    return bool(content_new) and content_new < content_old
