"""Write a confirmed setup: secrets to the store, a backup when asked, then the config.

Order matters: secrets first, so a config never references a secret that failed to store; the
existing file is re-parsed first, so a malformed hand-edited config is never overwritten.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from nika_tui.domain.answers import SetupPlan
from nika_tui.domain.tenant import SecretSource
from nika_tui.paths import Roots
from nika_tui.services.config_store import parse_config, read_config_text, save_tenant
from nika_tui.services.files import atomic_write_text
from nika_tui.services.secrets import SecretStore


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What was written."""

    config_path: Path
    backup_path: Path | None
    stored: list[str]


def backup_path_for(path: Path, now: dt.datetime) -> Path:
    """A free ``config.yaml.bak-YYYYmmdd-HHMMSS[-n]`` next to ``path``."""
    stem = f"{path.name}.bak-{now.strftime('%Y%m%d-%H%M%S')}"
    candidate = path.with_name(stem)
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{stem}-{n}")
        n += 1
    return candidate


def write_setup(
    plan: SetupPlan,
    store: SecretStore,
    storage: SecretSource,
    *,
    backup: bool,
    roots: Roots,
    now: dt.datetime | None = None,
) -> WriteResult:
    """Store the plan's secrets and write its config (0600, atomic).

    Args:
        plan: The confirmed plan.
        store: The tenant's secret store.
        storage: Where the plan's secret values go (keyring or file).
        backup: Copy an existing config aside first (reset, non-interactive overwrite).
        roots: The config root the config is written under (the command's settings').
        now: Clock for the backup name.

    Returns:
        The written paths and the secret keys stored.

    Raises:
        ConfigError: The existing config is malformed (it is left untouched).
        SecretStoreError: A secret could not be stored (nothing else is written).
    """
    path = roots.tenant_config_path(plan.config.tenant_id)
    backup_path: Path | None = None
    if path.exists():
        old_text = read_config_text(path)
        parse_config(path, old_text)  # refuse to overwrite what we cannot read
        if backup:
            backup_path = backup_path_for(path, now or dt.datetime.now(dt.UTC))
            atomic_write_text(backup_path, old_text)
    if plan.secrets:
        store.put_many(plan.secrets, storage)
    written = save_tenant(plan.config, roots)
    return WriteResult(written, backup_path, sorted(plan.secrets))
