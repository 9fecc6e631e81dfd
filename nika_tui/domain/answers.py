"""The pure answers → :class:`TenantConfig` step, shared by the wizard and ``--non-interactive``.

An *answers* mapping has exactly the shape of the non-interactive answers file
(``docs/wizard.md``). :func:`build_setup` validates every answer, collects **every** problem
(field name + reason) before failing, turns provider secrets into references, and returns a
:class:`SetupPlan`: the config to write, the secret values to put in the store, and warnings.
No I/O happens here; the caller reads env vars / prompts and writes files.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nika_tui.domain.provider_formats import PROVIDER_FIELDS
from nika_tui.domain.tenant import (
    PLAN_QUOTAS,
    AgentCli,
    AutoActions,
    AutoMode,
    JudgeConfig,
    JudgeKind,
    KernelConfig,
    Language,
    Plan,
    Privacy,
    Provider,
    ProviderConfig,
    Quotas,
    SecretRef,
    SecretSource,
    TenantConfig,
    TokenLimitAction,
)
from nika_tui.domain.tenant_id import check_tenant_id_answer
from nika_tui.errors import AnswersInvalid, Problem

E = TypeVar("E", Language, Plan, AgentCli, Privacy, Provider, AutoMode)

ANSWER_KEYS: tuple[str, ...] = (
    "tenant_id",
    "display_name",
    "language",
    "plan",
    "agent_cli",
    "privacy",
    "providers",
    "knowledge_repo",
    "auto_actions",
    "quotas",
    "trust_codex_hooks",
)
REQUIRED_KEYS: tuple[str, ...] = (
    "tenant_id",
    "display_name",
    "language",
    "plan",
    "agent_cli",
    "privacy",
)
AUTO_ACTION_KEYS: tuple[str, ...] = tuple(AutoActions.model_fields)
QUOTA_KEYS: tuple[str, ...] = tuple(Quotas.model_fields)
QUOTA_MAX_CPU_PERCENT = 6400
JUDGE_KEY_NAME = "judge.api_key"
"""Keyring / file key of the HTTP judge's API key (service ``nika-os/{tenant}``)."""
JUDGE_KEY_ENV = "NIKA_JUDGE_API_KEY"
"""Where the key is read from when there is no secure store."""
NEEDS_KNOWLEDGE_REPO = "autonomous compress needs a knowledge_repo to write to"

