"""The summary screen: what will be written, with every secret masked to its last 4 characters."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nika_tui.domain.answers import SetupPlan
from nika_tui.domain.provider_formats import PROVIDER_FIELDS, PROVIDER_LABELS, masked_value
from nika_tui.domain.strategies import available_strategies, recommendation
from nika_tui.domain.tenant import PLAN_QUOTAS, Provider, Quotas, SecretSource
from nika_tui.services.agent_clis import AGENT_LABELS, AgentCliInfo


def quotas_text(quotas: Quotas) -> str:
    """``CPU 200 %, RAM 8192 MB, 2,000,000 tokens/day``."""
    return (
        f"CPU {quotas.cpu_percent} %, RAM {quotas.ram_mb} MB, {quotas.tokens_per_day:,} tokens/day"
    )


def _provider_lines(plan: SetupPlan, values: Mapping[Provider, Mapping[str, str]]) -> list[str]:
    lines: list[str] = []
    for provider, pconf in plan.config.providers.items():
        parts: list[str] = []
        for spec in PROVIDER_FIELDS[provider]:
            ref = pconf.fields.get(spec.name)
            value = values.get(provider, {}).get(spec.name)
            shown = masked_value(provider, spec.name, value) if value is not None else "saved"
            if ref is None:
                where = "missing"
            elif ref.source is SecretSource.ENV:
                where = f"from ${ref.name}"
                shown = masked_value(provider, spec.name, value) if value is not None else "unset"
            elif ref.source is SecretSource.KEYRING:
                where = "keyring"
            else:
                where = "0600 file (insecure storage)"
            parts.append(f"{spec.name} {shown} ({where})")
        lines.append(f"  {PROVIDER_LABELS[provider]:<16} " + ", ".join(parts))
    return lines or ["  (none)"]


def render_summary(
    plan: SetupPlan,
    *,
    config_path: Path,
    values: Mapping[Provider, Mapping[str, str]],
    agent: AgentCliInfo | None,
    keyring_service: str,
    insecure_path: Path,
    backup: bool,
) -> str:
    """The summary shown before confirmation.

    Args:
        plan: What will be written.
        config_path: The config file path.
        values: Secret values entered in this run (masked here).
        agent: Detection result of the chosen agent CLI.
        keyring_service: The keyring service name.
        insecure_path: The insecure secrets file.
        backup: The existing config will be backed up first.

    Returns:
        Multi-line text.
    """
    c = plan.config
    if agent is None or not agent.installed:
        cli = f"{AGENT_LABELS[c.agent_cli]} (not installed)"
    else:
        cli = f"{agent.label} ({agent.version or 'installed'})"
    judge = c.judge.kind.value + (f" at {c.judge.endpoint}" if c.judge.endpoint else "")
    strategies = available_strategies(c)
    default_quotas = c.quotas == PLAN_QUOTAS[c.plan]
    lines = [
        "",
        f"Summary for tenant {c.tenant_id!r}",
        f"  display name     {c.display_name}",
        f"  language         {c.language.value}",
        f"  plan             {c.plan.value}",
        f"  agent CLI        {cli}",
        f"  privacy          {c.privacy.value} (judge: {judge})",
        "  provider keys",
        *[f"  {line}" for line in _provider_lines(plan, values)],
        f"  knowledge repo   {c.knowledge_repo or '(none)'}",
        "  auto actions     "
        + ", ".join(f"{k}={v}" for k, v in c.auto_actions.model_dump(mode="json").items()),
        f"  quotas           {quotas_text(c.quotas)}"
        + (" (plan defaults)" if default_quotas else ""),
        "  strategies       " + (", ".join(strategies) or "none"),
    ]
    if not strategies:
        lines.append(f"                   tip: {recommendation(c)}")
    lines.append(f"  will write       {config_path} (0600, directory 0700)")
    if backup:
        lines.append(f"                   after a backup {config_path.name}.bak-<date> beside it")
    stored = sorted(plan.secrets)
    if stored:
        where = (
            f"keyring service {keyring_service}"
            if any(
                r.source is SecretSource.KEYRING
                for p in c.providers.values()
                for r in p.fields.values()
            )
            else str(insecure_path)
        )
        lines.append(f"                   secrets {', '.join(stored)} → {where}")
    for warning in plan.warnings:
        lines.append(f"  warning: {warning}")
    return "\n".join(lines)
