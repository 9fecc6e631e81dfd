"""``nika setup bridge``: the gateways' secrets into the secret store, their ids into bridge.yaml.

Values never come from flags (they would show in process listings): from a terminal prompt
(hidden for secrets), from ``--secret-stdin`` (``NAME=VALUE`` lines) or from the environment
variables of the same names. Secrets go to the OS keyring (service ``nika-os/_bridge``), or
to a 0600 file with ``--insecure-storage``; the App ID and the project number are not
secrets and go to ``bridge.yaml``.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from collections.abc import Mapping
from typing import Any

from nika_tui.cli.common import print_json, settings_of
from nika_tui.errors import ValidationFailed

PLAIN: dict[str, str] = {
    "MICROSOFT_APP_ID": "Teams: the bot's Microsoft App ID",
    "GCHAT_PROJECT_NUMBER": "Google Chat: the Cloud project number (the JWT audience)",
}


def parse_lines(text: str, allowed: Mapping[str, str]) -> dict[str, str]:
    """``NAME=VALUE`` lines (blank and ``#`` lines skipped); values are never echoed.

    Raises:
        ValidationFailed: a malformed line or an unknown name.
    """
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        name, sep, value = stripped.partition("=")
        if not sep or name.strip() not in allowed:
            raise ValidationFailed(
                f"--secret-stdin line {n}: expected NAME=VALUE with a bridge variable name",
                "names: " + ", ".join(sorted(allowed)),
            )
        out[name.strip()] = value.strip()
    return out


def _ask(allowed: Mapping[str, str], secret_names: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    print("Press Enter to keep a value as it is.")
    for name, what in allowed.items():
        prompt = f"{name} ({what}): "
        value = getpass.getpass(prompt) if name in secret_names else input(prompt)
        if value.strip():
            out[name] = value.strip()
    return out


def run(args: argparse.Namespace) -> int:
    """Store the bridge's settings; print what each gateway still lacks (names only)."""
    from nika_tui.bridge.settings import (
        SECRET_VARS,
        BridgeSecrets,
        load_config,
        resolve,
        save_config,
    )

    where = settings_of(args).roots
    allowed = {**SECRET_VARS, **PLAIN}
    if args.secret_stdin:
        values = parse_lines(sys.stdin.read(), allowed)
    elif sys.stdin.isatty() and not args.non_interactive:
        values = _ask(allowed, set(SECRET_VARS))
    else:
        values = {name: os.environ[name].strip() for name in allowed if os.environ.get(name)}
    secrets = {k: v for k, v in values.items() if k in SECRET_VARS}
    stored_in = "nothing"
    if secrets and not args.dry_run:
        store = BridgeSecrets(where, os.environ, allow_insecure=args.insecure_storage)
        stored_in = store.put(secrets)
    config = load_config(where)
    if "MICROSOFT_APP_ID" in values:
        teams = config.teams.model_copy(update={"app_id": values["MICROSOFT_APP_ID"]})
        config = config.model_copy(update={"teams": teams})
    if "GCHAT_PROJECT_NUMBER" in values:
        gchat = config.gchat.model_copy(update={"audience": values["GCHAT_PROJECT_NUMBER"]})
        config = config.model_copy(update={"gchat": gchat})
    path = None
    if not args.dry_run and set(values) & set(PLAIN):
        path = save_config(config, where)
    settings = resolve(where, dict(os.environ), allow_insecure=args.insecure_storage)
    from nika_tui.domain.bridge import Gateway

    missing = {g.value: settings.missing(g) for g in Gateway}
    summary: dict[str, Any] = {
        "secrets_stored": sorted(secrets) if not args.dry_run else [],
        "secret_storage": stored_in,
        "config_path": str(path) if path else None,
        "missing": missing,
        "dry_run": bool(args.dry_run),
    }
    if args.json:
        print_json(summary)
        return 0
    if secrets:
        verb = "would store" if args.dry_run else f"stored in the {stored_in}"
        print(f"{verb}: {', '.join(sorted(secrets))}")
    if path:
        print(f"wrote {path}")
    for gateway, lacks in missing.items():
        state = "ready" if not lacks else "lacks " + ", ".join(lacks)
        print(f"{gateway}: {state}")
    print("next: `nika bridge link --tenant T --gateway G --sender S`, then `nika bridge serve`")
    return 0
