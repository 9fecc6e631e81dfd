"""The interactive ``nika setup`` flow, one method per section.

The wizard only *asks*: it fills an answers mapping (the answers-file shape) plus the secret
values typed in this run, and hands both to the pure :func:`~nika_tui.domain.answers.build_setup`.
Nothing is written until the summary is confirmed; the caller then calls
:func:`~nika_tui.wizard.apply.write_setup`. Ctrl-C raises :class:`KeyboardInterrupt` anywhere.
"""

from __future__ import annotations

import getpass
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from nika_tui.domain.answers import (
    AUTO_ACTION_KEYS,
    AnswersInvalid,
    SetupPlan,
    build_setup,
    check_display_name,
    check_knowledge_repo,
    check_tenant_id_answer,
    config_to_answers,
    knowledge_repo_is_url,
    parse_quota,
)
from nika_tui.domain.provider_formats import (
    PROVIDER_FIELDS,
    PROVIDER_LABELS,
    FieldSpec,
    masked_value,
    parse_service_account,
)
from nika_tui.domain.tenant import (
    PLAN_QUOTAS,
    AgentCli,
    AutoMode,
    JudgeKind,
    Language,
    Plan,
    Privacy,
    Provider,
    SecretSource,
    TenantConfig,
)
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import SecretStoreError, TenantNotFound, ValidationFailed
from nika_tui.paths import tenant_config_path
from nika_tui.services.agent_clis import AgentCliInfo, detect_agent_clis
from nika_tui.services.config_store import list_tenant_ids, load_tenant
from nika_tui.services.provider_verify import Endpoints, VerifyStatus, verify_provider
from nika_tui.services.secrets import SecretStore
from nika_tui.wizard.prompts import Prompter
from nika_tui.wizard.summary import quotas_text, render_summary

#: Sections of ``nika setup SECTION``, in the order of the full flow.
SECTIONS: dict[str, str] = {
    "identity": "display name and language",
    "plan": "plan level (Free / Pro / Multimodal)",
    "agent": "agent CLI",
    "privacy": "privacy mode and judge",
    "providers": "cloud provider keys",
    "knowledge": "knowledge repository (compression)",
    "auto-actions": "automatic actions",
    "quotas": "quotas (CPU, RAM, tokens)",
}

_PRIVACY_LABELS = {
    Privacy.LOCAL: "local    nothing leaves this machine (rules judge or a local endpoint)",
    Privacy.DEFAULT: "default  the agent's own subscription does the judging",
    Privacy.CLOUD: "cloud    a configured OpenAI-compatible endpoint judges",
}
_AUTO_LABELS = {
    "scale": "auto-scale (spawn or stop VPS workers)",
    "compress": "auto-compress (strategy A, to the knowledge repo)",
    "purge": "auto-purge (retire stale memories)",
    "rem": "auto-REM (the consolidation pass)",
}
_URL = re.compile(r"^https?://[^\s/]+\S*$")


@dataclass(frozen=True, slots=True)
class WizardOutcome:
    """A confirmed setup, ready for :func:`write_setup`."""

    plan: SetupPlan
    store: SecretStore
    storage: SecretSource
    backup: bool


