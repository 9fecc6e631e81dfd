"""Statements that do not settle a value: trials, conditional and undated plans. Pure.

The label conventions the corpus authors were given (and the untouched split's author
too) put these with hedges and proposals: "trials / pilots / A/B tests → UNCERTAIN, even
with a concrete new value"; "undated or conditional plans ('eventually', 'if …') →
UNCERTAIN". They are categories of the spec, not words of one author's pairs, so they are
read here as a gate (decision 262) rather than left for the trees to find again in each
author's phrasing.
"""

from __future__ import annotations

import re

from nika_tui.domain.fact_parse import fold

# A trial of something on part of the traffic, a few users, for a while: not the new value.
_TRIAL = re.compile(
    r"(?<!\w)(?:a/b|ab test|a-b test|piloting|on trial|a trial of|trialing|trialling|trying|"
    r"experimenting|beta test|dry run|proof of concept|"
    r"en essai|on essaie|on teste|a l'essai|en pilote|en test)(?!\w)"
    r"|(?:^|[.;]\s*)(?:pilot|pilote|experiment|test|trial|essai)\b\s*[:(-]"
    # "Pilot with 50 clinic patients: …", "Trial in two rows …", "Expérimentation de trois
    # mois : …" (37 corpus pairs, all UNCERTAIN; decision 592). Only before a scope word:
    # "Pilot booking must be made 24 h before ETA" is a fact about a maritime pilot.
    r"|(?:^|[.;]\s*)(?:pilot|pilote|trial|experiment|experimentation|essai)s?\s+"
    r"(?:with|in|on|at|for|this|next|en|de|sur|chez|dans|avec|pour|pilote|scheme|program|"
    r"programme|run|phase|period|cours)\b"
)
# "If X, we'll …" / "si X, on …": a change that waits on a condition.
_CONDITIONAL = re.compile(
    r"(?:^|[.;:]\s*)(?:if|unless|should|si|au cas ou)\b[^.;]*?"
    r"\b(?:we'll|we will|will|would|we'd|on va|on passera|on fera|on pourra|"
    r"\w+(?:ra|rons|rez|ront))\b"
    # "If the permits come through, the concert moves to the castle park": a condition
    # opening the sentence, whatever the tense (41 corpus pairs, all UNCERTAIN; decision
    # 592). A longer clause is more often a standing rule ("If the primary doesn't ack a
    # page within 15 minutes it escalates …, then …").
    r"|(?:^|[.;]\s*)(?:if|si|unless|provided)\b[^.;,]{0,60},"
)
# A plan with no date: "eventually", "at some point", "à terme", "un jour".
_UNDATED = re.compile(
    r"(?<!\w)(?:eventually|at some point|some day|someday|down the road|in the long run|"
    r"long term|longer term|one day|we'd like to|we would like to|a terme|un jour|"
    r"on voudrait|on aimerait|a long terme|tot ou tard)(?!\w)"
)


def unsettled(text: str) -> bool:
    """Whether ``text`` states a trial, a conditional plan or an undated plan.

    Args:
        text: A fact.

    Returns:
        True when the sentence does not claim a present value by the spec's conventions.
    """
    folded = fold(text).replace("’", "'")
    return bool(_TRIAL.search(folded) or _CONDITIONAL.search(folded) or _UNDATED.search(folded))
