"""The learned offline judge's pure parts: quantities, stance, gates, fit, model file."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import pytest

from nika_tui.domain.fact_parse import join_digit_groups, mask_values
from nika_tui.domain.judge_cues import bare_subject, stance, states_transition
from nika_tui.domain.judge_example import Example
from nika_tui.domain.judge_features import (
    FEATURE_NAMES,
    PairSimilarity,
    pair_features,
)
from nika_tui.domain.judge_fit import build_model, fold_of, train_model
from nika_tui.domain.judge_model import JudgeModel, ModelFormatError, decide_pair, decide_with
from nika_tui.domain.judge_thresholds import choose_correction_threshold
from nika_tui.domain.quantities import same_quantities
from nika_tui.domain.verdicts import Fact, Verdict

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
NO_SIM = PairSimilarity(None, None)


class QCase(NamedTuple):
    test_id: str
    old: str
    new: str
    restated: bool
    changed: bool


@pytest.mark.parametrize(
    "case",
    [
        QCase(
            "mb-words", "Max body is 10 MB.", "Bodies over 10 megabytes are rejected.", True, False
        ),
        QCase(
            "half-hour",
            "Sessions expire after 30 minutes.",
            "Idle timeout is half an hour.",
            True,
            False,
        ),
        QCase("ms-seconds-fr", "Le délai est de 300 ms.", "Après 0,3 seconde.", True, False),
        QCase("money-k", "The contract is $250,000 per year.", "ARR is 250k USD.", True, False),
        QCase("days-change", "Retention is 14 days.", "Retention is 30 days.", False, True),
        QCase("km-metres", "The loop is 1.5 km long.", "Loop length: 1500 metres.", True, False),
        QCase("litres-fr", "La cuve fait 20 hL.", "Cuve de 2000 litres.", True, False),
        QCase("ml-litres", "Each vial holds 2 L.", "Vials take 2000 ml.", True, False),
        QCase("bit-rate", "The uplink runs at 1 Gbps.", "Uplink: 1000 Mbit/s.", True, False),
        QCase("bit-rate-change", "The uplink runs at 1 Gbps.", "Uplink is 10 Gbps.", False, True),
        QCase("mass", "A bag weighs 2 kg.", "Bags are 2000 g.", True, False),
        QCase("ghz-mhz", "The radio is on 2.4 GHz.", "Radio channel: 2400 MHz.", True, False),
        # Bytes and bits a second never restate each other (folding loses MB/Mb's case).
        QCase("bytes-vs-bits", "Disk writes 10 MB/s.", "Disk writes 80 Mbps.", False, False),
        # "in" is a word, not inches: two counts, one changed.
        QCase("in-is-a-word", "10 pods run in prod.", "12 pods run in prod.", False, True),
    ],
    ids=lambda c: c.test_id,
)
def test_quantities_in_other_units(case: QCase) -> None:
    assert same_quantities(case.old, case.new) == (case.restated, case.changed)


def test_mask_values_keeps_the_slot_and_drops_the_value() -> None:
    a = mask_values("The orders service listens on port 8080 in production.")
    b = mask_values("The orders service listens on port 9090 in production.")
    assert a == b and "8080" not in a and "orders" in a


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("We're not doing GraphQL after all, the backend stays REST.", "retraction"),
        ("Oubliez le prélèvement SEPA, on reste sur les virements.", "retraction"),
        ("Nx is on the table as a replacement for Turborepo.", "proposal"),
        ("Standup is at 11:00 tomorrow only, because of the offsite.", "temporary"),
        ("Supported locales after the cleanup: en-US, fr-FR.", "complete"),
        ("Sunset for v1 pushed to 2026-03-31.", "update"),
        ("Starting next month, Fridays are no-meeting days.", "intent"),
        ("I think the partner API might switch to mTLS.", "hedge"),
        ("Proposing we cap PAT lifetime at 90 days, please comment.", "proposal"),
        ("Le passage à Vite est prévu le mois prochain.", "plan"),
        ("Support is 24/7 during Black Friday week only, until Monday.", "temporary"),
        ("Is the staging DB still on db-2?", "question"),
        ("Forget it: the Hetzner move is cancelled.", "retraction"),
        ("On garde aussi les alertes par mail.", "additive"),
    ],
)
def test_stance_cues_en_fr(text: str, flag: str) -> None:
    assert getattr(stance(text), flag)


@pytest.mark.parametrize(
    ("text", "flag"),
    [
        ("We keep 6 replicas of edge-catalog in production.", "update"),  # replic·as of
        ("I know the build runs on runner-3.", "update"),  # k·now
        ("The job executes nightly.", "update"),  # exe·cut·es
    ],
)
def test_a_cue_inside_a_word_is_no_cue(text: str, flag: str) -> None:
    assert not getattr(stance(text), flag)


def _model(**kw: float) -> JudgeModel:
    """A model whose probabilities are fixed by its bias alone (weights zero)."""
    n = len(FEATURE_NAMES)
    zeros = tuple(0.0 for _ in range(n))
    bias = (kw.get("r", 5.0), kw.get("k", 0.0), kw.get("u", 0.0))
    return JudgeModel(
        FEATURE_NAMES, zeros, tuple(1.0 for _ in range(n)), (zeros,) * 3, bias, 0.5, 0.5
    )


def test_backdated_is_keep_whatever_the_model_says() -> None:
    old, new = Fact("Prod DB is db-2.", T0), Fact("Prod DB was db-1.", T0 - timedelta(days=9))
    decision = decide_pair(_model(r=9.0), pair_features(old, new, NO_SIM))
    assert decision.verdict is Verdict.KEEP and "backdated" in decision.reason


def test_same_minute_conflict_is_uncertain() -> None:
    old = Fact("The release is on Tuesday.", T0)
    new = Fact("The release is on Thursday.", T0 + timedelta(seconds=40))
    assert decide_pair(_model(r=9.0), pair_features(old, new, NO_SIM)).verdict is Verdict.UNCERTAIN


def test_a_same_minute_pair_is_kept_only_when_surely_compatible() -> None:
    old = Fact("The release is on Tuesday.", T0)
    new = Fact("The release is on Thursday.", T0 + timedelta(seconds=40))
    features = pair_features(old, new, NO_SIM)
    assert features.same_time and features.gated
    assert decide_pair(_model(r=0.0, k=9.0), features).verdict is Verdict.KEEP
    assert decide_pair(_model(r=0.0, k=0.0, u=9.0), features).verdict is Verdict.UNCERTAIN


@pytest.mark.parametrize(
    "new_text",
    [
        "Maybe the staging server moved to host-b, not sure.",
        "Should we move the staging server to host-b?",
        "Proposing we move the staging server to host-b, thoughts?",
        "Apparemment le serveur de staging passerait sur host-b.",
    ],
)
def test_a_hedge_question_or_proposal_never_replaces(new_text: str) -> None:
    old, new = Fact("The staging server is host-a.", T0), Fact(new_text, T0 + timedelta(days=9))
    decision = decide_pair(_model(r=9.0), pair_features(old, new, NO_SIM))
    assert decision.verdict is Verdict.UNCERTAIN and decision.near_threshold


class KeepCase(NamedTuple):
    test_id: str
    old: str
    new: str
    why: str


@pytest.mark.parametrize(
    "case",
    [
        KeepCase(
            "dated-plan",
            "The staging server is host-a.",
            "The staging server move to host-b is scheduled for next month.",
            "temporary or a dated plan",
        ),
        KeepCase(
            "temporary",
            "The staging server is host-a.",
            "Staging runs on host-b temporarily, until Friday.",
            "temporary or a dated plan",
        ),
        KeepCase(
            "additive", "The staging server is host-a.", "Staging also has host-b now.", "adds"
        ),
        KeepCase(
            "reaffirmed",
            "Card payments are processed by Stripe.",
            "Forget what I said about Mollie, we are staying on Stripe for cards.",
            "keeps the old value",
        ),
    ],
    ids=lambda c: c.test_id,
)
def test_a_temporary_dated_additive_or_reaffirming_fact_keeps_the_old_one(case: KeepCase) -> None:
    """The three corpus authors agree: the standing value stays (KEEP), and a model sure of a
    conflict does not retire it."""
    old, new = Fact(case.old, T0), Fact(case.new, T0 + timedelta(days=9))
    decision = decide_pair(_model(r=9.0), pair_features(old, new, NO_SIM))
    assert decision.verdict is Verdict.KEEP and case.why in decision.reason


def test_retracting_a_plan_is_read_as_such() -> None:
    old = Fact("We will migrate the reporting DB to ClickHouse this quarter.", T0)
    new = Fact("Not moving reporting to ClickHouse after all.", T0 + timedelta(days=9))
    named = pair_features(old, new, NO_SIM).as_dict()
    assert named["retracts_intent"] == 1.0 and named["reaffirms_state"] == 0.0


@pytest.mark.parametrize(
    ("text", "joined"),
    [
        ("Open issues: 1,142.", "Open issues: 1142."),
        ("Débit : 10 800 m³/min", "Débit : 10800 m³/min"),
        ("Backlog: 14,200 reads", "Backlog: 14200 reads"),
        ("Relecture : 0,045 €/mot", "Relecture : 0,045 €/mot"),  # a decimal comma
        ("Vitesse 3,2 m/s", "Vitesse 3,2 m/s"),
        ("Lines 4, 6 and 9", "Lines 4, 6 and 9"),
        ("In 2024 100 units shipped", "In 2024 100 units shipped"),
    ],
)
def test_digit_groups_are_one_number(text: str, joined: str) -> None:
    assert join_digit_groups(text) == joined


def test_a_grouped_count_is_one_value_not_a_list() -> None:
    old = Fact("The fleet has 1,240 devices enrolled.", T0)
    new = Fact("Fleet enrollment count is 1,315 devices.", T0 + timedelta(days=30))
    named = pair_features(old, new, NO_SIM).as_dict()
    # Read as "1" and "240", the two counts shared the value 1 and looked like a list edit.
    assert named["values_shared"] == 0.0
    assert named["values_old_only"] == named["values_new_only"] == 1.0
    assert named["list_items"] == 1.0


@pytest.mark.parametrize(
    ("text", "transition"),
    [
        ("chore(argocd): app resync interval 3m -> 10m", True),
        ("stalls wheelchair spaces: 4 → 6 (row A extension done)", True),
        ("We moved from Trapeze to Optibus for blocking and rostering.", True),
        ("Replaced Sift with Kount, contract started 1 Feb.", True),
        ("CV-07 : vitesse passée de 3,2 à 2,8 m/s.", True),
        ("SCADA on-call handed over to Greta Lind.", True),
        ("Box office open from 10:00 to 18:00.", False),
        ("Le dépôt dessert les lignes 4 et 9.", False),
    ],
)
def test_a_stated_transition_is_read(text: str, transition: bool) -> None:
    assert states_transition(text) is transition
    old = Fact("Placeholder fact.", T0)
    named = pair_features(old, Fact(text, T0 + timedelta(days=3)), NO_SIM).as_dict()
    assert named["new_transition"] == float(transition)


@pytest.mark.parametrize(
    ("old", "new", "bare"),
    [
        ("The catalog database is 180 GB.", "The database is at 420 GB now.", True),
        ("The gateway in lab A runs firmware 2.5.0.", "The gateway is on 2.6.0 now.", True),
        ("The catalog database is 180 GB.", "The catalog database is 420 GB.", False),
        ("The database is 180 GB.", "The catalog database is 420 GB.", False),
    ],
)
def test_a_subject_named_with_fewer_qualifiers_is_flagged(old: str, new: str, bare: bool) -> None:
    assert bare_subject(old, new) is bare


def test_gated_pairs_do_not_teach_the_model() -> None:
    """A backdated pair's label says what the gate decides, not whether the texts conflict."""
    examples = _examples()
    backdated = [
        Example(
            f"b{i}",
            pair_features(
                Fact("The cache TTL is 60 s.", T0),
                Fact("The cache TTL is now 30 s.", T0 - timedelta(days=30)),
                NO_SIM,
            ),
            Verdict.KEEP,
        )
        for i in range(30)
    ]
    with_gated = train_model(examples + backdated, folds=3, kind="lr")
    without = train_model(examples, folds=3, kind="lr")
    assert with_gated.weights == without.weights
    assert with_gated.meta["n_train"] == len(examples) + len(backdated)


