"""The interactive ``nika setup`` flow, one method per section.

The wizard only *asks*: it fills an answers mapping (the answers-file shape) plus the secret
values typed in this run, and hands both to the pure :func:`~nika_tui.domain.answers.build_setup`.
Nothing is written until the summary is confirmed; the caller then calls
:func:`~nika_tui.wizard.apply.write_setup`. Ctrl-C raises :class:`KeyboardInterrupt` anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from nika_tui.domain.answers import (
    SetupPlan,
    build_setup,
    config_to_answers,
)
from nika_tui.domain.tenant import (
    PLAN_QUOTAS,
    AgentCli,
    JudgeKind,
    Provider,
    SecretSource,
    TenantConfig,
)
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import AnswersInvalid, TenantNotFound, ValidationFailed
from nika_tui.paths import Roots
from nika_tui.services.agent_clis import AgentCliInfo, detect_agent_clis
from nika_tui.services.config_store import list_tenant_ids, load_tenant
from nika_tui.services.provider_verify import Endpoints
from nika_tui.services.secrets import SecretStore
from nika_tui.wizard.first_prompt import ask_tenant_id
from nika_tui.wizard.judge_section import stored_judge_key
from nika_tui.wizard.prompts import Prompter
from nika_tui.wizard.sections import SectionsMixin
from nika_tui.wizard.summary import render_summary

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


@dataclass(frozen=True, slots=True)
class WizardOutcome:
    """A confirmed setup, ready for :func:`write_setup`."""

    plan: SetupPlan
    store: SecretStore
    storage: SecretSource
    backup: bool


class SetupWizard(SectionsMixin):
    """The interactive setup of one tenant.

    Args:
        prompter: Asks the questions.
        out: Where notes and the summary are printed.
        store_factory: Builds the tenant's :class:`SecretStore` once its id is known.
        detect: Agent CLI detection (tests give a PATH of stand-in executables).
        verify: Run the online read-only checks (``--verify``).
        endpoints: Base URLs for those checks.
        roots: The config and data roots of the command's settings.
        secrets_env: Where a stored judge key behind an ``env:`` reference is read
            (``os.environ`` when ``None``).
    """

    def __init__(
        self,
        prompter: Prompter,
        *,
        out: TextIO,
        store_factory: Callable[[str], SecretStore],
        roots: Roots,
        detect: Callable[[], Mapping[AgentCli, AgentCliInfo]] = detect_agent_clis,
        verify: bool = False,
        endpoints: Endpoints | None = None,
        secrets_env: Mapping[str, str] | None = None,
    ) -> None:
        self.ask = prompter
        self.out = out
        self._store_factory = store_factory
        self._detect = detect
        self._clis: Mapping[AgentCli, AgentCliInfo] | None = None
        self.verify = verify
        self.endpoints = endpoints
        self.secrets_env = secrets_env
        """Where a stored judge key is read (a secret; ``os.environ`` when ``None``)."""
        self.roots = roots
        """The config and data roots, resolved once by the command."""
        self.answers: dict[str, Any] = {}
        self.values: dict[Provider, dict[str, str]] = {}
        self.judge_endpoint: str | None = None
        self.judge_model: str | None = None
        self.judge_key: str | None = None
        #: The key a re-run finds behind the tenant's ``judge.api_key`` reference: what the
        #: service would use, so the check tests it when the person leaves the field empty.
        self.stored_judge_key: str | None = None
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
            self._start_from(load_tenant(tid, self.roots))
            self._ask_section(section)
            return self._review(backup=False)
        if tenant_id is None:
            tenant_id = ask_tenant_id(self.ask, self.out)
        if self.roots.tenant_config_path(tenant_id).exists():
            return self._existing(load_tenant(tenant_id, self.roots))
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
        self.judge_endpoint = self.judge_model = self.judge_key = None
        self.stored_judge_key = None
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
            self.stored_judge_key = stored_judge_key(config, self.secrets_env)
        self._store = self._store_factory(config.tenant_id)

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
            judge_api_key=self.judge_key,
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
                    config_path=self.roots.tenant_config_path(plan.config.tenant_id),
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
        ids = list_tenant_ids(self.roots)
        if not ids:
            raise TenantNotFound("no tenant is configured yet", "run `nika setup` first")
        if len(ids) == 1:
            return ids[0]
        return self.ask.select("Which tenant?", [(i, i) for i in ids], default=ids[0])
