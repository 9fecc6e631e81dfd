"""``nika setup``: the onboarding wizard, or ``--non-interactive --answers FILE`` for scripts.

Provider secrets never come from flag values: only from each provider's conventional environment
variables or from ``--secret-stdin`` (``NAME=VALUE`` lines, NAME being one of those variables).
This module imports only argparse and the tenant-id check: the wizard's first prompt must show
within a second of the welcome screen's button, so everything heavy is imported at use.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ValidationFailed

SECTION_NAMES = (
    "identity",
    "plan",
    "agent",
    "privacy",
    "providers",
    "knowledge",
    "auto-actions",
    "quotas",
)
SECTION_ALIASES = {"agents": "agent"}
"""Other names a section answers to (`nika setup agents`: a tenant may run several agents)."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika setup``."""
    p = sub.add_parser(
        "setup",
        help="create or edit a tenant (onboarding wizard)",
        description="Create or edit a tenant. Secrets come from env vars or --secret-stdin.",
    )
    p.add_argument(
        "section",
        nargs="?",
        choices=(*SECTION_NAMES, *SECTION_ALIASES, "bridge"),
        help="edit only this section ('bridge': the messaging gateways, see docs/bridge.md)",
    )
    p.add_argument("--tenant", metavar="ID", help="tenant id")
    p.add_argument("--non-interactive", action="store_true", help="read --answers, ask nothing")
    p.add_argument("--answers", metavar="FILE", type=Path, help="answers YAML (non-interactive)")
    p.add_argument("--dry-run", action="store_true", help="print the config, write nothing")
    p.add_argument(
        "--accept-risk", action="store_true", help="allow 'autonomous' auto-actions (non-inter.)"
    )
    p.add_argument("--verify", action="store_true", help="check keys online (read-only, 5 s)")
    p.add_argument(
        "--secret-stdin", action="store_true", help="read NAME=VALUE secret lines on stdin"
    )
    p.add_argument(
        "--insecure-storage",
        action="store_true",
        help="allow a 0600 plaintext secrets file when no OS keyring is available",
    )
    add_json_flag(p)
    p.set_defaults(handler=run_setup)


def run_setup(args: argparse.Namespace) -> int:
    """Dispatch to the interactive wizard or the non-interactive run."""
    args.section = SECTION_ALIASES.get(args.section, args.section)
    if args.section == "bridge":  # installation-wide, not a tenant section
        from nika_tui.cli.bridge_setup import run

        return run(args)
    if args.tenant is not None:
        check_tenant_id(args.tenant)
    if args.non_interactive:
        from nika_tui.cli.setup_batch import run_non_interactive

        return run_non_interactive(args)
    if args.answers is not None or args.secret_stdin or args.dry_run:
        raise ValidationFailed(
            "--answers, --secret-stdin and --dry-run need --non-interactive",
            "add --non-interactive",
        )
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        from nika_tui.cli.setup_batch import HOW_TO

        raise ValidationFailed("nika setup needs a terminal to ask questions", HOW_TO)
    return _interactive(args)


# -- interactive --------------------------------------------------------------------------------


def _interactive(args: argparse.Namespace) -> int:
    from nika_tui.wizard.first_prompt import preload, read_tenant_id

    tenant_id = args.tenant
    if tenant_id is None and args.section is None:
        # The first prompt before the heavy imports (questionary included), which start once
        # it is on screen and run while the person types.
        loading: list[threading.Thread] = []
        heavy = ("nika_tui.wizard.prompts", "nika_tui.wizard.flow", "nika_tui.wizard.apply",
                 "nika_tui.cli.setup_batch")  # fmt: skip
        tenant_id = read_tenant_id(sys.stdout, lambda: loading.append(preload(*heavy)))
        for thread in loading:
            thread.join()
    from nika_tui.cli.setup_batch import summarize
    from nika_tui.services.secrets import SecretStore
    from nika_tui.wizard.apply import write_setup
    from nika_tui.wizard.flow import SetupWizard
    from nika_tui.wizard.prompts import Prompter

    where = settings_of(args).roots
    wizard = SetupWizard(
        Prompter(),
        out=sys.stdout,
        store_factory=lambda tid: SecretStore(tid, allow_insecure=args.insecure_storage),
        roots=where,
        verify=args.verify,
    )
    outcome = wizard.run(tenant_id, args.section)
    if outcome is None:
        return 0
    result = write_setup(
        outcome.plan, outcome.store, outcome.storage, backup=outcome.backup, roots=where
    )
    summary = summarize(outcome.plan, result.config_path, result.stored, result.backup_path)
    if args.json:
        print_json(summary)
    else:
        print(f"Wrote {result.config_path}")
        if result.backup_path is not None:
            print(f"Backup of the previous config: {result.backup_path}")
        from nika_tui.wizard.import_offer import offer_import

        config = outcome.plan.config
        offer_import(wizard.ask, sys.stdout, config.tenant_id, config.agent_cli)
        print(f"Next: `nika doctor`, then `nika kernel spawn {outcome.plan.config.tenant_id}`.")
    return 0