def test_other_environment_is_keep() -> None:
    old = Fact("In production the API listens on 8080.", T0)
    new = Fact("In staging the API listens on 9090.", T0 + timedelta(days=9))
    assert decide_pair(_model(r=9.0), pair_features(old, new, NO_SIM)).verdict is Verdict.KEEP


def _examples() -> list[Example]:
    rows = [
        ("The cache TTL is 60 s.", "The cache TTL is now 30 s.", Verdict.REPLACE),
        ("Standup is at 9:30.", "Standup moved to 10:00.", Verdict.REPLACE),
        ("Alice owns billing.", "Billing is owned by Bob now.", Verdict.REPLACE),
        ("The DB is Postgres 14.", "The DB was upgraded to Postgres 16.", Verdict.REPLACE),
        ("CI runs on Jenkins.", "The team lunch is on Friday.", Verdict.KEEP),
        ("The API is in Go.", "The API also exposes gRPC.", Verdict.KEEP),
        ("Deploys are on Monday.", "Deploys need two approvals.", Verdict.KEEP),
        ("Logs go to Loki.", "Metrics go to Prometheus.", Verdict.KEEP),
        ("The port is 80.", "Maybe the port will be 443?", Verdict.UNCERTAIN),
        ("Redis is the broker.", "I think RabbitMQ might replace Redis.", Verdict.UNCERTAIN),
        ("The DB is db-1.", "The database is db-9 now.", Verdict.UNCERTAIN),
        ("Retention is 7 days.", "Rumour: retention goes to 30 days?", Verdict.UNCERTAIN),
    ]
    out = []
    for i, (old, new, label) in enumerate(rows * 3):
        f = pair_features(Fact(old, T0), Fact(new, T0 + timedelta(days=10)), NO_SIM)
        out.append(Example(f"x{i}", f, label))
    return out