def suggest_tenant_id(user: str) -> str:
    """A valid tenant id derived from a user name (``John.Doe`` → ``john-doe``)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", user.lower()).strip("-")[:40]
    return slug if check_tenant_id_answer(slug) is None else "default"


class SetupWizard:
    """The interactive setup of one tenant.

    Args:
        prompter: Asks the questions.
        out: Where notes and the summary are printed.
        store_factory: Builds the tenant's :class:`SecretStore` once its id is known.
        detect: Agent CLI detection (tests give a PATH of stand-in executables).
        verify: Run the online read-only checks (``--verify``).
        endpoints: Base URLs for those checks.
        env: Environment for paths.
    """

    def __init__(
        self,
        prompter: Prompter,
        *,
        out: TextIO,
        store_factory: Callable[[str], SecretStore],
        detect: Callable[[], Mapping[AgentCli, AgentCliInfo]] = detect_agent_clis,
        verify: bool = False,
        endpoints: Endpoints | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.ask = prompter
        self.out = out
        self._store_factory = store_factory
        self._detect = detect
        self._clis: Mapping[AgentCli, AgentCliInfo] | None = None
        self.verify = verify
        self.endpoints = endpoints
        self.env = env
        self.answers: dict[str, Any] = {}
        self.values: dict[Provider, dict[str, str]] = {}
        self.judge_endpoint: str | None = None
        self.judge_model: str | None = None
        self.base: TenantConfig | None = None
        self._store: SecretStore | None = None

    # -- entry point -------------------------------------------------------------------------

    def run(self, tenant_id: str | None = None, section: str | None = None) -> WizardOutcome | None:
        """Run the wizard; ``None`` when the user kept things as they were or quit.

        Raises:
            ValidationFailed: Bad tenant id or section name.
            TenantNotFound: ``section`` was given for a tenant that does not exist.
            ConfigError: The existing config is malformed (it is left untouched).
            KeyboardInterrupt: Ctrl-C (nothing has been written).
        """
        if section is not None and section not in SECTIONS:
            raise ValidationFailed(
                f"unknown setup section {section!r}", "choose one of: " + ", ".join(SECTIONS)
            )
        if tenant_id is not None:
            check_tenant_id(tenant_id)
        if section is not None:
            tid = tenant_id or self._pick_existing()
            self._start_from(load_tenant(tid, self.env))
            self._ask_section(section)
            return self._review(backup=False)
        if tenant_id is None:
            self.say("Welcome to nika-os. Let's set up a tenant (Ctrl-C quits, nothing written).")
            tenant_id = self.ask.text(
                "Tenant id",
                default=suggest_tenant_id(getpass.getuser()),
                validate=check_tenant_id_answer,
                instruction="(lowercase letters, digits, '-')",
            )
        if tenant_config_path(tenant_id, self.env).exists():
            return self._existing(load_tenant(tenant_id, self.env))
        self._start_fresh(tenant_id)
        for name in SECTIONS:
            self._ask_section(name)
        return self._review(backup=False)

    def _existing(self, config: TenantConfig) -> WizardOutcome | None:
        self.say(
            f"Tenant {config.tenant_id!r} already exists ({config.plan.value}, "
            f"{config.agent_cli.value}, privacy {config.privacy.value})."
        )
        action = self.ask.select(
            "What do you want to do?",
            [
                ("Keep it as it is", "keep"),
                ("Modify a section", "modify"),
                ("Reset (start over; the old config is backed up)", "reset"),
            ],
            default="keep",
        )
        if action == "keep":
            self.say("Kept unchanged. Nothing written.")
            return None
        if action == "modify":
            self._start_from(config)
            self._ask_section(self._pick_section())
            return self._review(backup=False)
        self._start_fresh(config.tenant_id)
        for name in SECTIONS:
            self._ask_section(name)
        return self._review(backup=True)

    # -- state -------------------------------------------------------------------------------

    def _start_fresh(self, tenant_id: str) -> None:
        self.base = None
        self.values = {}
        self.judge_endpoint = self.judge_model = None
        self.answers = {"tenant_id": tenant_id, "quotas": None, "providers": []}
        self._store = self._store_factory(tenant_id)

    def _start_from(self, config: TenantConfig) -> None:
        self.base = config
        self.values = {}
        self.answers = config_to_answers(config)
        if config.quotas == PLAN_QUOTAS[config.plan]:
            self.answers["quotas"] = None  # follow the plan if it changes
        if config.judge.kind is JudgeKind.HTTP:
            self.judge_endpoint, self.judge_model = config.judge.endpoint, config.judge.model
        self._store = self._store_factory(config.tenant_id)

    @property
    def store(self) -> SecretStore:
        assert self._store is not None, "tenant not chosen yet"
        return self._store

    def say(self, text: str) -> None:
        """Print one note for the user."""
        self.out.write(text + "\n")
        self.out.flush()

    def clis(self) -> Mapping[AgentCli, AgentCliInfo]:
        """Agent CLI detection, run once."""
        if self._clis is None:
            self._clis = self._detect()
        return self._clis

    def plan(self) -> SetupPlan:
        """The pure answers → config step over the current answers."""
        return build_setup(
            self.answers,
            provider_values=self.values,
            storage=self.store.storage(),
            accept_risk=True,  # each autonomous choice was confirmed at its prompt
            require_accept_risk=False,
            allow_unset_secrets=self.store.storage() is SecretSource.ENV,
            base=self.base,
            judge_endpoint=self.judge_endpoint,
            judge_model=self.judge_model,
            source="wizard",
        )

    # -- review ------------------------------------------------------------------------------

    def _review(self, backup: bool) -> WizardOutcome | None:
        while True:
            try:
                plan = self.plan()
            except AnswersInvalid as exc:
                self.say(exc.message)
                self._ask_section(self._pick_section())
                continue
            self.say(
                render_summary(
                    plan,
                    config_path=tenant_config_path(plan.config.tenant_id, self.env),
                    values=self.values,
                    agent=self.clis().get(plan.config.agent_cli),
                    keyring_service=self.store.service,
                    insecure_path=self.store.insecure_path,
                    backup=backup,
                )
            )
            action = self.ask.select(
                "Write this configuration?",
                [
                    ("Write it", "write"),
                    ("Modify a section first", "modify"),
                    ("Quit without writing", "quit"),
                ],
                default="write",
            )
            if action == "write":
                return WizardOutcome(plan, self.store, self.store.storage(), backup)
            if action == "quit":
                self.say("Nothing written.")
                return None
            self._ask_section(self._pick_section())

    def _pick_section(self) -> str:
        return self.ask.select(
            "Which section?", [(f"{k:<13} {v}", k) for k, v in SECTIONS.items()], default=None
        )

    def _pick_existing(self) -> str:
        ids = list_tenant_ids(self.env)
        if not ids:
            raise TenantNotFound("no tenant is configured yet", "run `nika setup` first")
        if len(ids) == 1:
            return ids[0]
        return self.ask.select("Which tenant?", [(i, i) for i in ids], default=ids[0])

    # -- sections ----------------------------------------------------------------------------

    def _ask_section(self, name: str) -> None:
        {
            "identity": self._identity,
            "plan": self._plan_level,
            "agent": self._agent,
            "privacy": self._privacy,
            "providers": self._providers,
            "knowledge": self._knowledge,
            "auto-actions": self._auto_actions,
            "quotas": self._quotas,
        }[name]()

    def _identity(self) -> None:
        a = self.answers
        a["display_name"] = self.ask.text(
            "Display name",
            default=a.get("display_name") or str(a["tenant_id"]),
            validate=check_display_name,
        )
        a["language"] = self.ask.select(
            "Language",
            [("English", Language.EN.value), ("Français", Language.FR.value)],
            default=a.get("language", Language.EN.value),
        )

    def _plan_level(self) -> None:
        self.answers["plan"] = self.ask.select(
            "Plan level",
            [(f"{p.value:<11} {quotas_text(PLAN_QUOTAS[p])}", p.value) for p in Plan],
            default=self.answers.get("plan", Plan.FREE.value),
        )

    def _agent(self) -> None:
        clis = self.clis()
        order = [AgentCli.CLAUDE_CODE, AgentCli.CODEX, AgentCli.GEMINI_CLI, AgentCli.OPENCODE]
        first_installed = next((c for c in order if clis[c].installed), AgentCli.SHELL)
        choices = []
        for cli in AgentCli:
            info = clis[cli]
            state = f"installed {info.version or ''}".strip() if info.installed else "not found"
            choices.append((f"{info.label:<12} {state}", cli.value))
        chosen = AgentCli(
            self.ask.select(
                "Agent CLI for this tenant",
                choices,
                default=self.answers.get("agent_cli", first_installed.value),
            )
        )
        self.answers["agent_cli"] = chosen.value
        info = clis[chosen]
        if not info.installed:
            self.say(
                f"{info.label} is not installed ({info.binary} not found on PATH). "
                f"Install it with: {info.install_hint}. Setup goes on; its kernel starts once "
                "it is on PATH."
            )

    def _privacy(self) -> None:
        privacy = Privacy(
            self.ask.select(
                "Privacy mode",
                [(label, p.value) for p, label in _PRIVACY_LABELS.items()],
                default=self.answers.get("privacy", Privacy.LOCAL.value),
            )
        )
        self.answers["privacy"] = privacy.value
        if privacy is Privacy.CLOUD:
            self.judge_endpoint = self.ask.text(
                "Judge endpoint (OpenAI-compatible base URL)",
                default=self.judge_endpoint or "",
                validate=lambda v: None if _URL.match(v) else "expected http(s)://host[/path]",
            )
            self.judge_model = (
                self.ask.text("Judge model (empty for the endpoint's default)", default="") or None
            )

    def _providers(self) -> None:
        current = set(self.answers.get("providers") or [])
        chosen = self.ask.checkbox(
            "Cloud providers to configure (each optional; space toggles, Enter confirms)",
            [(PROVIDER_LABELS[p], p.value, p.value in current) for p in Provider],
        )
        self.answers["providers"] = chosen
        for dropped in [p for p in self.values if p.value not in chosen]:
            del self.values[dropped]
        if chosen and self.store.storage() is SecretSource.ENV:
            self.say(
                f"No secure store: {self.store.status().reason}. Keys will not be saved; nika "
                "records the provider's environment variable names and reads them at run time. "
                "To keep them in a 0600 file instead, re-run with --insecure-storage."
            )
        for value in chosen:
            self._provider(Provider(value))

    def _provider(self, provider: Provider) -> None:
        label = PROVIDER_LABELS[provider]
        kept = self.base.providers.get(provider) if self.base is not None else None
        if (
            kept is not None
            and provider not in self.values
            and self.ask.confirm(f"Keep the saved {label} credentials?", default=True)
        ):
            return
        while True:
            values: dict[str, str] = {}
            for spec in PROVIDER_FIELDS[provider]:
                value = self._field(spec)
                if value is not None:
                    values[spec.name] = value
            if values:
                self.values[provider] = values
            if not self._verify(provider, values):
                return
            if not self.ask.confirm(f"Enter the {label} credentials again?", default=True):
                return

    def _env_value(self, spec: FieldSpec) -> str | None:
        try:
            return self.store.env_value(spec.provider, spec.name)
        except SecretStoreError as exc:
            self.say(f"  {exc.message}")
            return None

    def _field(self, spec: FieldSpec) -> str | None:
        env_value = self._env_value(spec)
        if self.store.storage() is SecretSource.ENV:
            if env_value is None:
                self.say(f"  set {spec.env_var} before running nika ({spec.label})")
                return None
            reason = spec.check(env_value)
            if reason is not None:
                self.say(f"  {spec.env_var} is set but invalid: {reason}")
                return None
            shown = masked_value(spec.provider, spec.name, env_value)
            self.say(f"  {spec.env_var} is set ({shown})")
            return env_value
        if env_value is not None and spec.check(env_value) is None:
            shown = masked_value(spec.provider, spec.name, env_value)
            if self.ask.confirm(f"Use {spec.env_var} from the environment ({shown})?"):
                return env_value
        if spec.env_is_path:
            path = self.ask.text(f"{spec.label}: path to the file", validate=_service_account_path)
            return Path(path).expanduser().read_text(encoding="utf-8")
        prompt = self.ask.password if spec.secret else self.ask.text
        return prompt(f"{spec.label} ({spec.expected})", validate=spec.check)

    def _verify(self, provider: Provider, values: Mapping[str, str]) -> bool:
        """Run the online check when asked; True when the key was rejected."""
        if not self.verify or len(values) < len(PROVIDER_FIELDS[provider]):
            return False
        if self.answers.get("privacy") == Privacy.LOCAL.value:
            self.say("  online check skipped: privacy 'local' keeps everything on this machine")
            return False
        result = verify_provider(provider, values, endpoints=self.endpoints)
        self.say(f"  online check {PROVIDER_LABELS[provider]}: {result.status} — {result.detail}")
        return result.status is VerifyStatus.INVALID

    def _knowledge(self) -> None:
        repo = self.ask.text(
            "Knowledge repository for compression (path or git URL, empty for none)",
            default=self.answers.get("knowledge_repo") or "",
            validate=check_knowledge_repo,
        )
        self.answers["knowledge_repo"] = repo or None
        if repo and not knowledge_repo_is_url(repo) and not Path(repo).expanduser().exists():
            self.say(f"  note: {repo} does not exist yet; compression will create it")

    def _auto_actions(self) -> None:
        current = dict(self.answers.get("auto_actions") or {})
        for key in AUTO_ACTION_KEYS:
            if key not in _AUTO_LABELS:
                continue  # kept as it is (not asked by the wizard)
            mode = AutoMode(
                self.ask.select(
                    _AUTO_LABELS[key],
                    [
                        ("escalate    ask me every time", AutoMode.ESCALATE.value),
                        ("off         never", AutoMode.OFF.value),
                        ("autonomous  act without asking", AutoMode.AUTONOMOUS.value),
                    ],
                    default=current.get(key, AutoMode.ESCALATE.value),
                )
            )
            if mode is AutoMode.AUTONOMOUS and not self.ask.confirm(
                f"Autonomous {key} acts without asking you (it may spend money or retire "
                "memories). Allow it?",
                default=False,
            ):
                mode = AutoMode.ESCALATE
                self.say(f"  {key}: escalate (ask every time)")
            current[key] = mode.value
        self.answers["auto_actions"] = current

    def _quotas(self) -> None:
        plan = Plan(self.answers.get("plan", Plan.FREE.value))
        defaults = PLAN_QUOTAS[plan]
        if self.ask.confirm(
            f"Use the {plan.value} plan quotas ({quotas_text(defaults)})?",
            default=self.answers.get("quotas") is None,
        ):
            self.answers["quotas"] = None
            return
        current = dict(self.answers.get("quotas") or defaults.model_dump())
        for key, label in (
            ("cpu_percent", "CPU % (100 = one core)"),
            ("ram_mb", "RAM in MB"),
            ("tokens_per_day", "Tokens per day"),
        ):
            text = self.ask.text(
                label, default=str(current[key]), validate=_quota_check(key)
            ).replace(",", "")
            current[key] = int(text)
        self.answers["quotas"] = current


def _quota_check(key: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        parsed = parse_quota(value.replace(",", "").strip(), key)
        return parsed if isinstance(parsed, str) else None

    return check


def _service_account_path(value: str) -> str | None:
    path = Path(value).expanduser()
    if not value or not path.is_file():
        return "no such file"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "cannot read that file"
    parsed = parse_service_account(text)
    return parsed if isinstance(parsed, str) else None
