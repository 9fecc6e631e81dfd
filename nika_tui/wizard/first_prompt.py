"""The wizard's opening: the welcome line and the tenant id, before anything heavy is imported.

The welcome screen's button starts ``nika setup`` in a fresh process. Importing the whole
wizard (pydantic models, the secret store, httpx for the online checks) took 2-4 s on the
2-core box before the first prompt appeared; this module needs only questionary, and the CLI
imports the rest in a background thread while the person types the tenant id.
"""

from __future__ import annotations

import getpass
import re
import threading
from typing import TYPE_CHECKING, TextIO

from nika_tui.domain.tenant_id import check_tenant_id_answer

if TYPE_CHECKING:
    from nika_tui.wizard.prompts import Prompter

WELCOME = "Welcome to nika-os. Let's set up a tenant (Ctrl-C quits, nothing written)."


def suggest_tenant_id(user: str) -> str:
    """A valid tenant id derived from a user name (``John.Doe`` → ``john-doe``)."""
    slug = re.sub(r"[^a-z0-9-]+", "-", user.lower()).strip("-")[:40]
    return slug if check_tenant_id_answer(slug) is None else "default"


def ask_tenant_id(ask: Prompter, out: TextIO) -> str:
    """Print the welcome line and ask the tenant id (validated inline)."""
    out.write(WELCOME + "\n")
    out.flush()
    return ask.text(
        "Tenant id",
        default=suggest_tenant_id(getpass.getuser()),
        validate=check_tenant_id_answer,
        instruction="(lowercase letters, digits, '-')",
    )


def preload(*modules: str) -> threading.Thread:
    """Import ``modules`` in a daemon thread (join it before using them)."""
    import importlib

    def run() -> None:
        for name in modules:
            importlib.import_module(name)

    thread = threading.Thread(target=run, name="nika-wizard-preload", daemon=True)
    thread.start()
    return thread
