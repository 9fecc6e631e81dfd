"""The pure answers → TenantConfig step."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
import yaml

from nika_tui.domain.answers import build_setup, config_to_answers
from nika_tui.domain.tenant import (
    PLAN_QUOTAS,
    AutoMode,
    JudgeConfig,
    JudgeKind,
    Plan,
    Provider,
    SecretSource,
)
from nika_tui.errors import AnswersInvalid

SCW = {"access_key": "SCWABCDEFGHIJ1234567", "secret_key": "1b4e28ba-2fa1-11d2-883f-0016d3cca427"}

ISSUE_EXAMPLE = """\
tenant_id: acme
display_name: Acme Corp
language: en                 # en | fr
plan: pro                    # free | pro | multimodal
agent_cli: claude-code       # claude-code | codex | gemini-cli | opencode | shell
privacy: default             # local | default | cloud
providers: [scaleway]
knowledge_repo: null         # a path or a git URL
auto_actions: {scale: escalate, compress: off, purge: escalate, rem: autonomous}
quotas: {cpu_percent: 200, ram_mb: 8192, tokens_per_day: 2000000}
"""


def answers(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = yaml.safe_load(ISSUE_EXAMPLE)
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not ...}


def problems_of(exc: pytest.ExceptionInfo[AnswersInvalid]) -> dict[str, str]:
    return {p.field: p.message for p in exc.value.problems}


def test_issue_example_builds_the_config() -> None:
    plan = build_setup(answers(), provider_values={Provider.SCALEWAY: SCW}, accept_risk=True)
    c = plan.config
    assert (c.tenant_id, c.display_name, c.plan, c.agent_cli.value) == (
        "acme",
        "Acme Corp",
        Plan.PRO,
        "claude-code",
    )
    assert c.auto_actions.compress is AutoMode.OFF  # YAML bare `off` is False → off
    assert c.auto_actions.rem is AutoMode.AUTONOMOUS
    assert c.judge.kind is JudgeKind.AGENT_CLI
    refs = c.providers[Provider.SCALEWAY].fields
    assert refs["access_key"].source is SecretSource.KEYRING
    assert refs["access_key"].name == "scaleway.access_key"
    assert plan.secrets == {
        "scaleway.access_key": SCW["access_key"],
        "scaleway.secret_key": SCW["secret_key"],
    }
    dumped = c.model_dump_json()
    assert SCW["access_key"] not in dumped and SCW["secret_key"] not in dumped


def test_every_missing_answer_is_listed_at_once() -> None:
    with pytest.raises(AnswersInvalid) as exc:
        build_setup({})
    assert set(problems_of(exc)) == {
        "tenant_id",
        "display_name",
        "language",
        "plan",
        "agent_cli",
        "privacy",
    }
    assert "6 missing or invalid answers" in exc.value.message


def test_every_invalid_answer_is_listed_with_its_field() -> None:
    raw = answers(
        language="de",
        plan="enterprise",
        agent_cli="cursor",
        privacy="public",
        providers=["scaleway", "digitalocean", "scaleway"],
        auto_actions={"scale": "sometimes", "nap": "off", "purge": True},
        quotas={"cpu_percent": -1, "ram_mb": True, "disk_gb": 3},
        knowledge_repo="ftp://example.com/repo",
        colour="blue",
    )
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(raw, provider_values={Provider.SCALEWAY: SCW}, accept_risk=True)
    found = problems_of(exc)
    assert set(found) == {
        "colour",
        "language",
        "plan",
        "agent_cli",
        "privacy",
        "providers[1]",
        "providers[2]",
        "auto_actions.scale",
        "auto_actions.nap",
        "auto_actions.purge",
        "quotas.cpu_percent",
        "quotas.ram_mb",
        "quotas.disk_gb",
        "knowledge_repo",
    }
    assert "allowed values: en, fr" in found["language"]
    assert found["colour"].startswith("unknown key")


class IdCase(NamedTuple):
    test_id: str
    value: object


BAD_IDS = [
    IdCase("dotdot", "../x"),
    IdCase("space-upper", "A B"),
    IdCase("too-long", "a" * 300),
    IdCase("leading-dash", "-acme"),
    IdCase("number", 42),
]


@pytest.mark.parametrize("case", BAD_IDS, ids=[c.test_id for c in BAD_IDS])
def test_bad_tenant_ids_are_refused(case: IdCase) -> None:
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(answers(tenant_id=case.value, providers=[], auto_actions=None))
    assert set(problems_of(exc)) == {"tenant_id"}


def test_autonomous_needs_accept_risk_only_when_required() -> None:
    raw = answers(providers=[])
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(raw)
    assert "--accept-risk" in problems_of(exc)["auto_actions.rem"]
    assert build_setup(raw, accept_risk=True).config.auto_actions.rem is AutoMode.AUTONOMOUS
    wizard = build_setup(raw, require_accept_risk=False)
    assert wizard.config.auto_actions.rem is AutoMode.AUTONOMOUS


def test_quotas_default_to_the_plan_and_fill_partial_answers() -> None:
    raw = answers(providers=[], auto_actions=None, quotas=None, plan="multimodal")
    assert build_setup(raw).config.quotas == PLAN_QUOTAS[Plan.MULTIMODAL]
    partial = build_setup(answers(providers=[], auto_actions=None, quotas={"ram_mb": 4096}))
    assert partial.config.quotas.ram_mb == 4096
    assert partial.config.quotas.cpu_percent == PLAN_QUOTAS[Plan.PRO].cpu_percent


def test_a_bad_secret_is_reported_by_variable_never_by_value() -> None:
    bad = {"access_key": "SCW-oops-this-is-secret", "secret_key": SCW["secret_key"]}
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(answers(auto_actions=None), provider_values={Provider.SCALEWAY: bad})
    message = problems_of(exc)["providers.scaleway.access_key"]
    assert message.startswith("SCW_ACCESS_KEY:")
    assert "oops" not in exc.value.message


def test_a_missing_secret_names_the_variable_to_set() -> None:
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(answers(auto_actions=None, providers=["gcp"]))
    assert "GOOGLE_APPLICATION_CREDENTIALS" in problems_of(exc)["providers.gcp.service_account"]


def test_no_secure_store_records_env_names_and_warns() -> None:
    plan = build_setup(
        answers(auto_actions=None),
        provider_values={Provider.SCALEWAY: SCW},
        storage=SecretSource.ENV,
    )
    refs = plan.config.providers[Provider.SCALEWAY].fields
    assert refs["secret_key"].source is SecretSource.ENV
    assert refs["secret_key"].name == "SCW_SECRET_KEY"
    assert plan.secrets == {}
    assert any("SCW_SECRET_KEY must be set" in w for w in plan.warnings)


def test_existing_references_are_kept_when_no_new_value_is_given() -> None:
    first = build_setup(answers(auto_actions=None), provider_values={Provider.SCALEWAY: SCW})
    again = build_setup(answers(auto_actions=None, plan="free"), base=first.config)
    assert again.config.providers == first.config.providers
    assert again.secrets == {}
    assert again.config.plan is Plan.FREE


class JudgeCase(NamedTuple):
    test_id: str
    privacy: str
    agent: str
    endpoint: str | None
    kind: JudgeKind
    warns: bool
    before: JudgeKind | None = None
    """The judge of the existing config (``None``: a first setup)."""


JUDGES = [
    JudgeCase("local-offline", "local", "claude-code", None, JudgeKind.OFFLINE, False),
    JudgeCase("default-agent", "default", "codex", None, JudgeKind.AGENT_CLI, False),
    JudgeCase("default-shell", "default", "shell", None, JudgeKind.OFFLINE, True),
    JudgeCase("cloud-endpoint", "cloud", "shell", "https://llm.example/v1", JudgeKind.HTTP, False),
    JudgeCase("cloud-no-endpoint", "cloud", "shell", None, JudgeKind.OFFLINE, True),
    JudgeCase(
        "local-rules-kept", "local", "claude-code", None, JudgeKind.RULES, False, JudgeKind.RULES
    ),
    JudgeCase(
        "local-agent-to-offline",
        "local",
        "claude-code",
        None,
        JudgeKind.OFFLINE,
        False,
        JudgeKind.AGENT_CLI,
    ),
    JudgeCase("shell-rules-kept", "default", "shell", None, JudgeKind.RULES, True, JudgeKind.RULES),
]


@pytest.mark.parametrize("case", JUDGES, ids=[c.test_id for c in JUDGES])
def test_privacy_picks_the_judge(case: JudgeCase) -> None:
    raw = answers(providers=[], auto_actions=None, privacy=case.privacy, agent_cli=case.agent)
    base = None
    if case.before is not None:
        first = build_setup(answers(providers=[], auto_actions=None), accept_risk=True)
        base = first.config.model_copy(update={"judge": JudgeConfig(kind=case.before)})
    plan = build_setup(raw, judge_endpoint=case.endpoint, base=base)
    assert plan.config.judge.kind is case.kind
    assert bool(plan.warnings) == case.warns


def test_config_to_answers_round_trips() -> None:
    plan = build_setup(answers(), provider_values={Provider.SCALEWAY: SCW}, accept_risk=True)
    again = build_setup(config_to_answers(plan.config), base=plan.config, accept_risk=True)
    assert again.config == plan.config


def test_codex_trust_consent_is_a_boolean_kept_with_the_kernel() -> None:
    values = {Provider.SCALEWAY: SCW}
    given = build_setup(
        answers(agent_cli="codex", trust_codex_hooks=True), provider_values=values, accept_risk=True
    )
    assert given.config.kernel.trust_codex_hooks is True
    unasked = build_setup(answers(agent_cli="codex"), provider_values=values, accept_risk=True)
    assert unasked.config.kernel.trust_codex_hooks is None
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(answers(trust_codex_hooks="yes"), provider_values=values, accept_risk=True)
    assert problems_of(exc) == {"trust_codex_hooks": "must be true or false"}


def test_agent_cli_may_be_a_list_of_agents_side_by_side() -> None:
    values = {Provider.SCALEWAY: SCW}
    plan = build_setup(
        answers(agent_cli=["claude-code", "codex"]), provider_values=values, accept_risk=True
    )
    assert plan.config.agent_cli.value == "claude-code"
    assert [c.value for c in plan.config.agent_clis] == ["claude-code", "codex"]
    assert config_to_answers(plan.config)["agent_cli"] == ["claude-code", "codex"]
    single = build_setup(answers(agent_cli="codex"), provider_values=values, accept_risk=True)
    assert [c.value for c in single.config.agent_clis] == ["codex"]
    assert config_to_answers(single.config)["agent_cli"] == "codex"  # a single value stays one
    for bad, message in (
        (["claude-code", "claude-code"], "an agent CLI is listed twice"),
        (["shell", "codex"], "a plain shell cannot run beside agent CLIs"),
        ([], "give at least one agent CLI"),
    ):
        with pytest.raises(AnswersInvalid) as exc:
            build_setup(answers(agent_cli=bad), provider_values=values, accept_risk=True)
        assert problems_of(exc) == {"agent_cli": message}


def test_autonomous_compress_needs_a_knowledge_repo() -> None:
    auto = {"compress": "autonomous"}
    with pytest.raises(AnswersInvalid) as exc:
        build_setup(answers(providers=[], auto_actions=auto, knowledge_repo=None), accept_risk=True)
    assert "knowledge_repo" in problems_of(exc)["auto_actions.compress"]
    with_repo = answers(providers=[], auto_actions=auto, knowledge_repo="/srv/knowledge")
    config = build_setup(with_repo, accept_risk=True).config
    assert config.auto_actions.compress is AutoMode.AUTONOMOUS


class QuotaCase(NamedTuple):
    test_id: str
    value: str
    cores: int | None
    expected: int | str


QUOTA_CASES = [
    QuotaCase("two-cores-full", "200", 2, 200),
    QuotaCase("two-cores-over", "201", 2, "at most 200 (2 cores on this machine)"),
    QuotaCase("one-core-over", "150", 1, "at most 100 (1 core on this machine)"),
    QuotaCase("answers-file-no-machine", "800", None, 800),
    QuotaCase("answers-file-absolute-bound", "6401", None, "at most 6400 (64 cores)"),
    QuotaCase("not-a-number", "lots", 2, "must be a positive integer"),
]


@pytest.mark.parametrize("case", QUOTA_CASES, ids=[c.test_id for c in QUOTA_CASES])
def test_cpu_quota_bound_comes_from_the_real_core_count(case: QuotaCase) -> None:
    from nika_tui.domain.answers import parse_quota

    assert parse_quota(case.value, "cpu_percent", cores=case.cores) == case.expected
