"""The questions of each ``nika setup`` section (mixed into :class:`SetupWizard`).

Each section reads and updates ``self.answers`` (the answers-file shape) and, for providers,
``self.values`` (secret values typed in this run, stored only once the summary is confirmed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from nika_tui.domain.agent_versions import too_old_note
from nika_tui.domain.answers import (
    AUTO_ACTION_KEYS,
    NEEDS_KNOWLEDGE_REPO,
    check_display_name,
    check_knowledge_repo,
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
    Language,
    Plan,
    Privacy,
    Provider,
    SecretSource,
    TenantConfig,
)
from nika_tui.errors import SecretStoreError
from nika_tui.services.agent_clis import AgentCliInfo
from nika_tui.services.provider_verify import Endpoints, VerifyStatus, verify_provider
from nika_tui.services.secrets import SecretStore
from nika_tui.wizard.judge_section import ask_cloud_judge
from nika_tui.wizard.prompts import Prompter
from nika_tui.wizard.summary import quotas_text

_PRIVACY_LABELS = {
    Privacy.LOCAL: "local    nothing leaves this machine (offline judge or a local endpoint)",
    Privacy.DEFAULT: "default  the agent's own subscription does the judging",
    Privacy.CLOUD: "cloud    a configured OpenAI-compatible endpoint judges",
}
_AUTO_LABELS = {
    "scale": "auto-scale (spawn or stop VPS workers)",
    "compress": "auto-compress (strategy A, to the knowledge repo)",
    "purge": "auto-purge (retire stale memories)",
    "rem": "auto-REM (the consolidation pass)",
}


class SectionsMixin:
    """One method per section; :class:`~nika_tui.wizard.flow.SetupWizard` holds the state."""

    ask: Prompter
    out: TextIO
    answers: dict[str, Any]
    values: dict[Provider, dict[str, str]]
    base: TenantConfig | None
    verify: bool
    endpoints: Endpoints | None
    judge_endpoint: str | None
    judge_model: str | None
    judge_key: str | None
    stored_judge_key: str | None
    _store: SecretStore | None
    _clis: Mapping[AgentCli, AgentCliInfo] | None
    _detect: Callable[[], Mapping[AgentCli, AgentCliInfo]]

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
        # A CLI nika cannot serve (installed, but older than the first version that runs its
        # hooks) is shown with the upgrade line and cannot be picked (issue 13, decision 477).
        too_old = {
            cli.value: note
            for cli in AgentCli
            if clis[cli].installed and (note := too_old_note(cli.value, clis[cli].version))
        }
        servable = [c for c in order if clis[c].installed and c.value not in too_old]
        first_installed = next(iter(servable), AgentCli.SHELL)
        choices = []
        for cli in AgentCli:
            info = clis[cli]
            state = f"installed {info.version or ''}".strip() if info.installed else "not found"
            choices.append((f"{info.label:<12} {state}", cli.value))
        for note in too_old.values():
            self.say(f"not offered: {note}")
        saved = self.answers.get("agent_cli")
        current = saved if isinstance(saved, list) else [saved] if saved else []
        current = [c for c in current if c not in too_old]
        chosen = AgentCli(
            self.ask.select(
                "Agent CLI for this tenant",
                choices,
                default=current[0] if current else first_installed.value,
                disabled={cli: "too old for nika's hooks, see above" for cli in too_old},
            )
        )
        self.answers["agent_cli"] = chosen.value
        others = [c for c in servable if c is not chosen]
        if chosen is not AgentCli.SHELL and others:
            # Several agents, one memory: each gets its own kernel window and its hooks.
            previous = current[1:]
            more = self.ask.checkbox(
                "Also run these agent CLIs side by side (one memory, a kernel window each)?",
                [(clis[c].label, c.value, c.value in previous) for c in others],
            )
            if more:
                self.answers["agent_cli"] = [chosen.value, *more]
        agents = self.answers["agent_cli"]
        if AgentCli.CODEX.value in (agents if isinstance(agents, list) else [agents]):
            self._codex_trust()
        info = clis[chosen]
        if not info.installed:
            self.say(
                f"{info.label} is not installed ({info.binary} not found on PATH). "
                f"Install it with: {info.install_hint}. Setup goes on; its kernel starts once "
                "it is on PATH."
            )

    def _codex_trust(self) -> None:
        # Codex runs no hook until a person trusts it; we only do it with consent.
        previous = self.answers.get("trust_codex_hooks")
        self.answers["trust_codex_hooks"] = self.ask.confirm(
            "Codex runs hooks only once they are trusted. Let nika mark its own hooks (and the "
            "kernel's working directory) as trusted in this tenant's own CODEX_HOME? Without "
            "it, Codex skips them until you approve them under /hooks.",
            default=True if previous is None else bool(previous),
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
            ask_cloud_judge(self)

    def _providers(self) -> None:
        current = set(self.answers.get("providers") or [])
        chosen = self.ask.checkbox(
            "Cloud providers to configure (each optional)",
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
            if (
                key == "compress"
                and mode is AutoMode.AUTONOMOUS
                and not self.answers.get("knowledge_repo")
            ):
                self.say(f"  {NEEDS_KNOWLEDGE_REPO} (section 'knowledge'); compress: escalate")
                mode = AutoMode.ESCALATE
            elif mode is AutoMode.AUTONOMOUS and not self.ask.confirm(
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


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which a container narrows)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _quota_check(key: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        parsed = parse_quota(value.replace(",", "").strip(), key, cores=usable_cores())
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
