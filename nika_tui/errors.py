"""One exception hierarchy: every failure a person can see carries a message and a hint.

Adapters translate their library's exceptions into these; the CLI prints
``error: {message}`` and ``hint: {hint}`` on stderr and exits non-zero; the
dashboard shows them in a notification or an error modal.
"""

from __future__ import annotations


class NikaError(Exception):
    """Base class: a user-facing ``message`` and an actionable ``hint``."""

    exit_code: int = 1

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} — {self.hint}" if self.hint else self.message


class ConfigError(NikaError):
    """A configuration file or answer is missing, malformed or invalid."""

    exit_code = 2


class ValidationFailed(NikaError):
    """User input failed validation (one or more fields)."""

    exit_code = 2


class TenantNotFound(NikaError):
    """The tenant id names no configured tenant."""

    exit_code = 2


class TenantBindingRefused(NikaError):
    """A command inside one tenant's kernel named another tenant."""

    exit_code = 2


class SecretStoreError(NikaError):
    """The secret store cannot read or write a secret."""


class StoreUnavailable(NikaError):
    """A storage backend (Redis, Qdrant, files) cannot be reached."""


class ShardMissing(StoreUnavailable):
    """A tenant's shard that held memories is gone or emptied: an alarm, never "no memory"."""


class ShardBusy(StoreUnavailable):
    """A shard is briefly offline (being optimised); retrying soon is the whole remedy."""


class ServiceNotRunning(StoreUnavailable):
    """The memory service did not answer."""

    def __init__(self, message: str = "memory service is not running", hint: str = "") -> None:
        super().__init__(message, hint or "start it with `nika up`")


class KernelError(NikaError):
    """A tmux kernel cannot be spawned, reached or stopped."""


class JudgeError(NikaError):
    """A judge backend failed (its verdict then counts as UNCERTAIN)."""


class BridgeError(NikaError):
    """The messaging bridge cannot start, verify, route or deliver."""


class BridgeRefused(BridgeError):
    """An inbound webhook request is refused (its HTTP ``status`` and a reason for the log)."""

    def __init__(self, status: int, message: str, hint: str = "") -> None:
        super().__init__(message, hint)
        self.status = status


class ProviderError(NikaError):
    """A cloud provider refused or failed a request (bad key, quota, region, rate limit)."""

    def __init__(self, message: str, hint: str = "", kind: str = "other") -> None:
        super().__init__(message, hint)
        self.kind = kind


class ScaleError(NikaError):
    """A scale-out plan cannot be made, applied or decommissioned."""


class QuotaError(NikaError):
    """A tenant quota cannot be read, set or enforced."""


class BillingError(NikaError):
    """The billing log or the price table cannot be read or written."""

    exit_code = 2
