"""The secret masker: one pattern list, used on every write path (hooks, CLI, MCP, the service).

A memory is text an agent will read back and that sits in Redis's AOF, the shard's WAL and its
payload pages: a credential written into it would be handed to every later session. So every
write is masked twice with :func:`mask_secrets`: by the writer before the entry reaches the
stream (:meth:`nika_tui.services.memory_client.MemoryClient.remember`, so the AOF never holds
it) and by the service before it stores the entry (for any writer that bypassed the client).
Masking is idempotent: masked text masks to itself, so both passes agree on the memory's id.

The patterns favour precision: a token shape is masked only where its prefix is specific
(``sk-ant-``, ``ghp_``, ``AKIA``…), and free text only where a secret-looking *name* is
assigned a value (``password=…``, ``AWS_SECRET_ACCESS_KEY: …``). A git SHA, a UUID, "the token
budget is 8000", ``max_tokens: 4096`` or ``sk-learn`` stay as they are. ``docs/security.md``
lists the patterns; ``tests/domain/test_secret_patterns.py`` is the corpus.
"""

from __future__ import annotations

import re
from typing import NamedTuple

MASK = "[REDACTED]"
_NOT_MASKED = r"(?!\[REDACTED\])"
"""A value that is already the mask is left alone (idempotence)."""


class SecretPattern(NamedTuple):
    """One credential shape."""

    name: str
    regex: re.Pattern[str]
    keep_group: int = 0
    """A group kept in front of the mask (the ``password=`` of an assignment); 0: none."""
    hints: tuple[str, ...] = ()
    """Lower-case substrings one of which every match contains: a text with none of them
    skips the regex (``re`` scans a ``\\b``-anchored pattern at ~1 MB/s here, measured)."""


PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "private key block",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
        ),
        hints=("private key-----",),
    ),
    SecretPattern("anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), hints=("sk-ant-",)),
    SecretPattern(
        "openai key",
        re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        hints=("sk-",),
    ),
    SecretPattern(
        "github token",
        re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),
        hints=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    SecretPattern(
        "github fine-grained token",
        re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
        hints=("github_pat_",),
    ),
    SecretPattern("gitlab token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), hints=("glpat-",)),
    SecretPattern(
        "aws access key id",
        re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
        hints=("akia", "asia"),
    ),
    SecretPattern("google api key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), hints=("aiza",)),
    SecretPattern("slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), hints=("xox",)),
    SecretPattern(
        "stripe key",
        re.compile(r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}"),
        hints=("_live_", "_test_"),
    ),
    SecretPattern("hugging face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), hints=("hf_",)),
    SecretPattern("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), hints=("npm_",)),
    SecretPattern(
        "json web token",
        re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
        hints=("eyj",),
    ),
    SecretPattern(
        "bearer token",
        re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{20,}=*"),
        keep_group=1,
        hints=("bearer",),
    ),
    SecretPattern(
        "password in a URL",
        re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)" + _NOT_MASKED + r"[^\s@/]{3,}(?=@)"),
        keep_group=1,
        hints=("://",),
    ),
    SecretPattern(
        "secret-named variable",
        re.compile(
            r"(\b[A-Z][A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY)"
            r"[A-Z0-9_]*\s*[:=]\s*['\"]?)" + _NOT_MASKED + r"[^\s'\"]{6,}"
        ),
        keep_group=1,
        hints=("secret", "token", "passw", "api_key", "access_key", "private_key"),
    ),
    SecretPattern(
        "secret-named assignment",
        re.compile(
            r"(?i)(\b(?:api[_-]?key|secret(?:[_-]?key)?|access[_-]?token|auth[_-]?token|token|"
            r"password|passwd|pwd)\s*[:=]\s*['\"]?)" + _NOT_MASKED + r"[^\s'\"]{6,}"
        ),
        keep_group=1,
        hints=("key", "secret", "token", "passw", "pwd"),
    ),
)
"""Every credential shape the masker knows, most specific first."""


def mask_secrets(text: str) -> tuple[str, int]:
    """``text`` with every match of :data:`PATTERNS` replaced by :data:`MASK`, and the count.

    Idempotent: ``mask_secrets(mask_secrets(t)[0])`` returns the same text and 0.
    """
    total = 0
    lowered = text.lower()
    for pattern in PATTERNS:
        if pattern.hints and not any(hint in lowered for hint in pattern.hints):
            continue
        text, n = pattern.regex.subn(_replacement(pattern.keep_group), text)
        total += n
    return text, total


def _replacement(keep_group: int) -> str:
    return rf"\g<{keep_group}>{MASK}" if keep_group else MASK  # MASK holds no backslash


def mask(text: str) -> str:
    """``text`` with its secrets masked (see :func:`mask_secrets`)."""
    return mask_secrets(text)[0]
