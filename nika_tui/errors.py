"""One exception hierarchy: every failure a person can see carries a message and a hint.

Adapters translate their library's exceptions into these; the CLI prints
``error: {message}`` and ``hint: {hint}`` on stderr and exits non-zero; the
dashboard shows them in a notification or an error modal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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


@dataclass(frozen=True, slots=True)
class Problem:
    """One missing or invalid answer."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


class AnswersInvalid(ValidationFailed):
    """One or more answers are missing or invalid; ``problems`` lists them all."""

    def __init__(self, problems: Sequence[Problem], source: str = "answers") -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        n = len(self.problems)
        super().__init__(
            f"{source}: {n} missing or invalid answer{'s' if n != 1 else ''}:\n{lines}",
            "fix every field listed above and run the same command again (nothing was written)",
        )


MAX_REPORTED_ERRORS = 5
"""Invalid lines of an evaluation file named in its error (the count names the rest)."""


class EvalFileError(ValidationFailed):
    """A judge evaluation file has invalid lines; ``errors`` lists ``(line, problem)``."""

    def __init__(self, source: str, errors: Sequence[tuple[int, str]]) -> None:
        first = "; ".join(f"line {n}: {msg}" for n, msg in errors[:MAX_REPORTED_ERRORS])
        more = len(errors) - MAX_REPORTED_ERRORS
        suffix = f" (and {more} more)" if more > 0 else ""
        super().__init__(
            f"{source}: {len(errors)} invalid line(s): {first}{suffix}",
            'each line must be {"id", "old": {"text", "timestamp"}, "new": {...}, '
            '"label": "REPLACE|KEEP|UNCERTAIN"}',
        )
        self.errors = list(errors)


class SnapshotInvalid(ValidationFailed):
    """A snapshot directory is incomplete, of another format, or fails its checksums."""


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


class ServiceBusy(ServiceNotRunning):
    """The memory service is running but could not answer within the caller's deadline.

    A subclass of :class:`ServiceNotRunning` so that every caller that already degrades when
    the service does not answer (a hook, the dashboard) degrades the same way; one that can
    wait retries.
    """

    def __init__(self, message: str = "the memory service is busy, retry", hint: str = "") -> None:
        super().__init__(message, hint or "retry in a moment (the service is overloaded)")


class PreviewOnly(NikaError):
    """An action tried in the offline preview (sample data): nothing runs there."""

    def __init__(self, what: str) -> None:
        super().__init__(
            f"preview: sample data only, nothing was done ({what})",
            "run `nika` (without --offline-ui) to act on your tenants",
        )


class PointNotFound(NikaError):
    """A point id names no point of this tenant and layer."""

    exit_code = 2


class EmbedderUnavailable(NikaError):
    """The embedding model cannot be loaded or the embeddings endpoint failed."""


class TranscriptError(NikaError):
    """A transcript cannot be read or is in no format we know."""

    exit_code = 2


class KernelError(NikaError):
    """A tmux kernel cannot be spawned, reached or stopped."""


class KernelNotReady(NikaError):
    """The kernel is not running and may not be spawned, or died during the turn."""


class JudgeError(NikaError):
    """A judge backend failed (its verdict then counts as UNCERTAIN)."""


class BridgeError(NikaError):
    """The messaging bridge cannot start, verify, route or deliver."""


class BridgeRefused(BridgeError):
    """An inbound webhook request is refused (its HTTP ``status`` and a reason for the log)."""

    def __init__(self, status: int, message: str, hint: str = "") -> None:
        super().__init__(message, hint)
        self.status = status


class HeadlessFailed(NikaError):
    """The headless run did not produce an answer (the message is kept and retried)."""


class ProviderError(NikaError):
    """A cloud provider refused or failed a request (bad key, quota, region, rate limit)."""

    def __init__(self, message: str, hint: str = "", kind: str = "other") -> None:
        super().__init__(message, hint)
        self.kind = kind


class ScaleError(NikaError):
    """A scale-out plan cannot be made, applied or decommissioned."""


class QuotaError(NikaError):
    """A tenant quota cannot be read, set or enforced."""


class ResetUnavailable(NikaError):
    """The store cannot switch generations (an adapter without them)."""


class PublishFailed(NikaError):
    """git refused a commit or a push; the operational store was not touched."""

    # The fix is the person's (the remote's access or branch protection, installing git), as
    # for a bad repo path: the same exit code as ValidationFailed, so scripts treat both alike.
    exit_code = 2


class ConfirmationRequired(NikaError):
    """Purge apply was asked without a confirmation while auto-purge is not autonomous."""

    exit_code = 3


class BillingError(NikaError):
    """The billing log or the price table cannot be read or written."""

    exit_code = 2
