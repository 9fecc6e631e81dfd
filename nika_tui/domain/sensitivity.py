"""Sensitivity of a memory for publication (strategy A, step 4: « selon la sensibilité »).

A memory is **private** when any of these holds, else **shareable**:

- its payload says so: ``sensitivity: "private"`` or ``private: true`` (top-level keys a writer
  or an import may set), or a ``masked_secrets`` count above zero (a secret masker's record);
- its NIKA_META ``entity_ids`` holds ``private`` or ``sensitivity:private``, or its text carries a
  ``#private`` tag (how a person marks one with ``nika memory remember``);
- its text holds a masked secret (``[REDACTED]``, ``[REDACTED:…]``, ``[MASKED]``, ``[MASKED:…]``,
  ``***``-style masks left by maskers) — where a secret was, the rest of the fact is sensitive;
- its text still holds something shaped like a live credential (a last line of defence: the
  masker should have caught it).

A private memory never goes to a repository marked public; it stays in the local private tree
(see ``docs/compress.md``). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from nika_tui.domain.envelope import NikaMeta


class Sensitivity(StrEnum):
    SHAREABLE = "shareable"
    PRIVATE = "private"


class RepoVisibility(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"


_MASK = re.compile(r"\[(?:REDACTED|MASKED)(?::[^\]]*)?\]|\*{4,}")
_PRIVATE_TAG = re.compile(r"(?i)(?:^|\s)#private\b")
_LIVE_SECRET = re.compile(
    r"sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16}"
    r"|xox[abpr]-[A-Za-z0-9-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|(?i:\b(?:api[_-]?key|secret|token|password|passwd)\s*[:=]\s*['\"]?[^\s'\"\[]{6,})"
)
PRIVATE_ENTITY = "private"
"""The NIKA_META ``entity_ids`` mark ``nika memory remember --private`` sets."""
_PRIVATE_ENTITIES = frozenset({PRIVATE_ENTITY, "sensitivity:private"})


def marked_private(meta: NikaMeta) -> bool:
    """True when the envelope carries the private mark (not the text rules)."""
    return any(e.lower() in _PRIVATE_ENTITIES for e in meta.entity_ids)


def mark_private(meta: NikaMeta) -> NikaMeta:
    """``meta`` with the private mark added (unchanged when it already has one)."""
    if marked_private(meta):
        return meta
    return meta.model_copy(update={"entity_ids": (*meta.entity_ids, PRIVATE_ENTITY)})


def keep_private(meta: NikaMeta, stored: NikaMeta | None) -> NikaMeta:
    """The envelope to store when ``meta`` rewrites the point that held ``stored``.

    The same text said again (a hook's replay, an agent repeating a fact) lands on the same
    point; without the mark it would make a person's private fact publishable again.
    """
    return mark_private(meta) if stored is not None and marked_private(stored) else meta


def why_private(payload: Mapping[str, Any]) -> str | None:
    """Why a stored memory (its payload) is private, or None when it may be published."""
    if str(payload.get("sensitivity", "")).lower() == Sensitivity.PRIVATE.value:
        return "marked private"
    if payload.get("private") is True:
        return "marked private"
    try:
        if int(payload.get("masked_secrets") or 0) > 0:
            return "held a masked secret"
    except (TypeError, ValueError):
        return "unreadable masked_secrets field"
    meta = payload.get("meta")
    entities = meta.get("entity_ids", ()) if isinstance(meta, Mapping) else ()
    if any(str(e).lower() in _PRIVATE_ENTITIES for e in entities or ()):
        return "marked private"
    text = str(payload.get("text", ""))
    if _PRIVATE_TAG.search(text):
        return "tagged #private"
    if _MASK.search(text):
        return "held a masked secret"
    if _LIVE_SECRET.search(text):
        return "looks like it holds a credential"
    return None


def classify(payload: Mapping[str, Any]) -> Sensitivity:
    """:attr:`Sensitivity.PRIVATE` when :func:`why_private` finds a reason."""
    return Sensitivity.PRIVATE if why_private(payload) else Sensitivity.SHAREABLE


def may_publish(payload: Mapping[str, Any], visibility: RepoVisibility) -> bool:
    """True when the memory may go to a repository of ``visibility``."""
    return visibility is RepoVisibility.PRIVATE or classify(payload) is Sensitivity.SHAREABLE
