"""Pick the judge of a tenant, obeying its privacy mode (seed 2: « Vous choisissez quelle
quantité de ces données quitte votre machine »).

- ``local``: ``rules``; or ``http`` only when its endpoint is loopback (nothing leaves the
  machine).
- ``default``: ``agent-cli`` with the tenant's CLI (Claude Code, Codex); ``rules`` when that CLI
  is not installed or has no headless mode, or when the tenant chose ``rules`` explicitly.
- ``cloud``: ``http`` with the configured endpoint; ``rules`` when no endpoint or key is set,
  or when the tenant chose ``rules`` explicitly.

``rules`` is always allowed (it is the most private). Every fallback carries a stated reason
(:class:`JudgeSelection.reason`) and is logged.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from nika_tui.domain.judge_rules import RulesJudge
from nika_tui.domain.ports import Embedder, Judge
from nika_tui.domain.tenant import (
    AgentCli,
    JudgeKind,
    Privacy,
    SecretRef,
    SecretSource,
    TenantConfig,
)
from nika_tui.errors import ConfigError, SecretStoreError
from nika_tui.paths import Roots
from nika_tui.services.judges.agent_cli import EXECUTABLES, AgentCliJudge, CliFlavor
from nika_tui.services.judges.cascade import CascadeJudge
from nika_tui.services.judges.http import HttpJudge
from nika_tui.services.judges.offline import OfflineJudge, load_model

log = logging.getLogger(__name__)

KEYRING_SERVICE = "nika-os"
"""Keyring service name under which secret references of source ``keyring`` are stored."""

JUDGE_NAMES: tuple[str, ...] = tuple(kind.value for kind in JudgeKind)

_FLAVOR_OF_CLI: dict[AgentCli, CliFlavor] = {
    AgentCli.CLAUDE_CODE: CliFlavor.CLAUDE,
    AgentCli.CODEX: CliFlavor.CODEX,
}


@dataclass(frozen=True, slots=True)
class JudgeSelection:
    """The judge chosen for a tenant and why (a fallback always says so)."""

    judge: Judge
    reason: str
    fallback: bool = False


def is_loopback(endpoint: str) -> bool:
    """True when ``endpoint``'s host is this machine (127.0.0.0/8, ::1, ``localhost``).

    Args:
        endpoint: A URL.

    Returns:
        Whether a request to it stays on this machine.
    """
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def resolve_api_key(
    ref: SecretRef | None, secrets_env: Mapping[str, str], tenant_id: str
) -> tuple[str | None, str]:
    """Resolve an API-key reference: ``(value, problem)``; the value is never logged.

    Args:
        ref: The tenant's reference (env var name, or keyring entry ``ref.name`` under the
            tenant's service ``nika-os/{tenant_id}``, as :mod:`nika_tui.services.secrets`
            stores them), or ``None``.
        secrets_env: Environment to read ``env`` references from.
        tenant_id: The tenant (keyring service).

    Returns:
        The key (``None`` when there is no reference or it cannot be read) and, when a
        referenced key cannot be read, why.
    """
    if ref is None:
        return None, ""
    if ref.source is SecretSource.ENV:
        value = secrets_env.get(ref.name)
        return (value, "") if value else (None, f"environment variable {ref.name} is not set")
    if ref.source is SecretSource.KEYRING:
        import keyring

        from nika_tui.services.secrets import DEFAULT_TIMEOUT, SecretStore, call_with_timeout

        service = SecretStore(tenant_id, env=secrets_env).service
        try:
            value = call_with_timeout(
                lambda: keyring.get_password(service, ref.name), DEFAULT_TIMEOUT, ref.name
            )
        except SecretStoreError as exc:
            return None, exc.message
        return (str(value), "") if value else (None, f"keyring entry {ref.name} is empty")
    return None, f"secret source {ref.source.value} is not supported for judge keys"


def offline_judge(embedder: Embedder | None = None) -> OfflineJudge:
    """The default offline judge (shipped model; ``embedder`` for the slot similarity)."""
    return OfflineJudge(load_model(), embedder)


def _rules(
    reason: str,
    fallback: bool,
    kind: JudgeKind = JudgeKind.OFFLINE,
    embedder: Embedder | None = None,
) -> JudgeSelection:
    """An offline selection: the rules judge when chosen by name, else the default one."""
    if fallback:
        log.warning("judge: falling back to the offline judge: %s", reason)
    if kind is JudgeKind.RULES and not fallback:
        return JudgeSelection(RulesJudge(), reason, fallback)
    return JudgeSelection(offline_judge(embedder), reason, fallback)


def _http_selection(
    config: TenantConfig, secrets_env: Mapping[str, str], timeout_s: float | None
) -> JudgeSelection | str:
    """An http judge for the tenant, or the reason it cannot be built."""
    endpoint = config.judge.endpoint
    if not endpoint:
        return "no judge endpoint is configured (judge.endpoint)"
    key, problem = resolve_api_key(config.judge.api_key, secrets_env, config.tenant_id)
    if problem:
        return problem
    judge = HttpJudge(endpoint=endpoint, model=config.judge.model or "default", api_key=key)
    if timeout_s is not None:
        judge.timeout_s = timeout_s
    return JudgeSelection(judge, f"http judge at {endpoint}")


def select_judge(
    config: TenantConfig,
    where: Roots,
    secrets_env: Mapping[str, str] | None = None,
    path: str | None = None,
    timeout_s: float | None = None,
    embedder: Embedder | None = None,
) -> JudgeSelection:
    """Choose the tenant's judge from its privacy mode and judge settings.

    Args:
        config: The tenant's configuration.
        where: The roots of the caller's settings: where the tenant's agent homes are (an
            agent-CLI judge runs in them).
        secrets_env: Where the key references of source ``env`` are read (default
            ``os.environ``).
        path: Search path for agent CLIs (default ``secrets_env["PATH"]``).
        timeout_s: Override of the judge's timeout.
        embedder: The process's embedder, for the offline judge's slot similarity.

    Returns:
        The judge and the reason it was chosen (see the module table).
    """
    secrets_env = os.environ if secrets_env is None else secrets_env
    path = secrets_env.get("PATH") if path is None else path
    kind = config.judge.kind
    endpoint = config.judge.endpoint
    loopback_http = kind is JudgeKind.HTTP and bool(endpoint) and is_loopback(endpoint or "")

    if loopback_http:
        # A loopback endpoint keeps every byte on this machine: allowed in every mode.
        chosen = _http_selection(config, secrets_env, timeout_s)
        if isinstance(chosen, JudgeSelection):
            return chosen
        return _rules(f"local http judge unusable: {chosen}", True, embedder=embedder)

    if config.privacy is Privacy.LOCAL:
        if kind in (JudgeKind.RULES, JudgeKind.OFFLINE):
            return _rules(f"privacy local: {kind.value} judge", False, kind, embedder)
        return _rules(
            f"privacy local forbids the {kind.value} judge (data would leave the machine)",
            True,
            embedder=embedder,
        )

    if config.privacy is Privacy.CLOUD:
        if _offline_chosen(config):
            return _rules(f"{kind.value} judge chosen explicitly", False, kind, embedder)
        chosen = _http_selection(config, secrets_env, timeout_s)
        if isinstance(chosen, JudgeSelection):
            return chosen
        return _rules(f"privacy cloud but {chosen}", True, embedder=embedder)

    # Privacy default: the agent's own subscription judges.
    if _offline_chosen(config):
        return _rules(f"{kind.value} judge chosen explicitly", False, kind, embedder)
    flavor = _FLAVOR_OF_CLI.get(config.agent_cli)
    if flavor is None:
        return _rules(
            f"agent CLI {config.agent_cli.value} has no headless judge mode",
            True,
            embedder=embedder,
        )
    executable = shutil.which(EXECUTABLES[flavor], path=path)
    if executable is None:
        return _rules(
            f"`{EXECUTABLES[flavor]}` is not installed (not on PATH)", True, embedder=embedder
        )
    # The judge runs with the tenant's own agent home (CLAUDE_CONFIG_DIR / CODEX_HOME), so it
    # uses the tenant's login and subscription, exactly like the tenant's kernel.
    from nika_tui.services.agent_homes import agent_home_env

    homes = agent_home_env(config.tenant_id, where)
    home_var = "CLAUDE_CONFIG_DIR" if flavor is CliFlavor.CLAUDE else "CODEX_HOME"
    judge = AgentCliJudge(
        flavor=flavor,
        executable=executable,
        model=config.judge.model,
        extra_env={**config.kernel.env, home_var: homes[home_var]},
    )
    if timeout_s is not None:
        judge.timeout_s = timeout_s
    return JudgeSelection(judge, f"agent-cli judge: {executable}")


def _offline_chosen(config: TenantConfig) -> bool:
    """The tenant named an offline judge (``rules`` or ``offline``) explicitly."""
    return config.judge.kind in (JudgeKind.RULES, JudgeKind.OFFLINE) and (
        "kind" in config.judge.model_fields_set
    )


def judge_for(
    config: TenantConfig,
    where: Roots,
    secrets_env: Mapping[str, str] | None = None,
    *,
    path: str | None = None,
    embedder: Embedder | None = None,
) -> Judge:
    """The tenant's judge on the ingest path (see :func:`select_judge`; fallbacks logged).

    An LLM judge (``agent-cli`` / ``http``) the privacy mode allows becomes the second tier of
    a :class:`~.cascade.CascadeJudge`: the offline judge settles the clear pairs first.
    """
    selection = select_judge(config, where, secrets_env, path, embedder=embedder)
    judge = selection.judge
    if isinstance(judge, HttpJudge | AgentCliJudge):
        return CascadeJudge(offline_judge(embedder), judge)
    return judge


def judge_by_name(
    name: str,
    *,
    cli: str | None = None,
    endpoint: str | None = None,
    model: str | None = None,
    api_key: str | None = None,
    timeout_s: float | None = None,
    path_env: Mapping[str, str] | None = None,
    embedder: Embedder | None = None,
) -> Judge:
    """A judge chosen by name (``nika judge eval --judge NAME``), without a tenant.

    Args:
        name: ``offline``, ``rules``, ``agent-cli`` or ``http``.
        cli: For ``agent-cli``: ``claude`` or ``codex`` (default: the first on PATH).
        endpoint: For ``http``: the OpenAI-compatible base URL.
        model: Optional model name.
        api_key: For ``http``: the key value (resolved by the caller, never from argv).
        timeout_s: Optional timeout override.
        path_env: Environment whose ``PATH`` finds the agent CLI (default ``os.environ``).
        embedder: For ``offline``: the embedder for the slot similarity.

    Returns:
        The judge.

    Raises:
        ConfigError: Unknown name, unknown CLI, no CLI installed, or no endpoint.
    """
    path_env = os.environ if path_env is None else path_env
    if name == JudgeKind.RULES.value:
        return RulesJudge()
    if name == JudgeKind.OFFLINE.value:
        return offline_judge(embedder)
    if name == JudgeKind.AGENT_CLI.value:
        if cli is not None and cli not in {f.value for f in CliFlavor}:
            raise ConfigError(f"unknown agent CLI {cli!r}", "use --cli claude or --cli codex")
        candidates = [CliFlavor(cli)] if cli else list(CliFlavor)
        for flavor in candidates:
            exe = shutil.which(EXECUTABLES[flavor], path=path_env.get("PATH"))
            if exe:
                judge = AgentCliJudge(flavor=flavor, executable=exe, model=model)
                if timeout_s is not None:
                    judge.timeout_s = timeout_s
                return judge
        wanted = " or ".join(EXECUTABLES[f] for f in candidates)
        raise ConfigError(
            f"no agent CLI found on PATH ({wanted})",
            "install Claude Code or Codex, or use --judge rules",
        )
    if name == JudgeKind.HTTP.value:
        if not endpoint:
            raise ConfigError(
                "the http judge needs an endpoint",
                "pass --endpoint URL (an OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1)",
            )
        judge_http = HttpJudge(endpoint=endpoint, model=model or "default", api_key=api_key)
        if timeout_s is not None:
            judge_http.timeout_s = timeout_s
        return judge_http
    raise ConfigError(f"unknown judge {name!r}", f"use one of: {', '.join(JUDGE_NAMES)}")
