"""Trials, conditional and undated plans do not settle a value (decision 262)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.judge_features import FEATURE_NAMES, PairSimilarity, pair_features
from nika_tui.domain.judge_model import JudgeModel, decide_pair
from nika_tui.domain.judge_trials import unsettled
from nika_tui.domain.verdicts import Fact, Verdict

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Case(NamedTuple):
    test_id: str
    text: str
    unsettled: bool


@pytest.mark.parametrize(
    "case",
    [
        Case("ab-test", "A/B: personalized artwork on home rows for 10% of users.", True),
        Case("pilot-prefix", "Pilot: five electric vans on Austin routes for 6 weeks.", True),
        Case("trying", "Trying pre-moderation of discussion posts for a month.", True),
        Case("conditional", "If the pass rate stays below 50%, we'll lower it to 70%.", True),
        Case("conditional-fr", "Si le budget passe, les tournées seront faites par des CDI.", True),
        Case("eventually", "Matter-over-Thread connectivity will come eventually.", True),
        Case("a-terme", "À terme, on voudrait différer la publication des notes.", True),
        Case("pilot-scope", "Pilot with 50 clinic patients: the neural feedback canceller.", True),
        Case("trial-scope", "Trial in two rows of compartment 2: wood-fibre substrate.", True),
        Case("experimentation-fr", "Expérimentation de trois mois : paiement CB uniquement.", True),
        Case("pilote-en-cours", "Pilote en cours dans deux quartiers : bacs de 120 L.", True),
        Case("if-comma", "If the permits come through, the concert moves to the park.", True),
        Case("si-comma", "Si la DGAC valide, le temps de présentation passe à 45 min.", True),
        Case("maritime-pilot", "Pilot booking must be made 24 hours before ETA.", False),
        Case("pilot-launch", "Pilot launch home berth is the west jetty.", False),
        Case(
            "standing-rule",
            "If the primary doesn't ack a page within 15 minutes it escalates to the secondary,"
            " then to the EM.",
            False,
        ),
        Case("plain-update", "Staging moved to host-b.", False),
        Case("testing-as-subject", "Load testing moved to k6.", False),
        Case("trial-as-subject", "Self-serve trial length is 14 days.", False),
        Case("pilot-site-as-subject", "Mode debug coupé sur les compteurs du site pilote.", False),
    ],
    ids=lambda c: c.test_id,
)
def test_unsettled_statements(case: Case) -> None:
    assert unsettled(case.text) is case.unsettled


def _model(k: float) -> JudgeModel:
    n = len(FEATURE_NAMES)
    zeros = (0.0,) * n
    return JudgeModel(FEATURE_NAMES, zeros, (1.0,) * n, (zeros,) * 3, (0.0, k, 0.0), 0.5, 0.5)


@pytest.mark.parametrize(
    "new_text",
    [
        "A/B test: the reminder goes out 48 h before the visit for half of patients.",
        "If no-shows keep rising we'll send the reminder 48 h before.",
        "Maybe the reminder should go out 48 h before?",
    ],
)
def test_an_unsettled_new_fact_is_uncertain_even_when_the_model_would_keep(new_text: str) -> None:
    """The spec: trials, conditional plans, hedges → UNCERTAIN, even with a concrete value;
    a model sure of KEEP does not send them silently past the review."""
    old = Fact("Appointment reminders are sent 24 h before the visit.", T0)
    new = Fact(new_text, T0 + timedelta(days=3))
    decision = decide_pair(_model(k=9.0), pair_features(old, new, PairSimilarity(None, None)))
    assert decision.verdict is Verdict.UNCERTAIN and "trial" in decision.reason


def test_a_temporary_trial_stays_provisional() -> None:
    """A trial with a stated end is a temporary exception (KEEP), not an open question."""
    old = Fact("The forecasting add-on is off for Acme Retail.", T0)
    new = Fact("Acme is trialing the forecasting add-on until the end of March.", T0)
    features = pair_features(old, new, PairSimilarity(None, None))
    assert features.as_dict()["new_unsettled"] == 0.0
