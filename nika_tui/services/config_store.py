"""Reading and writing tenant configs. A config that fails to parse is never overwritten."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from nika_tui.domain.envelope import explain_validation_error
from nika_tui.domain.tenant import SCHEMA_VERSION, TenantConfig
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ConfigError, TenantNotFound
from nika_tui.paths import Roots, ensure_private_dir, roots
from nika_tui.services.files import atomic_write_text


def parse_config(path: Path, text: str) -> TenantConfig:
    """Parse one config file's text, or raise :class:`ConfigError` naming file, field and fix."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{path}: not valid YAML{where}",
            f"fix the file by hand or re-run `nika setup` after moving it away ({path})",
        ) from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level", "re-run `nika setup`")
    version = raw.get("schema_version")
    version = SCHEMA_VERSION if version is None else version  # absent: the first schema
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ConfigError(
            f"{path}: schema_version: must be a positive integer (got {version!r})",
            f"set `schema_version: {SCHEMA_VERSION}` (the file was left untouched)",
        )
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: schema_version {version} is newer than this nika-os understands "
            f"({SCHEMA_VERSION})",
            "upgrade nika-os (the file was left untouched)",
        )
    try:
        return TenantConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"{path}: {explain_validation_error(exc)}",
            "correct that field (the file was left untouched) or re-run `nika setup SECTION`",
        ) from exc


def read_config_text(path: Path, what: str = "config") -> str:
    """The text of a config or answers file, or a one-line :class:`ConfigError` naming the fix.

    A file that is not UTF-8 (saved as Latin-1, a binary pasted over it) or unreadable used to
    end in a traceback, and took every other tenant down with it in ``nika tenant list``.
    """
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: the {what} file is not UTF-8 text (byte {exc.start} is 0x"
            f"{exc.object[exc.start]:02x})",
            "re-save it as UTF-8 (e.g. `iconv -f latin1 -t utf-8`), or rewrite it with "
            "`nika setup`",
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the {what} file ({exc.strerror})",
            "check the file's permissions (it should be yours, mode 0600)",
        ) from None


def load_tenant(tenant_id: str, where: Roots | None = None) -> TenantConfig:
    """Load one tenant's config (under ``where``; None: the roots of ``os.environ``)."""
    check_tenant_id(tenant_id)
    path = (where or roots()).tenant_config_path(tenant_id)
    if not path.exists():
        raise TenantNotFound(
            f"unknown tenant {tenant_id!r}", f"create it with `nika setup --tenant {tenant_id}`"
        )
    config = parse_config(path, read_config_text(path))
    if config.tenant_id != tenant_id:
        # The directory names the tenant (tmux session, keyring service): a copied file whose
        # id was not updated would mix two tenants' state.
        raise ConfigError(
            f"{path}: tenant_id: {config.tenant_id!r} does not match its directory {tenant_id!r}",
            f"set `tenant_id: {tenant_id}` in that file (it was left untouched)",
        )
    return config


def list_tenant_ids(where: Roots | None = None) -> list[str]:
    """Ids of every tenant directory holding a config.yaml, sorted."""
    root = (where or roots()).tenants_dir
    if not root.is_dir():
        return []
    return sorted(p.parent.name for p in root.glob("*/config.yaml"))


def render_config(config: TenantConfig) -> str:
    """YAML text of a config (stable key order, schema_version first)."""
    data = config.model_dump(mode="json", exclude_none=False)
    ordered = {"schema_version": data.pop("schema_version"), **data}
    return yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True)


def save_tenant(config: TenantConfig, where: Roots | None = None) -> Path:
    """Write a config atomically (0600 file, 0700 dirs) and return its path."""
    at = where or roots()
    path = at.tenant_config_path(config.tenant_id)
    # mkdir(parents=True) leaves intermediate dirs at the umask's mode: make ours 0700 too.
    ensure_private_dir(at.config)
    ensure_private_dir(at.tenants_dir)
    atomic_write_text(path, render_config(config))
    return path