_GIT_URL = re.compile(r"^(https?|ssh|git|file)://\S+$|^[\w.-]+@[\w.-]+:\S+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True, slots=True)
class SetupPlan:
    """What a setup run will do once confirmed.

    Attributes:
        config: The configuration to write (references only, no secret values).
        secrets: Secret values to put in the store, keyed ``{provider}.{field}``.
        warnings: Things the user must know (e.g. env vars to set at run time).
    """

    config: TenantConfig
    secrets: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def check_display_name(value: object) -> str | None:
    """Reason a display name is invalid, or ``None``."""
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty string"
    if len(value.strip()) > 120 or _CONTROL.search(value):
        return "at most 120 printable characters"
    return None


def check_knowledge_repo(value: object) -> str | None:
    """Reason a knowledge repository answer is invalid, or ``None``.

    A git URL (``https://``, ``ssh://``, ``git://``, ``file://``, ``user@host:path``) or a local
    path. Whether the path exists is the caller's business (I/O).
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        return "must be a path or a git URL (a string) or null"
    if _CONTROL.search(value) or len(value) > 1024:
        return "must be one line of at most 1024 characters"
    if "://" in value and not _GIT_URL.match(value):
        return "not a git URL (use https://, ssh://, git:// or file://)"
    return None


def knowledge_repo_is_url(value: str) -> bool:
    """True when the knowledge repository is a git URL rather than a local path."""
    return bool(_GIT_URL.match(value))


def parse_quota(value: object, key: str, cores: int | None = None) -> int | str:
    """An integer quota, or the reason it is not one.

    Args:
        value: The answer.
        key: Which quota (``cpu_percent`` is bounded).
        cores: Cores of the machine that will run the kernel (the wizard and
            ``--non-interactive`` pass the real count); ``None``: not checked.
    """
    # YAML booleans are ints in Python; a quota of `true` is a mistake, not 1.
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            return "must be a positive integer"
    if value <= 0:
        return "must be a positive integer"
    if key == "cpu_percent" and cores is not None and value > 100 * cores:
        return f"at most {100 * cores} ({cores} core{'s' if cores > 1 else ''} on this machine)"
    if key == "cpu_percent" and value > QUOTA_MAX_CPU_PERCENT:
        return f"at most {QUOTA_MAX_CPU_PERCENT} (64 cores)"
    return value


def _enum(
    raw: Mapping[str, Any], key: str, kind: type[E], problems: list[Problem], fld: str = ""
) -> E | None:
    value = raw.get(key)
    allowed = ", ".join(m.value for m in kind)
    if isinstance(value, str) and value in {m.value for m in kind}:
        return kind(value)
    problems.append(Problem(fld or key, f"{value!r} is not allowed; allowed values: {allowed}"))
    return None


def _agents(
    raw: Mapping[str, Any], problems: list[Problem]
) -> tuple[AgentCli | None, list[AgentCli]]:
    """``agent_cli``: one CLI, or a list of CLIs run side by side (the first is the primary)."""
    value = raw.get("agent_cli")
    if not isinstance(value, list):
        return _enum(raw, "agent_cli", AgentCli, problems), []
    if not value:
        problems.append(Problem("agent_cli", "give at least one agent CLI"))
        return None, []
    found = [_enum({"agent_cli": v}, "agent_cli", AgentCli, problems) for v in value]
    agents = [a for a in found if a is not None]
    if len(agents) != len(found):
        return None, []
    if len(agents) > 1 and AgentCli.SHELL in agents:
        problems.append(Problem("agent_cli", "a plain shell cannot run beside agent CLIs"))
    elif len(set(agents)) != len(agents):
        problems.append(Problem("agent_cli", "an agent CLI is listed twice"))
    return agents[0], agents[1:]


def _auto_mode(value: object, fld: str, problems: list[Problem]) -> AutoMode | None:
    # YAML 1.1 reads a bare `off` as False: it means "off" here, as documented.
    if value is False:
        return AutoMode.OFF
    if isinstance(value, str) and value in {m.value for m in AutoMode}:
        return AutoMode(value)
    problems.append(
        Problem(fld, f"{value!r} is not allowed; allowed values: off, escalate, autonomous")
    )
    return None


def _auto_actions(
    value: object, problems: list[Problem], accept_risk: bool, require_accept_risk: bool
) -> AutoActions:
    if value is None:
        return AutoActions()
    if not isinstance(value, Mapping):
        problems.append(Problem("auto_actions", "must be a mapping like {scale: escalate}"))
        return AutoActions()
    modes: dict[str, AutoMode] = {}
    for key, mode in value.items():
        fld = f"auto_actions.{key}"
        if key not in AUTO_ACTION_KEYS:
            problems.append(Problem(fld, f"unknown key; allowed: {', '.join(AUTO_ACTION_KEYS)}"))
            continue
        parsed = _auto_mode(mode, fld, problems)
        if parsed is None:
            continue
        if parsed is AutoMode.AUTONOMOUS and require_accept_risk and not accept_risk:
            problems.append(
                Problem(fld, "autonomous acts without asking; pass --accept-risk to allow it")
            )
        modes[key] = parsed
    return AutoActions.model_validate(modes)


def _quotas(
    value: object, plan: Plan | None, problems: list[Problem], cores: int | None = None
) -> Quotas:
    defaults = PLAN_QUOTAS[plan or Plan.FREE].model_dump()
    if value is None:
        return Quotas.model_validate(defaults)
    if not isinstance(value, Mapping):
        problems.append(Problem("quotas", "must be a mapping like {cpu_percent: 200}"))
        return Quotas.model_validate(defaults)
    for key, raw in value.items():
        fld = f"quotas.{key}"
        if key not in QUOTA_KEYS:
            problems.append(Problem(fld, f"unknown key; allowed: {', '.join(QUOTA_KEYS)}"))
            continue
        if key == "on_token_limit":  # what happens at 100% of tokens_per_day (issue 18)
            allowed = [a.value for a in TokenLimitAction]
            if raw not in allowed:
                problems.append(Problem(fld, f"must be one of {', '.join(allowed)}"))
            else:
                defaults[key] = raw
            continue
        parsed = parse_quota(raw, key, cores=cores)
        if isinstance(parsed, str):
            problems.append(Problem(fld, parsed))
        else:
            defaults[key] = parsed
    return Quotas.model_validate(defaults)


def _providers(value: object, problems: list[Problem]) -> list[Provider]:
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(Problem("providers", "must be a list like [scaleway, gcp]"))
        return []
    allowed = ", ".join(p.value for p in Provider)
    out: list[Provider] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or item not in {p.value for p in Provider}:
            problems.append(
                Problem(f"providers[{i}]", f"{item!r} is not allowed; allowed values: {allowed}")
            )
            continue
        provider = Provider(item)
        if provider in out:
            problems.append(Problem(f"providers[{i}]", f"{provider.value} is listed twice"))
            continue
        out.append(provider)
    return out


def _provider_refs(
    providers: list[Provider],
    values: Mapping[Provider, Mapping[str, str]],
    storage: SecretSource,
    base: TenantConfig | None,
    allow_unset: bool,
    problems: list[Problem],
    secrets: dict[str, str],
    warnings: list[str],
) -> dict[Provider, ProviderConfig]:
    out: dict[Provider, ProviderConfig] = {}
    for provider in providers:
        given = values.get(provider, {})
        kept = base.providers.get(provider) if base is not None else None
        refs: dict[str, SecretRef] = {}
        for spec in PROVIDER_FIELDS[provider]:
            fld = f"providers.{provider.value}.{spec.name}"
            value = given.get(spec.name)
            if value is not None:
                reason = spec.check(value)
                if reason is not None:
                    # The value itself is never echoed: only where it came from and why.
                    problems.append(Problem(fld, f"{spec.env_var}: {reason}"))
                    continue
                if storage is SecretSource.ENV:
                    refs[spec.name] = SecretRef(source=SecretSource.ENV, name=spec.env_var)
                    warnings.append(
                        f"{spec.env_var} must be set when nika runs "
                        f"(no secure store: {spec.label} was not saved)"
                    )
                else:
                    refs[spec.name] = SecretRef(source=storage, name=spec.key)
                    secrets[spec.key] = value
            elif kept is not None and spec.name in kept.fields:
                refs[spec.name] = kept.fields[spec.name]
            elif allow_unset:
                refs[spec.name] = SecretRef(source=SecretSource.ENV, name=spec.env_var)
                warnings.append(f"{spec.env_var} must be set when nika runs ({spec.label})")
            else:
                what = "a path to the JSON file" if spec.env_is_path else spec.expected
                problems.append(
                    Problem(fld, f"set {spec.env_var} ({what}) or pass it with --secret-stdin")
                )
        out[provider] = ProviderConfig(fields=refs)
    return out


def _judge(
    privacy: Privacy | None,
    agent_cli: AgentCli | None,
    base: TenantConfig | None,
    endpoint: str | None,
    model: str | None,
    warnings: list[str],
) -> JudgeConfig:
    old = base.judge if base is not None else JudgeConfig()
    # The learned offline judge is the default (decision 60); a tenant that chose the rules
    # judge by hand keeps it when the wizard runs again.
    offline = JudgeConfig(
        kind=JudgeKind.RULES if old.kind is JudgeKind.RULES else JudgeKind.OFFLINE
    )
    if privacy is Privacy.CLOUD:
        url = endpoint or (old.endpoint if old.kind is JudgeKind.HTTP else None)
        if not url:
            warnings.append(
                f"privacy 'cloud' needs an OpenAI-compatible endpoint: the {offline.kind.value} "
                "judge is used until one is set with `nika setup privacy`"
            )
            return offline
        return JudgeConfig(
            kind=JudgeKind.HTTP, endpoint=url, model=model or old.model, api_key=old.api_key
        )
    if privacy is Privacy.DEFAULT:
        if agent_cli is AgentCli.SHELL:
            warnings.append(
                "privacy 'default' judges with the agent CLI, but the agent is a plain shell: "
                f"the {offline.kind.value} judge is used"
            )
            return offline
        return JudgeConfig(kind=JudgeKind.AGENT_CLI)
    # local: nothing leaves the machine; a local endpoint set by hand is kept.
    if old.kind is JudgeKind.HTTP and old.endpoint and _is_local_url(old.endpoint):
        return old
    return offline


def _is_local_url(url: str) -> bool:
    host = re.sub(r"^[a-z]+://", "", url).split("/")[0].rsplit(":", 1)[0]
    return host in {"localhost", "127.0.0.1", "[::1]", "::1"}


def build_setup(
    raw: Mapping[str, Any],
    *,
    provider_values: Mapping[Provider, Mapping[str, str]] | None = None,
    storage: SecretSource = SecretSource.KEYRING,
    accept_risk: bool = False,
    require_accept_risk: bool = True,
    allow_unset_secrets: bool = False,
    base: TenantConfig | None = None,
    judge_endpoint: str | None = None,
    judge_model: str | None = None,
    judge_api_key: str | None = None,
    source: str = "answers",
    cores: int | None = None,
) -> SetupPlan:
    """Validate answers and build the config, listing every problem at once.

    Args:
        raw: Answers with the answers-file shape (unknown keys are errors).
        provider_values: Secret values known for providers, ``{provider: {field: value}}``
            (for GCP the JSON text). Never written into the config.
        storage: Where new secret values go: ``keyring``, ``file`` (insecure, explicit) or
            ``env`` (no store: the config records the env var name and a warning is added).
        accept_risk: The user allowed ``autonomous`` automatic actions.
        require_accept_risk: ``autonomous`` needs ``accept_risk`` (non-interactive mode).
        allow_unset_secrets: A provider field with no value becomes an env reference plus a
            warning instead of a problem (the wizard with no secure store).
        base: The existing config, whose judge, kernel and provider references are kept.
        judge_endpoint: Endpoint of the HTTP judge (privacy ``cloud``).
        judge_model: Model name for the HTTP judge.
        judge_api_key: The HTTP judge's key typed in the wizard: stored like a provider's
            (``judge.api_key`` in the keyring), never in the config.
        source: Name of the answers' origin, used in the error message.
        cores: Cores of the machine the kernels run on: a ``cpu_percent`` above
            ``cores * 100`` is refused (``None``: not checked).

    Returns:
        The plan: config, secret values to store, warnings.

    Raises:
        AnswersInvalid: One or more answers are missing or invalid (all are listed).
    """
    problems: list[Problem] = []
    if not isinstance(raw, Mapping):
        raise AnswersInvalid([Problem("(root)", "expected a mapping of answers")], source)
    for key in raw:
        if key not in ANSWER_KEYS:
            problems.append(Problem(str(key), f"unknown key; allowed: {', '.join(ANSWER_KEYS)}"))
    for key in REQUIRED_KEYS:
        if key not in raw or raw[key] is None:
            problems.append(Problem(key, "missing"))
    present = {k for k in REQUIRED_KEYS if raw.get(k) is not None}

    tenant_id = raw.get("tenant_id")
    if "tenant_id" in present and (reason := check_tenant_id_answer(tenant_id)):
        problems.append(Problem("tenant_id", reason))
    name = raw.get("display_name")
    if "display_name" in present and (reason := check_display_name(name)):
        problems.append(Problem("display_name", reason))
    language = _enum(raw, "language", Language, problems) if "language" in present else None
    plan = _enum(raw, "plan", Plan, problems) if "plan" in present else None
    agent, more_agents = _agents(raw, problems) if "agent_cli" in present else (None, [])
    privacy = _enum(raw, "privacy", Privacy, problems) if "privacy" in present else None
    providers = _providers(raw.get("providers"), problems)
    repo = raw.get("knowledge_repo")
    if reason := check_knowledge_repo(repo):
        problems.append(Problem("knowledge_repo", reason))
    auto = _auto_actions(raw.get("auto_actions"), problems, accept_risk, require_accept_risk)
    if auto.compress is AutoMode.AUTONOMOUS and not repo:
        # Strategy A writes into the knowledge repo: autonomous compress with none would fail
        # at its first run, every time, instead of here.
        problems.append(Problem("auto_actions.compress", NEEDS_KNOWLEDGE_REPO))
    trust_codex = raw.get("trust_codex_hooks")
    if trust_codex is not None and not isinstance(trust_codex, bool):
        problems.append(Problem("trust_codex_hooks", "must be true or false"))
    quotas = _quotas(raw.get("quotas"), plan, problems, cores)

    secrets: dict[str, str] = {}
    warnings: list[str] = []
    refs = _provider_refs(
        providers,
        provider_values or {},
        storage,
        base,
        allow_unset_secrets,
        problems,
        secrets,
        warnings,
    )
    if problems:
        raise AnswersInvalid(problems, source)
    assert isinstance(tenant_id, str) and isinstance(name, str)
    assert language and plan and agent and privacy
    judge = _judge(privacy, agent, base, judge_endpoint, judge_model, warnings)
    if judge.kind is JudgeKind.HTTP and judge_api_key:
        if storage is SecretSource.ENV:
            ref = SecretRef(source=SecretSource.ENV, name=JUDGE_KEY_ENV)
            warnings.append(f"no secure store for the judge's key: set {JUDGE_KEY_ENV}")
        else:
            ref = SecretRef(source=storage, name=JUDGE_KEY_NAME)
            secrets[JUDGE_KEY_NAME] = judge_api_key
        judge = judge.model_copy(update={"api_key": ref})
    config = TenantConfig(
        tenant_id=tenant_id,
        display_name=name.strip(),
        language=language,
        plan=plan,
        agent_cli=agent,
        more_agent_clis=more_agents,
        privacy=privacy,
        providers=refs,
        knowledge_repo=repo or None,
        auto_actions=auto,
        quotas=quotas,
        judge=judge,
        kernel=_kernel(base, trust_codex if isinstance(trust_codex, bool) else None),
        demo=base.demo if base is not None else False,
        # What agents may decide is set in the config, not by the wizard: an edit keeps it.
        agents=base.agents
        if base is not None
        else TenantConfig.model_fields["agents"].get_default(call_default_factory=True),
    )
    return SetupPlan(config=config, secrets=secrets, warnings=list(dict.fromkeys(warnings)))


def _kernel(base: TenantConfig | None, trust_codex: bool | None) -> KernelConfig:
    """The kernel settings kept from ``base``, with the Codex trust consent when answered."""
    kernel = base.kernel if base is not None else KernelConfig()
    if trust_codex is None:
        return kernel
    return kernel.model_copy(update={"trust_codex_hooks": trust_codex})


def config_to_answers(config: TenantConfig) -> dict[str, Any]:
    """The answers that would rebuild ``config`` (used to edit one section of it)."""
    return {
        "tenant_id": config.tenant_id,
        "display_name": config.display_name,
        "language": config.language.value,
        "plan": config.plan.value,
        "agent_cli": [c.value for c in config.agent_clis]
        if config.more_agent_clis
        else config.agent_cli.value,
        "privacy": config.privacy.value,
        "providers": [p.value for p in config.providers],
        "knowledge_repo": config.knowledge_repo,
        "auto_actions": config.auto_actions.model_dump(mode="json"),
        "quotas": config.quotas.model_dump(mode="json"),
        "trust_codex_hooks": config.kernel.trust_codex_hooks,
    }