def test_fit_is_deterministic_and_round_trips_as_json() -> None:
    examples = _examples()
    first = train_model(examples, folds=3, max_wrong_replace=0.0)
    again = train_model(examples, folds=3, max_wrong_replace=0.0)
    assert first.to_dict() == again.to_dict()
    assert JudgeModel.from_dict(first.to_dict()) == first
    assert first.meta["cv_wrong_replace_rate"] == 0.0  # the threshold honours the target
    fitted = build_model(examples)
    hits = sum(decide_pair(fitted, e.features).verdict is e.label for e in examples)
    assert hits / len(examples) > 0.6  # it learned something from its own training data


def test_same_minute_pairs_get_their_own_keep_threshold() -> None:
    """Most same-minute pairs contradict each other: when the out-of-fold KEEP probability
    does not tell the few compatible ones apart, the fit stops keeping same-minute pairs
    (UNCERTAIN) instead of using the general KEEP threshold (decision 593)."""
    examples = _examples()
    same = [
        ("The standby generator is on level 2.", "The standby generator is on level 3."),
        ("Duty officer tonight is Ana.", "Duty officer tonight: Ben."),
        ("Vigilance vent : jaune.", "Vigilance vent : orange."),
    ]
    for i, (old, new) in enumerate(same * 4):
        f = pair_features(Fact(old, T0), Fact(new, T0 + timedelta(seconds=20)), NO_SIM)
        assert f.same_time
        examples.append(Example(f"s{i}", f, Verdict.UNCERTAIN))
    model = train_model(examples, folds=3, max_wrong_replace=0.0)
    assert model.same_time_keep_threshold is not None
    assert model.same_time_keep_threshold > model.keep_threshold
    assert JudgeModel.from_dict(model.to_dict()) == model
    f = pair_features(Fact(same[0][0], T0), Fact(same[0][1], T0 + timedelta(seconds=20)), NO_SIM)
    sure_keep = {Verdict.REPLACE: 0.0, Verdict.KEEP: model.keep_threshold, Verdict.UNCERTAIN: 0.0}
    assert decide_with(model, f, sure_keep).verdict is Verdict.UNCERTAIN
    older = replace(model, same_time_keep_threshold=None)  # a model file from before
    assert decide_with(older, f, sure_keep).verdict is Verdict.KEEP


