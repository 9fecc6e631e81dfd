"""``nika setup --non-interactive --answers FILE`` and the summary printed after any setup.

Apart from :mod:`nika_tui.cli.setup` so that the interactive wizard's first prompt does not wait
for YAML, pydantic and the secret store to import (issue 17: the prompt within a second).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from nika_tui.cli.common import print_json, settings_of
from nika_tui.domain.answers import SetupPlan, build_setup
from nika_tui.domain.provider_formats import PROVIDER_FIELDS, PROVIDER_LABELS
from nika_tui.domain.strategies import available_strategies, recommendation
from nika_tui.domain.tenant import Provider, SecretSource
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import (
    AnswersInvalid,
    ConfigError,
    NikaError,
    Problem,
    SecretStoreError,
    ValidationFailed,
)
from nika_tui.services.config_store import parse_config, render_config
from nika_tui.services.secrets import SecretStore, read_credentials_file

HOW_TO = (
    "run `nika setup` in a terminal, or non-interactively: "
    "`nika setup --non-interactive --answers answers.yaml` (format in docs/wizard.md)"
)
_ENV_FIELDS = {spec.env_var: spec for specs in PROVIDER_FIELDS.values() for spec in specs}


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which a container narrows)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _read_answers(path: Path) -> dict[str, Any]:
    from nika_tui.services.config_store import read_config_text

    text = read_config_text(path, "answers")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{path}: not valid YAML{where}", "fix the YAML (see docs/wizard.md)"
        ) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of answers", "see docs/wizard.md")
    return raw


def parse_secret_lines(text: str) -> dict[str, str]:
    """``NAME=VALUE`` lines (blank lines and ``#`` comments skipped).

    Raises:
        ValidationFailed: A line is malformed or names an unknown variable (never echoed).
    """
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.partition("=")
        name = name.strip()
        if not sep or name not in _ENV_FIELDS:
            raise ValidationFailed(
                f"--secret-stdin line {n}: expected NAME=VALUE with a provider variable name",
                "names: " + ", ".join(sorted(_ENV_FIELDS)),
            )
        out[name] = value.strip()
    return out


def _provider_values(
    raw: Mapping[str, Any], store: SecretStore, stdin_values: Mapping[str, str]
) -> tuple[dict[Provider, dict[str, str]], list[Problem]]:
    values: dict[Provider, dict[str, str]] = {}
    problems: list[Problem] = []
    listed = raw.get("providers")
    names = [p for p in listed if p in set(Provider)] if isinstance(listed, list) else []
    for name in names:
        provider = Provider(name)
        for spec in PROVIDER_FIELDS[provider]:
            try:
                if spec.env_var in stdin_values:
                    value: str | None = stdin_values[spec.env_var]
                    if spec.env_is_path and value:
                        value = read_credentials_file(Path(value).expanduser(), spec.env_var)
                else:
                    value = store.env_value(provider, spec.name)
            except SecretStoreError as exc:
                problems.append(Problem(f"providers.{name}.{spec.name}", exc.message))
                continue
            if value:
                values.setdefault(provider, {})[spec.name] = value
    return values, problems


def run_non_interactive(args: argparse.Namespace) -> int:
    if args.answers is None:
        raise ValidationFailed("--non-interactive needs --answers FILE", HOW_TO)
    if args.section is not None:
        raise ValidationFailed(
            "a SECTION is edited interactively only",
            "drop SECTION, or edit the answers file and re-run",
        )
    raw = _read_answers(args.answers)
    tenant_id = raw.get("tenant_id")
    if args.tenant is not None and tenant_id != args.tenant:
        raise ValidationFailed(
            f"--tenant {args.tenant} does not match tenant_id {tenant_id!r} in {args.answers}",
            "make them equal or drop --tenant",
        )
    base = None
    existing = False
    if isinstance(tenant_id, str) and check_tenant_id_safe(tenant_id):
        path = settings_of(args).roots.tenant_config_path(tenant_id)
        if path.exists():
            existing = True
            base = parse_config(path, path.read_text(encoding="utf-8"))
    store = SecretStore(
        tenant_id if isinstance(tenant_id, str) and check_tenant_id_safe(tenant_id) else "x",
        allow_insecure=args.insecure_storage,
    )
    stdin_values = parse_secret_lines(sys.stdin.read()) if args.secret_stdin else {}
    values, problems = _provider_values(raw, store, stdin_values)
    storage = store.storage()
    try:
        plan = build_setup(
            raw,
            provider_values=values,
            storage=storage,
            accept_risk=args.accept_risk,
            require_accept_risk=True,
            base=base,
            source=str(args.answers),
            # The kernels run here: a CPU quota beyond this machine's cores cannot be met.
            cores=usable_cores(),
        )
    except AnswersInvalid as exc:
        raise AnswersInvalid(problems + exc.problems, str(args.answers)) from None
    if problems:
        raise AnswersInvalid(problems, str(args.answers))
    warnings = list(plan.warnings)
    if args.verify:
        warnings += _verify(plan, values)
    config_path = settings_of(args).roots.tenant_config_path(plan.config.tenant_id)
    if args.dry_run:
        return _print_dry_run(args, plan, config_path, warnings, storage)
    from nika_tui.wizard.apply import write_setup

    result = write_setup(plan, store, storage, backup=existing)
    summary = summarize(plan, result.config_path, result.stored, result.backup_path, warnings)
    if args.json:
        print_json(summary)
    else:
        print(f"Wrote {result.config_path}")
        _print_common(summary)
    return 0


def check_tenant_id_safe(value: str) -> bool:
    """True when ``value`` is a valid tenant id (no exception)."""
    try:
        check_tenant_id(value)
    except NikaError:
        return False
    return True


def _verify(plan: SetupPlan, values: Mapping[Provider, Mapping[str, str]]) -> list[str]:
    from nika_tui.services.provider_verify import VerifyStatus, verify_providers

    full = {
        p: v
        for p, v in values.items()
        if len(v) == len(PROVIDER_FIELDS[p]) and p in plan.config.providers
    }
    results = verify_providers(full, plan.config.privacy)
    invalid = [r for r in results if r.status is VerifyStatus.INVALID]
    if invalid:
        raise ValidationFailed(
            "; ".join(f"{PROVIDER_LABELS[r.provider]}: {r.detail}" for r in invalid),
            "correct those keys (nothing was written)",
        )
    return [
        f"--verify {PROVIDER_LABELS[r.provider]}: {r.status} ({r.detail})"
        for r in results
        if r.status is not VerifyStatus.OK
    ]


def summarize(
    plan: SetupPlan,
    config_path: Path,
    stored: list[str],
    backup: Path | None,
    warnings: list[str] | None = None,
) -> dict[str, Any]:
    c = plan.config
    return {
        "tenant_id": c.tenant_id,
        "config_path": str(config_path),
        "strategies": [str(s) for s in available_strategies(c)],
        "recommendation": recommendation(c),
        "auto_actions": c.auto_actions.model_dump(mode="json"),
        "secrets_stored": stored,
        "backup_path": str(backup) if backup else None,
        "warnings": plan.warnings if warnings is None else warnings,
    }


def _print_common(summary: Mapping[str, Any]) -> None:
    print("strategies: " + (", ".join(summary["strategies"]) or "none"))
    if summary["recommendation"]:
        print(f"tip: {summary['recommendation']}")
    for warning in summary["warnings"]:
        print(f"warning: {warning}")


def _print_dry_run(
    args: argparse.Namespace,
    plan: SetupPlan,
    config_path: Path,
    warnings: list[str],
    storage: SecretSource,
) -> int:
    summary = summarize(plan, config_path, [], None, warnings)
    summary["dry_run"] = True
    summary["secrets_to_store"] = sorted(plan.secrets)
    summary["secret_storage"] = storage.value
    if args.json:
        summary["config"] = json.loads(plan.config.model_dump_json())
        print_json(summary)
        return 0
    print(f"# dry run: nothing written; would write {config_path}")
    print(render_config(plan.config), end="")
    _print_common(summary)
    return 0
