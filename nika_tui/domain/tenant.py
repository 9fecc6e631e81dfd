"""Tenant configuration (``tenants/{tenant_id}/config.yaml``).

Secrets never live here: a provider entry holds only *references* (an env var name, a keyring
entry, or an insecure-file entry) that :mod:`nika_tui.services.secrets` resolves at run time.
``extra="forbid"`` everywhere, ``schema_version`` at the top; the one place that checks it is
:func:`nika_tui.services.config_store.parse_config` (version 1: no migration exists yet).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nika_tui.domain.scale_config import ScaleConfig
from nika_tui.domain.sensitivity import RepoVisibility
from nika_tui.domain.tenant_id import TENANT_ID_PATTERN

SCHEMA_VERSION = 1


class Language(StrEnum):
    EN = "en"
    FR = "fr"


class Plan(StrEnum):
    FREE = "free"
    PRO = "pro"
    MULTIMODAL = "multimodal"


class AgentCli(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    GEMINI_CLI = "gemini-cli"
    OPENCODE = "opencode"
    SHELL = "shell"


class Privacy(StrEnum):
    LOCAL = "local"  # nothing leaves the machine: rules judge or a local endpoint
    DEFAULT = "default"  # the agent's own subscription does the judging
    CLOUD = "cloud"  # a configured OpenAI-compatible endpoint


class Provider(StrEnum):
    SCALEWAY = "scaleway"
    CONTABO = "contabo"
    AZURE = "azure"
    GCP = "gcp"
    AWS = "aws"
    RUNPOD = "runpod"


class AutoMode(StrEnum):
    OFF = "off"
    ESCALATE = "escalate"  # ask every time (default)
    AUTONOMOUS = "autonomous"


class SecretSource(StrEnum):
    ENV = "env"
    KEYRING = "keyring"
    FILE = "file"  # only with --insecure-storage


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SecretRef(_Strict):
    """Where one secret field lives; never the value."""

    source: SecretSource
    name: str = Field(description="Env var name, or keyring/file key '{provider}.{field}'.")


class ProviderConfig(_Strict):
    """A configured provider: one reference per credential field."""

    fields: dict[str, SecretRef]


class AutoActions(_Strict):
    """Opt-in automatic actions; each off / escalate / autonomous."""

    scale: AutoMode = AutoMode.ESCALATE
    compress: AutoMode = AutoMode.ESCALATE
    purge: AutoMode = AutoMode.ESCALATE
    rem: AutoMode = AutoMode.ESCALATE
    compact: AutoMode = AutoMode.ESCALATE
    tune: AutoMode = AutoMode.ESCALATE
    """Adopting tuned recall parameters (``nika tune recall``, docs/tuning.md)."""


class TokenLimitAction(StrEnum):
    PAUSE = "pause"  # stop the kernel's agent until the next UTC day
    ASK = "ask"  # queue a confirmation (default)


class Quotas(_Strict):
    """Per-tenant limits."""

    cpu_percent: int = Field(gt=0, le=6400)
    ram_mb: int = Field(gt=0)
    tokens_per_day: int = Field(gt=0)
    on_token_limit: TokenLimitAction = Field(
        default=TokenLimitAction.ASK, description="At 100% of tokens_per_day: pause or ask."
    )


PLAN_QUOTAS: dict[Plan, Quotas] = {
    Plan.FREE: Quotas(cpu_percent=50, ram_mb=2048, tokens_per_day=200_000),
    Plan.PRO: Quotas(cpu_percent=200, ram_mb=8192, tokens_per_day=2_000_000),
    Plan.MULTIMODAL: Quotas(cpu_percent=400, ram_mb=16384, tokens_per_day=10_000_000),
}


class JudgeKind(StrEnum):
    OFFLINE = "offline"  # the learned offline judge (default); docs/judges.md
    RULES = "rules"  # the hand-written rules, kept for comparison
    AGENT_CLI = "agent-cli"
    HTTP = "http"


class JudgeConfig(_Strict):
    """Which judge decides REPLACE / KEEP / UNCERTAIN for this tenant."""

    kind: JudgeKind = JudgeKind.OFFLINE
    endpoint: str | None = Field(default=None, description="OpenAI-compatible base URL (http).")
    model: str | None = None
    api_key: SecretRef | None = None


class DigestMode(StrEnum):
    OFFLINE = "offline"  # extractive, deterministic (default)
    LLM = "llm"  # the tenant's LLM judge tier writes it, where privacy allows


class CompressConfig(_Strict):
    """How strategy A's compression writes the knowledge trees (docs/compress.md)."""

    digest: DigestMode = Field(
        default=DigestMode.OFFLINE,
        description="Who writes each node's digest: offline (extractive) or llm (the tenant's "
        "http or agent-cli judge tier, where privacy allows; any node it gets wrong stays "
        "offline).",
    )