class _Fixed:
    """A fitted model stand-in with fixed probabilities (what out-of-fold pairs carry)."""

    def __init__(self, p_replace: float) -> None:
        self.p = {Verdict.REPLACE: p_replace, Verdict.KEEP: 1 - p_replace, Verdict.UNCERTAIN: 0.0}

    def probabilities(self, values: object) -> dict[Verdict, float]:
        return self.p


def test_a_correction_gets_its_own_replace_threshold_but_not_at_an_unrelated_facts_cost() -> None:
    """Corrections of the old fact retire it below the general REPLACE threshold; the
    correction threshold stops above a correction of something else (decision 594)."""
    old = Fact("Pickup for Green Leaf Pharmacy is at 14:00.", T0)
    fix = pair_features(
        old, Fact("Correction: Green Leaf pickup is 14:30.", T0 + timedelta(minutes=3)), NO_SIM
    )
    other = pair_features(
        Fact("Deploys happen on Fridays.", T0),
        Fact("Correction: the standup is at 10:00.", T0 + timedelta(minutes=3)),
        NO_SIM,
    )
    assert fix.correction and other.correction and not fix.same_time
    oof = [
        (_Fixed(p), Example(f"c{i}", fix, Verdict.REPLACE)) for i, p in enumerate((0.7, 0.72, 0.75))
    ]
    # Alone, the three corrections all retire: the threshold drops under the general one.
    alone = choose_correction_threshold(oof, [], (0.8, 0.3, 0.9))  # type: ignore[arg-type]
    assert alone <= 0.7
    # A correction of something else at 0.71 must not retire its fact: the threshold stops
    # above it, and the correction at 0.70 waits for review.
    unrelated = [(_Fixed(0.71), Example("u0~c0", other, Verdict.KEEP, counted=False))]
    t_corr = choose_correction_threshold(oof, unrelated, (0.8, 0.3, 0.9))  # type: ignore[arg-type]
    assert 0.71 < t_corr <= 0.72
    model = replace(_model(), replace_threshold=0.8, correction_threshold=t_corr)
    assert decide_with(model, fix, _Fixed(0.72).p).verdict is Verdict.REPLACE
    assert decide_with(model, other, _Fixed(0.71).p).verdict is not Verdict.REPLACE
    assert (
        decide_with(replace(model, correction_threshold=None), fix, _Fixed(0.72).p).verdict
        is not Verdict.REPLACE
    )


