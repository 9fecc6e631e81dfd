"""The rules judge, one table row per rule (facts here are not taken from the dev set)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.fact_parse import (
    DAY,
    ID,
    LOCATION,
    NAME,
    NUMBER,
    PATH,
    PERCENT,
    STATUS,
    TICKET,
    TIME,
    VERSION,
    parse_fact,
)
from nika_tui.domain.judge_rules import SAME_TIME, RulesJudge
from nika_tui.domain.ports import Judge
from nika_tui.domain.verdicts import Fact, Verdict

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LATER = timedelta(days=14)


class Case(NamedTuple):
    test_id: str
    old: str
    new: str
    delta: timedelta
    expected: Verdict


CASES = [
    # valid time
    Case(
        "backdated-never-retires-newer",
        "The build agent is ci-runner-7.corp.",
        "The build agent was ci-runner-2.corp.",
        -timedelta(days=40),
        Verdict.KEEP,
    ),
    Case(
        "backdated-even-with-change-cue",
        "Release notes now go to #shipping.",
        "Release notes moved to #announce.",
        -timedelta(days=3),
        Verdict.KEEP,
    ),
    Case(
        "same-time-contradiction",
        "The mail relay is smtp-3.corp.",
        "The mail relay is smtp-4.corp.",
        timedelta(minutes=4),
        Verdict.UNCERTAIN,
    ),
    Case(
        "same-time-duplicate",
        "The mail relay is smtp-3.corp.",
        "Mail relay: smtp-3.corp.",
        timedelta(minutes=1),
        Verdict.KEEP,
    ),
    # hedges
    Case(
        "hedge-might",
        "Load tests run on Saturdays.",
        "Load tests might run on Sundays from now on.",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "hedge-question-mark",
        "The cache size is 512 entries.",
        "The cache size is 1024 entries now?",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "hedge-peut-etre",
        "Le proxy écoute sur le port 3128.",
        "Le proxy écoute peut-être sur le port 8888 maintenant.",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "hedge-a-voir",
        "La rétro a lieu le vendredi.",
        "La rétro passerait au jeudi, à voir.",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "hedge-il-parait",
        "Le responsable du CRM est Paul.",
        "Il paraît que le responsable du CRM est désormais Marie.",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "hedge-without-conflict-is-keep",
        "The linter runs in pre-commit.",
        "Maybe we should write a blog post about onboarding.",
        LATER,
        Verdict.KEEP,
    ),
    # change cues
    Case(
        "cue-moved-host",
        "The package mirror is mirror-1.corp.",
        "The package mirror moved to mirror-5.corp.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "cue-now-number",
        "The job queue keeps 20 workers.",
        "The job queue now keeps 35 workers.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "cue-renamed",
        "The chat channel for incidents is #fire.",
        "The incidents chat channel was renamed to #incidents.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "cue-desormais-day",
        "La démo client a lieu le mardi.",
        "La démo client a désormais lieu le vendredi.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "cue-a-demenage",
        "Le registre Docker est sur registry-a.interne.",
        "Le registre Docker a déménagé sur registry-b.interne.",
        LATER,
        Verdict.REPLACE,
    ),
    # explicit outgoing value
    Case(
        "explicit-instead-of",
        "Dashboards are built in Kibana.",
        "Dashboards are built in Grafana instead of Kibana.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "explicit-no-longer",
        "Nightly reports are emailed by Zed.",
        "Nightly reports are no longer emailed by Zed; the bot posts them.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "explicit-from-to",
        "Container builds use Kaniko.",
        "Container builds switched from Kaniko to Buildah.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "explicit-plus-de",
        "Les tickets sont suivis dans Trello.",
        "Plus de Trello : les tickets sont suivis dans Linear.",
        LATER,
        Verdict.REPLACE,
    ),
    # slot swap without a cue
    Case(
        "swap-version",
        "The API gateway runs Envoy 1.27.",
        "The API gateway runs Envoy 1.29.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "swap-status",
        "JOB-901 is blocked.",
        "JOB-901 is done.",
        LATER,
        Verdict.REPLACE,
    ),
    # both can be current
    Case(
        "duplicate-is-keep",
        "Schema migrations run with Alembic.",
        "We run schema migrations with Alembic.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "other-ticket",
        "JOB-500 is assigned to Rui.",
        "JOB-501 is assigned to Ana.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "other-environment",
        "The staging queue is rabbit-s.corp.",
        "The production queue is rabbit-p.corp.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "additive-also",
        "Ines reviews database changes.",
        "Ines also reviews Terraform changes.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "complementary-other-value-kind",
        "The webhook service listens on port 7000.",
        "The webhook service logs to /var/log/webhook.log.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "several-values-differ",
        "The iOS app uses Swift 5.9.",
        "The iOS app uses Fastlane 2.219.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "negation-about-other-value",
        "Backups are taken on Wednesdays.",
        "Backups are never taken on Sundays.",
        LATER,
        Verdict.KEEP,
    ),
    # negation retracting the old statement
    Case(
        "retraction",
        "The beta flag is on for team Kilo.",
        "The beta flag is not on for team Kilo anymore.",
        LATER,
        Verdict.REPLACE,
    ),
    # maybe another entity
    Case(
        "identifier-swap-without-cue",
        "The budget owner for H1 is Lena.",
        "The budget owner for H2 is Lena.",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "subject-word-and-value-differ-with-cue",
        "The auth worker pool has 8 threads.",
        "The mail worker pool now has 12 threads.",
        LATER,
        Verdict.UNCERTAIN,
    ),
    Case(
        "one-shared-word-is-not-the-same-subject",
        "Yuki owns the analytics export service.",
        "Payment services now build with Gradle 8.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "outgoing-value-needs-a-common-subject",
        "Omar owns the release calendar.",
        "Tess replaced Omar as security champion.",
        LATER,
        Verdict.KEEP,
    ),
    Case(
        "sentence-initial-name-is-a-name",
        "Lena owns the billing export.",
        "Billing export ownership moved to Tariq.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "fr-de-x-a-y-keeps-the-accent",
        "La supervision tourne sur Nagios.",
        "La supervision est passée de Nagios à Zabbix.",
        LATER,
        Verdict.REPLACE,
    ),
    Case(
        "narrower-subject",
        "The queue runs RabbitMQ 3.11.",
        "The billing queue runs RabbitMQ 3.13.",
        LATER,
        Verdict.UNCERTAIN,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_rule(case: Case) -> None:
    judgement = RulesJudge().judge(Fact(case.old, T0), Fact(case.new, T0 + case.delta))
    assert judgement.verdict is case.expected, judgement.reason
    assert judgement.judge == "rules"
    assert judgement.reason


def test_rules_judge_is_a_judge_and_deterministic() -> None:
    judge = RulesJudge()
    assert isinstance(judge, Judge)
    old, new = Fact("Port is 1.", T0), Fact("Port is now 2.", T0 + LATER)
    assert judge.judge(old, new) == judge.judge(old, new)


def test_same_time_window_edges() -> None:
    judge = RulesJudge()
    old = Fact("The mail relay is smtp-3.corp.", T0)
    inside = judge.judge(old, Fact("The mail relay is smtp-4.corp.", T0 + SAME_TIME))
    outside = judge.judge(
        old, Fact("The mail relay is smtp-4.corp.", T0 + SAME_TIME + timedelta(minutes=1))
    )
    assert inside.verdict is Verdict.UNCERTAIN
    assert outside.verdict is Verdict.REPLACE


class Extract(NamedTuple):
    test_id: str
    text: str
    family: str
    value: str


EXTRACTS = [
    Extract("ticket", "JOB-12 is open", TICKET, "JOB-12"),
    Extract("hash-ticket", "Ticket #381 is open", TICKET, "#381"),
    Extract("url", "Docs at https://docs.example.org/x.", LOCATION, "https://docs.example.org/x"),
    Extract("ip-port", "DB at 10.1.2.3:5432", LOCATION, "10.1.2.3:5432"),
    Extract("host", "Runs on build-2.corp.local today", LOCATION, "build-2.corp.local"),
    Extract("version-dotted", "Uses Python 3.12", VERSION, "3.12"),
    Extract("version-after-name", "Uses Node 20", VERSION, "20"),
    Extract("weekday-fr", "On déploie le jeudi", DAY, "thursday"),
    Extract("weekday-plural", "Deploys on Tuesdays", DAY, "tuesday"),
    Extract("time", "Standup at 9:30", TIME, "09:30"),
    Extract("percent", "Coverage is 80%", PERCENT, "80"),
    Extract("number-word-fr", "Il faut deux approbations", NUMBER, "2"),
    Extract("path", "Config in /etc/app/main.yaml", PATH, "/etc/app/main.yaml"),
    Extract("mixed-id", "Cluster is prod-eu-1", ID, "prod-eu-1"),
    Extract("name", "The owner is Jean Dupont", NAME, "jean dupont"),
    Extract("status-fr", "La tâche est en cours", STATUS, "progress"),
]


@pytest.mark.parametrize("case", EXTRACTS, ids=[c.test_id for c in EXTRACTS])
def test_extraction(case: Extract) -> None:
    assert case.value in parse_fact(case.text).values.get(case.family, frozenset())


class Flag(NamedTuple):
    test_id: str
    text: str
    hedged: bool
    negated: bool
    change_cue: bool


FLAGS = [
    Flag("plain", "The API is on port 80.", False, False, False),
    Flag("not-sure-is-hedge-not-negation", "Not sure the API is on port 80.", True, False, False),
    Flag("no-longer-is-change", "We no longer use Travis.", False, False, True),
    Flag("ne-pas", "On ne déploie pas le vendredi.", False, True, False),
    Flag("je-crois", "Je crois que le port est 80.", True, False, False),
    Flag("maintenant", "Le port est maintenant 81.", False, False, True),
]


@pytest.mark.parametrize("case", FLAGS, ids=[c.test_id for c in FLAGS])
def test_flags(case: Flag) -> None:
    parsed = parse_fact(case.text)
    assert (parsed.hedged, parsed.negated, parsed.change_cue) == (
        case.hedged,
        case.negated,
        case.change_cue,
    )


def test_a_parse_is_cached_and_cannot_be_changed_by_one_of_its_readers() -> None:
    from nika_tui.domain.fact_parse import parse_fact

    text = "The billing service runs version 4.2 on node-7.acme.internal"
    parsed = parse_fact(text)
    assert parse_fact(text) is parsed  # supersede judges one new fact against 8 candidates
    with pytest.raises(TypeError):
        parsed.values["version"] = frozenset({"9.9"})  # type: ignore[index]
    assert parse_fact(text).values == parsed.values


@pytest.mark.parametrize(
    ("text", "days"),
    [
        ("The staging server of acme-api moved to 10.0.9.30 on Monday.", None),
        ("Le serveur est passé en 10.0.0.2 depuis lundi.", None),
        ("Since Tuesday, backups run at 03:00.", None),
        ("Lundi dernier, on a migré le cluster vers eu-west-3.", None),
        ("Deploys of acme-api happen on Fridays after the standup.", {"friday"}),
        ("Standup moved to Monday.", {"monday"}),
        ("Deploys now happen on Monday.", {"monday"}),
        ("Kids' room 'Pirate Cove' now bookable on Sunday mornings.", {"sunday"}),
    ],
)
def test_a_weekday_that_dates_the_change_is_no_value(text: str, days: set[str] | None) -> None:
    """ "moved to X on Monday" says when; "on Fridays" and "moved to Monday" say what."""
    found = parse_fact(text).values.get("day")
    assert (set(found) if found else None) == days
