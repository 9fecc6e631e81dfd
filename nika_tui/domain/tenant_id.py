"""Tenant ids: ``^[a-z0-9][a-z0-9-]{0,39}$``. They name directories, tmux sessions and keys."""

from __future__ import annotations

import re

from nika_tui.errors import ValidationFailed

TENANT_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def is_valid_tenant_id(value: str) -> bool:
    """True when ``value`` is a well-formed tenant id."""
    return bool(TENANT_ID_PATTERN.fullmatch(value))


def check_tenant_id(value: str) -> str:
    """Return ``value`` or raise :class:`ValidationFailed` with a one-line fix."""
    if not is_valid_tenant_id(value):
        shown = value if len(value) <= 50 else value[:47] + "..."
        raise ValidationFailed(
            f"invalid tenant id {shown!r}",
            "use 1-40 characters: lowercase letters, digits and '-', starting with a letter "
            "or digit (e.g. 'acme' or 'team-2')",
        )
    return value


def check_tenant_id_answer(value: object) -> str | None:
    """Reason a tenant id answer is invalid, or ``None`` (the wizard's inline check)."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if not is_valid_tenant_id(value):
        return (
            "use 1-40 characters: lowercase letters, digits and '-', starting with a letter or "
            "digit (e.g. 'acme')"
        )
    return None
