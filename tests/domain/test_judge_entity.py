"""The words only one side of a pair has: the entity spans the embedder compares."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.fact_parse import parse_fact
from nika_tui.domain.judge_cues import stance
from nika_tui.domain.judge_entity import (
    align,
    distinct_handles,
    numbered_sibling,
    one_value_changed,
    sibling_entity,
    unresolved_subject,
    unshared_words,
)
from nika_tui.domain.judge_features import PairSimilarity, pair_features
from nika_tui.domain.judge_model import rule_verdict
from nika_tui.domain.verdicts import Fact, Verdict

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class Case(NamedTuple):
    test_id: str
    old: str
    new: str
    old_only: str
    new_only: str


@pytest.mark.parametrize(
    "case",
    [
        Case(
            "sibling-service",
            "The cache TTL of the orders service is 30 seconds.",
            "billing's cache TTL: 60 seconds",
            "orders service",
            "billing",
        ),
        Case(
            "reworded-subject",
            "The Postgres box is at 10.0.0.5",
            "Our primary database host is 10.0.0.9",
            "postgres box",
            "primary database host",
        ),
        Case(
            "value-only-update",
            "Rate limit on orders: 500 requests per minute.",
            "Rate limit on orders: 777 requests per minute.",
            "",
            "",
        ),
        Case("version-is-a-value", "The SDK is at v1.2", "The SDK is at v2.0", "", ""),
        Case(
            "identifiers-are-words",
            "Thermostat T3 max: 32 °C",
            "Thermostat T4 max: 35 °C",
            "t3",
            "t4",
        ),
        Case(
            "french-clitic-and-stem",
            "L'API orders écoute sur le port 8080.",
            "L'API billing écoute sur le port 9090.",
            "orders",
            "billing",
        ),
        Case(
            "stems-count-as-shared", "Deploys run nightly.", "Deployment runs nightly now.", "", ""
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_unshared_words(case: Case) -> None:
    assert unshared_words(case.old, case.new) == (case.old_only, case.new_only)


def test_entity_features_read_the_embedder_and_fall_back_without_one() -> None:
    old = Fact("The cache TTL of the orders service is 30 seconds.", T0)
    new = Fact("billing's cache TTL: 60 seconds", T0 + timedelta(hours=1))
    read = pair_features(old, new, PairSimilarity(0.8, 0.9, None, 0.21, 0.33)).as_dict()
    assert (read["entity_cos"], read["swap_cos"], read["entity_both"]) == (0.21, 0.33, 1.0)
    # Without an embedder nothing says the spans are alike: two unshared spans read as apart.
    bare = pair_features(old, new, PairSimilarity(None, None)).as_dict()
    assert (bare["entity_cos"], bare["entity_both"]) == (0.0, 1.0)


class AlignCase(NamedTuple):
    test_id: str
    old: str
    new: str
    swaps: tuple[tuple[str, str], ...]
    value_edits: int
    sibling: bool


@pytest.mark.parametrize(
    "case",
    [
        AlignCase(
            "numbered-sibling",
            "Thermostat T3 max setpoint: 32 °C.",
            "Thermostat T4 max setpoint: 35 °C.",
            (("t3", "t4"),),
            1,
            True,
        ),
        AlignCase(
            "named-sibling",
            "We keep 8 replicas of core-billing in qa.",
            "We keep 4 replicas of us-gateway in qa.",
            (("core-billing", "us-gateway"),),
            1,
            True,
        ),
        AlignCase(
            "value-only-update",
            "Rate limit on orders: 500 requests per minute.",
            "Rate limit on orders: 777 requests per minute.",
            (),
            1,
            False,
        ),
        # The name *is* the value here: one change, no second difference.
        AlignCase(
            "name-is-the-value",
            "Prod EHR read replica: ehr-db-r2.",
            "Prod EHR read replica: ehr-db-r3.",
            (("ehr-db-r2", "ehr-db-r3"),),
            0,
            False,
        ),
        # Reworded and shortened: the shapes do not align enough to call it a sibling.
        AlignCase(
            "reworded-update",
            "Mortgage calculator default interest rate: 6.8%.",
            "mortgage calc default rate 6.2%",
            (("calculator", "calc"),),
            1,
            False,
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_alignment_and_the_sibling_gate(case: AlignCase) -> None:
    aligned = align(case.old, case.new)
    assert (aligned.word_swaps, aligned.value_edits) == (case.swaps, case.value_edits)
    assert sibling_entity(aligned) is case.sibling


def test_a_sibling_is_another_entity_whatever_the_model_says() -> None:
    old = Fact("Thermostat T3 max setpoint: 32 °C.", T0)
    new = Fact("Thermostat T4 max setpoint: 35 °C.", T0 + timedelta(days=3))
    features = pair_features(old, new, PairSimilarity(0.9, 0.97))
    assert features.other_entity and features.gated
    update = Fact("Thermostat T3 max setpoint: 35 °C.", T0 + timedelta(days=3))
    assert not pair_features(old, update, PairSimilarity(0.9, 0.97)).other_entity


@pytest.mark.parametrize(
    ("text", "hedged"),
    [
        ("Clients of us-catalog may send at most 500 requests per minute.", False),
        ("Each fusion splice may lose at most one tenth of a dB.", False),
        ("Budget may get cut to around £450k.", True),
        ("We may drop the API role's statement_timeout to 5s.", True),
    ],
)
def test_a_may_that_grants_a_bound_is_not_a_hedge(text: str, hedged: bool) -> None:
    assert parse_fact(text).hedged is hedged


@pytest.mark.parametrize(
    ("text", "hedged"),
    [
        ("Carmina dress rehearsal still 18 May in the Main Hall, but at 14:00.", False),
        ("Release 5.3 approved for store submission on 12 May 2025.", False),
        ("Until early May the ECG vendor sent data weekly on Mondays.", False),
        ("Deadline is May 3.", False),
        ("Route 22 may go back via Oak Road.", True),
        ("The pour may slip to 15 May.", True),
    ],
)
def test_may_the_month_is_not_a_hedge(text: str, hedged: bool) -> None:
    assert parse_fact(text).hedged is hedged


@pytest.mark.parametrize(
    ("text", "additive"),
    [
        ("new guillotine blades coming from Schneider Senator now, polar too slow", False),
        ("ACH removed (too many returns).", False),
        ("We dropped ops@ from alerting, way too noisy.", False),
        ("Staging uses Redis too.", True),
        ("4M88 runs Saturdays too this month only.", True),
    ],
)
def test_too_before_an_adjective_adds_nothing(text: str, additive: bool) -> None:
    assert stance(text).additive is additive
    assert parse_fact(text).additive is additive


@pytest.mark.parametrize(
    ("text", "proposal"),
    [
        ("Le parking Cordeliers ne propose plus l'abonnement vélo.", False),
        ("On propose aussi les chaînes neige en option.", False),
        ("Je propose de passer le délai à 5 min.", True),
        ("We propose moving the standup to 10:00.", True),
    ],
)
def test_french_propose_as_offers_is_not_a_proposal(text: str, proposal: bool) -> None:
    assert stance(text).proposal is proposal


class HandleCase(NamedTuple):
    test_id: str
    old: str
    new: str
    distinct: bool


@pytest.mark.parametrize(
    "case",
    [
        HandleCase(
            "two-services",
            "edge-media is scaled to 3 replicas in production.",
            "We keep 6 replicas of edge-catalog in production.",
            True,
        ),
        HandleCase(
            "same-service-reworded",
            "The core-reports deployment runs 3 replicas.",
            "We keep 6 replicas of core-reports.",
            False,
        ),
        HandleCase(
            "one-name-two-spellings",
            "Auto-grader sandbox timeout per submission: 10 seconds.",
            "Autograder per-submission timeout: 20s.",
            False,
        ),
        HandleCase(
            "short-form-of-the-name",
            "BGP peer for transit provider Cogent on edge-rtr-fra1 is 154.54.12.1.",
            "fra1 cogent peer: 154.54.12.9",
            False,
        ),
        HandleCase(
            "same-value-two-services",
            "edge-media is scaled to 3 replicas.",
            "We keep 3 replicas of edge-catalog.",
            True,
        ),
        # Without a value the identifier is the value: a move, not another thing.
        HandleCase(
            "identifier-is-the-value",
            "The ML model is served from gpu-node-2.",
            "The ML model is served from gpu-node-5.",
            False,
        ),
        HandleCase(
            "hosts-are-values", "VPN is vpn.acme-corp.net", "VPN is wg.acme-corp.net:51820", False
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_distinct_handles(case: HandleCase) -> None:
    assert distinct_handles(case.old, case.new) is case.distinct


def test_an_explicit_change_of_identifier_is_not_a_sibling() -> None:
    old = Fact("The DICOM router sends CT studies to pacs-archive-01 (12 TB).", T0)
    moved = Fact(
        "The DICOM router now sends CT studies to pacs-archive-03 (40 TB).", T0 + timedelta(days=9)
    )
    sibling = Fact("pacs-viewer-02 keeps CT studies for 40 days.", T0 + timedelta(days=9))
    assert not pair_features(old, moved, PairSimilarity(0.9, 0.95)).other_entity
    assert pair_features(old, sibling, PairSimilarity(0.6, 0.7)).other_entity


class ValueCase(NamedTuple):
    test_id: str
    old: str
    new: str
    value_only: bool


@pytest.mark.parametrize(
    "case",
    [
        ValueCase(
            "weekday",
            "The web app deploys to production on Thursdays at 10:00",
            "The web app deploys to production on Fridays at 10:00",
            True,
        ),
        ValueCase(
            "french-weekday",
            "La revue d'incidents a lieu le mardi.",
            "La revue d'incidents a lieu le jeudi.",
            True,
        ),
        ValueCase(
            "month-and-day",
            "The privacy policy was last updated on 3 February 2025.",
            "The privacy policy was last updated on 14 November 2025.",
            True,
        ),
        ValueCase("clock-12h", "Standup is at 9am.", "Standup is at 9:30am.", True),
        ValueCase("clock-24h", "Backups start at 02:00 UTC.", "Backups start at 14:30 UTC.", True),
        ValueCase(
            "french-clock", "Le point hebdo est à 10h30.", "Le point hebdo est à 11h15.", True
        ),
        ValueCase("iso-date", "Code freeze: 2026-03-02.", "Code freeze: 2026-03-09.", True),
        ValueCase("named-time", "The batch runs at noon.", "The batch runs at midnight.", True),
        # "may" is a modal far more often than a month: a swapped modal is a word edit.
        ValueCase(
            "may-is-a-word",
            "Clients may send 500 requests.",
            "Clients can send 600 requests.",
            False,
        ),
        ValueCase(
            "a-word-is-a-word", "Deploys run on Thursdays.", "Deploys pause on Thursdays.", False
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_the_calendar_is_a_value(case: ValueCase) -> None:
    aligned = align(case.old, case.new)
    assert (aligned.word_edits == 0 and aligned.value_edits > 0) is case.value_only
    assert not sibling_entity(aligned)
    later = pair_features(
        Fact(case.old, T0), Fact(case.new, T0 + timedelta(days=2)), PairSimilarity(0.9, 0.95)
    )
    assert later.value_only is case.value_only


def test_a_day_changed_with_the_entity_is_a_sibling() -> None:
    old = Fact("Bob is on call on Monday.", T0)
    new = Fact("Eve is on call on Tuesday.", T0 + timedelta(days=2))
    assert pair_features(old, new, PairSimilarity(0.9, 0.95)).other_entity


@pytest.mark.parametrize(
    ("old", "new", "numbered"),
    [
        ("Line 2 baler bale weight is 900 kg.", "Line 3 baler bale weight is 650 kg.", True),
        ("Silo 4 holds 80,000 L of raw milk.", "Silo 5 holds 80,000 L of raw milk.", True),
        ("Serre 4 : consigne d'humidité 80 %.", "Serre 5 : consigne d'humidité 75 %.", True),
        (
            "X-ray unit in room 2 last calibrated 2025-03-10.",
            "X-ray unit in room 4 last calibrated 2025-06-22.",
            True,
        ),
        # The number is the value: nothing follows it, or it stands in a list of assignments.
        ("The frontend uses React 17.", "The frontend uses React 18.", False),
        (
            "Front-of-house radio: ushers on channel 3, bar staff on channel 5.",
            "Front-of-house radio: ushers on channel 4, bar staff on channel 5.",
            False,
        ),
        (
            "Vessel MSC Aurora berths at Berth 4 on Tuesday.",
            "Vessel MSC Aurora berths at Berth 6 on Tuesday.",
            False,
        ),
        ("Line 2 baler bale weight is 900 kg.", "Line 2 baler bale weight is 650 kg.", False),
    ],
)
def test_a_number_naming_the_thing_makes_a_sibling(old: str, new: str, numbered: bool) -> None:
    assert numbered_sibling(old, new) is numbered
    later = pair_features(
        Fact(old, T0), Fact(new, T0 + timedelta(days=2)), PairSimilarity(0.9, 0.95)
    )
    assert later.other_entity is numbered
    if numbered:  # another thing: KEEP, however sure the model is of an update
        assert rule_verdict(later, 0.99, 0.01, 0.5, 0.5, 0.1)[0] is Verdict.KEEP


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("Nightly backups run at 02:00 UTC.", "Nightly backups run at 04:30 UTC.", True),
        # Two values changed: here the season names the thing, not only its value.
        (
            "2024/25 season: 42 subscription concerts.",
            "2025/26 season: 38 subscription concerts.",
            False,
        ),
        # A grammar word swapped at the same place changes what the sentence is about.
        (
            "Night keepers check the nocturnal house every 2 hours.",
            "Day keepers check the nocturnal house every 4 hours.",
            False,
        ),
        (
            "The Tinsley possession this Saturday starts 23:30.",
            "The Tinsley possession next Saturday starts 22:00.",
            False,
        ),
    ],
)
def test_only_one_value_changed(old: str, new: str, changed: bool) -> None:
    assert one_value_changed(align(old, new)) is changed


def test_a_correction_is_not_a_sibling_whatever_it_swaps() -> None:
    old = Fact("Le magasin 37 passe sur les nouvelles caisses mardi.", T0)
    fixed = Fact(
        "Finalement pas mardi : le magasin 37 bascule sur les nouvelles caisses jeudi.",
        T0 + timedelta(minutes=35),
    )
    assert sibling_entity(align(old.text, fixed.text))  # the shape alone reads as a sibling
    assert not pair_features(old, fixed, PairSimilarity(0.9, 0.95)).other_entity


class UnresolvedCase(NamedTuple):
    test_id: str
    old: str
    new: str
    unresolved: bool


UNRESOLVED_CASES = [
    UnresolvedCase(
        "bare-class-after-two",
        "The billing and the invoicing workers both run on pool cpu-3.",
        "The worker now runs on pool cpu-7.",
        True,
    ),
    UnresolvedCase(
        "one-of-two-named",
        "Kiosks 12 and 14 both reboot at 03:00.",
        "Kiosk 12 now reboots at 04:00.",
        True,
    ),
    UnresolvedCase(
        "french",
        "Les entrepôts de Lyon et de Lille ferment tous les deux à 20h.",
        "L'entrepôt ferme désormais à 21h.",
        True,
    ),
    UnresolvedCase(
        "both-named-again",
        "Priya leads both the search and the ranking teams.",
        "Priya only leads search now; ranking moved to Tom.",
        False,
    ),
    UnresolvedCase(
        "new-says-both-too",
        "The web and the mobile apps both use SDK 4.2.",
        "Both apps are on SDK 5.0 now.",
        False,
    ),
    UnresolvedCase(
        "every-two-weeks-is-not-two-things",
        "Les inventaires ont lieu toutes les deux semaines.",
        "Les inventaires ont lieu chaque semaine.",
        False,
    ),
    UnresolvedCase(
        "one-thing",
        "The billing worker runs on pool cpu-3.",
        "The worker now runs on pool cpu-7.",
        False,
    ),
]


@pytest.mark.parametrize("case", UNRESOLVED_CASES, ids=lambda c: c.test_id)
def test_unresolved_subject(case: UnresolvedCase) -> None:
    assert unresolved_subject(case.old, case.new) is case.unresolved


def test_an_unresolved_subject_is_uncertain_whatever_the_model_says() -> None:
    case = UNRESOLVED_CASES[0]
    features = pair_features(
        Fact(case.old, T0), Fact(case.new, T0 + timedelta(days=9)), PairSimilarity(0.9, 0.95)
    )
    assert features.unresolved and not features.gated  # still a pair the model learns from
    assert rule_verdict(features, 0.99, 0.0, 0.8, 0.3, 0.1)[:2] == (
        Verdict.UNCERTAIN,
        "unresolved",
    )