def test_folds_are_stable_and_spread() -> None:
    assert fold_of("alpha-001", 5) == fold_of("alpha-001", 5)
    assert len({fold_of(f"id-{i}", 5) for i in range(50)}) == 5


def test_a_model_file_for_other_features_is_refused() -> None:
    data = _model().to_dict()
    data["feature_names"] = ["something", "else"]
    with pytest.raises(ModelFormatError):
        JudgeModel.from_dict(data)


def test_constructed_pairs_teach_the_model_but_never_set_its_thresholds_or_figures() -> None:
    """Uncounted (constructed) pairs change the fit, not the counted cross-validation."""
    examples = _examples()
    unrelated = [
        Example(
            f"x{i}~u{i}",
            pair_features(
                Fact("CI runs on Jenkins.", T0),
                Fact("The DB was upgraded to Postgres 16.", T0 + timedelta(days=7)),
                NO_SIM,
            ),
            Verdict.KEEP,
            counted=False,
        )
        for i in range(20)
    ]
    with_built = train_model(examples + unrelated, folds=3, kind="lr")
    without = train_model(examples, folds=3, kind="lr")
    assert with_built.weights != without.weights
    assert with_built.meta["n_train"] == len(examples)
    assert with_built.meta["n_unrelated"] == len(unrelated)


def test_a_constructed_pair_shares_the_fold_of_the_pair_whose_old_fact_it_holds() -> None:
    assert all(fold_of(f"p-{i}~q-{i * 7}", 5) == fold_of(f"p-{i}", 5) for i in range(40))


def test_unrelated_pairs_together_weigh_a_fixed_share_of_the_written_ones() -> None:
    from nika_tui.domain.judge_fit import UNRELATED_WEIGHT, _weights

    examples = _examples()
    built = [replace(e, id=f"{e.id}~u{k}", counted=False) for k in range(4) for e in examples]
    weights = _weights(examples + built)
    assert list(weights[: len(examples)]) == [1.0] * len(examples)
    assert abs(weights[len(examples) :].sum() - UNRELATED_WEIGHT * len(examples)) < 1e-9


def test_a_constructed_pair_is_not_learnt_while_either_of_its_pairs_is_judged() -> None:
    from nika_tui.domain.judge_fit import learns_outside

    i, j = "echo-001", "echo-017"
    held = {fold_of(i, 5), fold_of(j, 5)}
    assert all(not learns_outside(f"{i}~{j}", k, 5) for k in held)
    assert all(learns_outside(f"{i}~{j}", k, 5) for k in set(range(5)) - held)
    assert learns_outside(i, fold_of(j, 5), 5) is (fold_of(i, 5) != fold_of(j, 5))
