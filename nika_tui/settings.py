"""Every ``NIKA_*`` environment knob, typed and documented in one place.

``Settings.from_env(env)`` reads a mapping (``os.environ`` when none is given): the process
entry points build it once, tests build it from the mapping they used to pass as ``env``.
Defaults and parsing are the ones the readers had before this module existed:

- an empty value counts as unset;
- a number that does not parse is its default, as the schedulers' readers always did (a typo
  must not stop the memory service), so building the settings never fails; the one change:
  ``NIKA_PARK_RETRY_S`` and ``NIKA_KERNEL_WATCH_S`` used to crash the service on such a value;
- the few values whose readers refuse a bad value with a message naming the variable
  (``NIKA_EMBEDDINGS_DIMENSION``, ``NIKA_LEASE_TTL_S``) stay strings here and are checked there,
  so the error, its hint and its exit code are unchanged.

Secrets are not settings: the embeddings API key is read from the variable that
``embeddings_api_key_env`` names, at the moment it is sent, and never stored on this model.
The roots (``roots``: config and data directories, tmux socket) are resolved once, when the
settings are built, by :mod:`nika_tui.paths`, the one module that knows the rules (it also
reads ``XDG_*_HOME`` and ``HOME``, which are not settings). So are the stores' URLs
(``redis_url``, ``qdrant_url``, from ``REDIS_URL`` and ``QDRANT_URL``): kept as private
attributes, out of every dump, because a URL may carry a password. This module imports no nika
package but ``paths`` and ``errors`` (standard library only), so everything may import it, and
no heavy library.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, ValidationError, ValidationInfo, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

from nika_tui import paths
from nika_tui.errors import ConfigError

ENV_PREFIX = "NIKA_"

_READING: ContextVar[Mapping[str, str] | None] = ContextVar("nika_settings_env", default=None)
"""The mapping :meth:`Settings.from_env` is reading, None for ``os.environ``."""


class _EnvSource(EnvSettingsSource):
    """``NIKA_*`` variables of the mapping being read, upper-case names only (as before: a
    lower-case ``nika_tenant_id`` never bound a kernel)."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        env = _READING.get()
        source = os.environ if env is None else env
        upper = {k: v for k, v in source.items() if k.startswith(ENV_PREFIX) and k == k.upper()}
        return parse_env_vars(upper, False, self.env_ignore_empty, self.env_parse_none_str)


_LENIENT_NUMBERS = (
    "audit_interval_s",
    "rem_interval_s",
    "rem_idle_s",
    "purge_retention_days",
    "optimize_idle_s",
    "optimize_timeout_s",
    "optimize_backoff_s",
    "tune_interval_s",
    "park_retry_s",
    "kernel_watch_s",
    "hookd_idle_s",
    "readers",
    "read_shed_s",
    "embed_threads",
)