class KernelConfig(_Strict):
    """How the tenant's tmux kernel runs."""

    workdir: str | None = Field(default=None, description="Working directory of the agent.")
    command: list[str] | None = Field(
        default=None, description="Argument list overriding the CLI's default command."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Extra non-secret env vars.")
    trust_codex_hooks: bool | None = Field(
        default=None,
        description=(
            "Consent for nika to mark its own Codex hooks (and the workdir) as trusted in the "
            "tenant's CODEX_HOME; None = not asked yet, False = refused (Codex then skips them)."
        ),
    )


class AgentPermissions(_Strict):
    """What the tenant's agents may decide through the MCP tools."""

    resolve_reviews: bool = Field(
        default=False, description="Agents may approve or reject pending review items."
    )
    retire_needs_review: bool = Field(
        default=True,
        description="An agent's retire or correction waits for a person's review when true.",
    )


class TenantConfig(_Strict):
    """Everything nika-os knows about one tenant."""

    schema_version: int = SCHEMA_VERSION
    tenant_id: str
    display_name: str = Field(min_length=1, max_length=120)
    language: Language = Language.EN
    plan: Plan = Plan.FREE
    agent_cli: AgentCli = AgentCli.SHELL
    privacy: Privacy = Privacy.LOCAL
    providers: dict[Provider, ProviderConfig] = Field(default_factory=dict)
    knowledge_repo: str | None = None
    knowledge_repo_visibility: RepoVisibility = Field(
        default=RepoVisibility.PUBLIC,
        description="Who can read the knowledge repo: a public one never receives a private "
        "memory (strategy A keeps those in the local private tree). Public unless you say not.",
    )
    reset_cooldown_days: int = Field(
        default=7,
        ge=0,
        description="At most one autonomous fresh start (strategy A) per this many days; the "
        "audit reports the suggestion in between. A reset is a full snapshot and a new "
        "generation (minutes at 50k memories), so a trigger that stays in alert must not rerun it.",
    )
    auto_actions: AutoActions = Field(default_factory=AutoActions)
    quotas: Quotas = Field(default_factory=lambda: PLAN_QUOTAS[Plan.FREE])
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    kernel: KernelConfig = Field(default_factory=KernelConfig)
    compress: CompressConfig = Field(default_factory=CompressConfig)
    scale: ScaleConfig = Field(default_factory=ScaleConfig)
    agents: AgentPermissions = Field(default_factory=AgentPermissions)
    demo: bool = False
    more_agent_clis: list[AgentCli] = Field(
        default_factory=list,
        description=(
            "Agent CLIs run beside agent_cli on this tenant: one kernel window each, their "
            "hooks installed, one shared memory (answers file: agent_cli as a list)."
        ),
    )

    @field_validator("more_agent_clis")
    @classmethod
    def _more_agents(cls, value: list[AgentCli]) -> list[AgentCli]:
        if AgentCli.SHELL in value:
            raise ValueError("a plain shell is not an agent to run beside another one")
        if len(set(value)) != len(value):
            raise ValueError("an agent CLI is listed twice")
        return value

    @property
    def agent_clis(self) -> list[AgentCli]:
        """Every agent CLI of the tenant, ``agent_cli`` (the first kernel window) first."""
        return [self.agent_cli, *(c for c in self.more_agent_clis if c is not self.agent_cli)]

    @field_validator("tenant_id")
    @classmethod
    def _tenant_id(cls, value: str) -> str:
        if not TENANT_ID_PATTERN.fullmatch(value):
            raise ValueError("must match ^[a-z0-9][a-z0-9-]{0,39}$")
        return value

    def has_api_key(self, provider: Provider | str) -> bool:
        """True when a provider is configured (its secrets are referenced)."""
        return Provider(provider) in self.providers

    def has_repo(self) -> bool:
        """True when a knowledge repository for compression (strategy A) is set."""
        return bool(self.knowledge_repo)