class Settings(BaseSettings):
    """The ``NIKA_*`` variables; field ``tenant_id`` is ``NIKA_TENANT_ID``."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )

    # -- where things live ---------------------------------------------------------------------
    os_config_dir: Path | None = None
    """Configuration root; unset: ``$XDG_CONFIG_HOME/nika-os``, else ``~/.config/nika-os``."""
    os_data_dir: Path | None = None
    """Data root (stores, bus, archives, embedded Redis); unset: ``$XDG_DATA_HOME/nika-os``,
    else ``~/.local/share/nika-os``."""
    tmux_socket: str = "nika"
    """Name of nika's private tmux socket (``tmux -L``), never the user's default server."""

    # -- set by nika in a kernel's environment --------------------------------------------------
    tenant_id: str = ""
    """The tenant a kernel belongs to; hooks and ``nika mcp`` act on it only. Set by nika."""
    operator: bool = False
    """``1`` on one command inside a kernel lets the operator act on any tenant."""
    session_id: str = ""
    """The agent session id recorded with memories written through MCP. Not set by nika (the
    ``nika mcp`` a kernel's CLI starts serves every session of that CLI): unset, they carry
    none."""
    agent_type: str = "mcp"
    """The agent recorded with memories and review decisions made through MCP
    (``claude-code``, ``codex``, ``gemini-cli``, ``opencode``). Set by nika in the server entry
    it registers with each of a kernel's agent CLIs (docs/agents.md)."""
    tmux_session: str = ""
    """The kernel's tmux session name, recorded by hooks. Not set by nika: unset, hooks infer
    it from ``$TMUX`` (``nika-tenant-<id>`` on nika's socket)."""

    # -- embeddings ------------------------------------------------------------------------------
    embeddings_url: str = ""
    """An OpenAI-compatible embeddings endpoint; unset: the local model."""
    embeddings_model: str = ""
    """Model name sent to ``embeddings_url``; unset: ``all-MiniLM-L6-v2``."""
    embeddings_api_key_env: str = "NIKA_EMBEDDINGS_API_KEY"
    """Name of the variable holding the endpoint's API key (the key itself is never a setting)."""
    embeddings_dimension: str = ""
    """Vector size of ``embeddings_model`` (a positive integer); unset: asked from the endpoint."""

    # -- the memory service ----------------------------------------------------------------------
    embed_ahead: bool = True
    """``0`` turns off embedding the next batch while the current one is written."""
    readers: int = 3
    """Reader threads answering recalls beside the ingest (``0``: the loop answers them).
    Three, not more: they share one GIL with the loop (decision 580)."""
    read_shed_s: float = 0.15
    """A read with less time than this left before its deadline is answered "busy, retry"."""
    embed_process: bool = True
    """``0`` keeps the ingest's embedding in the service's own process (by default a child
    process embeds it, so its forward passes leave the readers the GIL; decision 583)."""
    embed_threads: int = 1
    """Torch threads of the local embedding model (``0``: torch's default, one per core).
    One: on a busy 2-core box a 2-thread forward pass waits for its descheduled second thread
    (measured 13x slower per query at load 12, decision 281)."""
    park_retry_s: float = 10.0
    """Seconds before a tenant parked by a store failure is retried."""
    kernel_watch_s: float = 2.0
    """Seconds between two looks at the kernels' states by the service."""
    audit_interval_s: float = 6 * 3600.0
    """The service audits every tenant this often (seconds)."""
    rem_interval_s: float = 20 * 3600.0
    """At most one automatic REM pass per tenant in this time (seconds)."""
    rem_idle_s: float = 30 * 60.0
    """A tenant's kernels must all have been idle this long before its REM pass (seconds)."""
    purge_retention_days: float = 30.0
    """Retired and superseded memories stay readable this many days before a purge."""
    optimize_idle_s: float = 300.0
    """A shard is optimised only when its tenant's kernels have been idle this long (seconds)."""
    optimize_min_pending: float | None = None
    """Optimise a shard once this many points wait outside its index; unset: Qdrant's indexing
    threshold for the dimension (6,667 at 384-d)."""
    optimize_timeout_s: float = 1800.0
    """An optimisation child running longer than this is killed (seconds)."""
    optimize_backoff_s: float = 3600.0
    """After a failed optimisation the shard waits this long before another try (seconds)."""
    tune_interval_s: float = 86400.0
    """The service re-tunes a tenant's recall at most this often, and only after new labels."""
    quota_cgroups: bool = True
    """``0`` turns off the cgroup limits on kernels (quotas are still counted)."""

    # -- hooks -----------------------------------------------------------------------------------
    hookd: bool = True
    """``0`` / ``off`` / ``false`` / ``no``: every hook runs in its own process, no hook server."""
    hookd_idle_s: float = 600.0
    """The hook server exits after this many seconds without a run."""

    # -- the dashboard ---------------------------------------------------------------------------
    no_autostart: bool = False
    """``1``: the dashboard does not start the memory service when it is down."""

    # -- workers (``nika scale``) ----------------------------------------------------------------
    join_url: str = ""
    """The Redis URL new workers join (``nika scale``); unset: ``REDIS_URL``."""
    redis_password_file: str = ""
    """File (0600) holding the shared Redis's password, for a worker."""
    lease_ttl_s: str = ""
    """Seconds a dead worker's tenants wait before another worker takes them (at least 1)."""
    scale_every_s: float = 60.0
    """Seconds between two host samples (and scale plans) of the scale leader."""
    worker_host: str = ""
    """The host name a worker announces (unset: the machine's). Workers with different names
    share no directory: a moving tenant's shards go through Redis."""
    scale_reconcile_s: float = Field(default=600.0, gt=0)
    """Seconds between the service's passes over the providers' nika-tagged instances (orphans
    are removed or asked about); the first comes a minute after the start, or sooner."""

    _roots: paths.Roots = PrivateAttr()
    _redis_url: str = PrivateAttr(default="")
    _qdrant_url: str = PrivateAttr(default="")

    def model_post_init(self, context: Any, /) -> None:
        """Resolve the roots and the stores' URLs once, from the fields and the mapping being
        read (its ``XDG_*``, ``REDIS_URL``, ``QDRANT_URL``)."""
        env = _READING.get()
        source = os.environ if env is None else env
        # Private attributes, not fields: a URL may carry a password, and private attributes
        # are in no dump, repr or README table.
        self._redis_url = source.get("REDIS_URL", "")
        self._qdrant_url = source.get("QDRANT_URL", "").strip()
        self._roots = paths.roots(
            {
                "NIKA_OS_CONFIG_DIR": str(self.os_config_dir or ""),
                "NIKA_OS_DATA_DIR": str(self.os_data_dir or ""),
                "XDG_CONFIG_HOME": source.get("XDG_CONFIG_HOME", ""),
                "XDG_DATA_HOME": source.get("XDG_DATA_HOME", ""),
                "NIKA_TMUX_SOCKET": self.tmux_socket,
            }
        )

    @property
    def roots(self) -> paths.Roots:
        """Where things live, resolved when these settings were built."""
        return self._roots

    @property
    def redis_url(self) -> str:
        """``REDIS_URL`` as read when these settings were built (empty: nika's embedded Redis).
        Not a field: it may carry the password, so it is in no dump or repr."""
        return self._redis_url

    def with_redis_url(self, url: str) -> Settings:
        """These settings on another Redis (``nika serve --join URL``), the rest unchanged."""
        moved = self.model_copy()
        moved._redis_url = url
        return moved

    @property
    def qdrant_url(self) -> str:
        """``QDRANT_URL`` as read when these settings were built (empty: embedded Qdrant Edge).
        Not a field, for the same reason; ``QDRANT_API_KEY`` is never read here."""
        return self._qdrant_url

    @property
    def config_root(self) -> Path:
        """The configuration root (``NIKA_OS_CONFIG_DIR``, ``XDG_CONFIG_HOME``, home)."""
        return self._roots.config

    @property
    def data_root(self) -> Path:
        """The data root (``NIKA_OS_DATA_DIR``, ``XDG_DATA_HOME``, home)."""
        return self._roots.data

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment; no ``.env`` file, no secrets directory."""
        return init_settings, _EnvSource(settings_cls)

    @field_validator(*_LENIENT_NUMBERS, mode="before")
    @classmethod
    def _default_when_unparsable(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                assert info.field_name is not None
                return cls.model_fields[info.field_name].default
        return value

    @field_validator("optimize_min_pending", mode="before")
    @classmethod
    def _none_when_unparsable(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return None
        return value

    @field_validator("embed_ahead", "embed_process", "quota_cgroups", mode="before")
    @classmethod
    def _off_only_when_zero(cls, value: Any) -> Any:
        return value.strip() != "0" if isinstance(value, str) else value

    @field_validator("hookd", mode="before")
    @classmethod
    def _off_words(cls, value: Any) -> Any:
        if isinstance(value, str):
            return value.strip().lower() not in ("0", "off", "false", "no")
        return value

    @field_validator("operator", "no_autostart", mode="before")
    @classmethod
    def _on_only_when_one(cls, value: Any) -> Any:
        return value.strip() == "1" if isinstance(value, str) else value

    @field_validator(
        "embeddings_url",
        "embeddings_model",
        "embeddings_api_key_env",
        "embeddings_dimension",
        "lease_ttl_s",
        "redis_password_file",
        mode="before",
    )
    @classmethod
    def _stripped(cls, value: Any) -> Any:
        return value.strip() if isinstance(value, str) else value

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in ``env`` (``os.environ`` when None); other variables are ignored.

        Args:
            env: A process environment, or a test's mapping standing in for one.

        Returns:
            The settings; an empty value is the default, as an unset one.

        Raises:
            ConfigError: A value no reader accepts (``NIKA_SCALE_RECONCILE_S=0``), named.
        """
        token = _READING.set(os.environ if env is None else env)
        try:
            return cls()
        except ValidationError as exc:
            first = exc.errors()[0]
            name = env_var(str(first["loc"][0])) if first["loc"] else "a NIKA_* variable"
            raise ConfigError(
                f"{name} is not valid: {first['msg']}", f"fix or unset {name}"
            ) from None
        finally:
            _READING.reset(token)


def env_var(field: str) -> str:
    """The variable that sets ``field`` (``tenant_id`` → ``NIKA_TENANT_ID``)."""
    return ENV_PREFIX + field.upper()


def markdown_table() -> str:
    """The README's table of variables, from the fields' docstrings."""
    rows = ["| Variable | Default | What it does |", "|---|---|---|"]
    for name, field in Settings.model_fields.items():
        default = field.default
        if isinstance(default, bool):
            default = int(default)
        shown = "" if default in (None, "") else f"`{default}`"
        doc = " ".join((field.description or "").split()).replace("``", "`").replace("|", "\\|")
        rows.append(f"| `{env_var(name)}` | {shown} | {doc} |")
    return "\n".join(rows)
