"""The bridge's configuration file and secrets, resolved once per process.

``{config}/bridge.yaml`` (0600, under the roots of the caller's ``Settings``) holds links,
messages and each gateway's URLs; never a secret. Secrets resolve env var → OS keyring
(service ``nika-os/_bridge``: the ``_`` keeps it apart from every tenant's
``nika-os/{tenant_id}``) → a 0600 file only with ``--insecure-storage``, with the same keyring
guards as tenant secrets
(:mod:`nika_tui.services.secrets`). Environment variables override the URLs so that scripts
and tests point a gateway at a local stand-in.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from pydantic import ValidationError

from nika_tui.domain.bridge import BRIDGE_SCHEMA_VERSION, BridgeConfig, Gateway
from nika_tui.domain.envelope import explain_validation_error
from nika_tui.errors import ConfigError, SecretStoreError
from nika_tui.paths import Roots
from nika_tui.services.files import atomic_write_text
from nika_tui.services.secrets import (
    DEFAULT_TIMEOUT,
    call_with_timeout,
    keyring_status,
    read_insecure_file,
)

KEYRING_SERVICE = "nika-os/_bridge"
INSECURE_FILE = "bridge.secrets.insecure.yaml"

SECRET_VARS: dict[str, str] = {
    "WHATSAPP_APP_SECRET": "the Meta app secret (signs every webhook POST)",
    "WHATSAPP_VERIFY_TOKEN": "the verify token you typed in Meta's webhook settings",
    "WHATSAPP_ACCESS_TOKEN": "a system-user access token allowed to send messages",
    "MICROSOFT_APP_PASSWORD": "the bot's client secret (Azure Bot registration)",
    "GCHAT_SERVICE_ACCOUNT": "the Chat app's service-account key (JSON, or its file's path)",
}
"""Secret → what it is. Each is read from the environment first."""

PLAIN_VARS: dict[str, str] = {
    "MICROSOFT_APP_ID": "teams.app_id",
    "GCHAT_PROJECT_NUMBER": "gchat.audience",
    "WHATSAPP_GRAPH_URL": "whatsapp.graph_url",
    "TEAMS_OPENID_URL": "teams.openid_url",
    "MICROSOFT_TOKEN_URL": "teams.token_url",
    "GCHAT_JWKS_URL": "gchat.jwks_url",
    "GCHAT_API_URL": "gchat.api_url",
}
"""Non-secret settings an environment variable overrides (env name → config field)."""


def config_path(where: Roots) -> Path:
    """``{config}/bridge.yaml`` under the roots of the caller's settings."""
    return where.config / "bridge.yaml"


def load_config(where: Roots) -> BridgeConfig:
    """The bridge config (defaults when the file is absent); never overwritten when bad.

    Raises:
        ConfigError: the file is not YAML or fails validation (named field, fix).
    """
    path = config_path(where)
    if not path.exists():
        return BridgeConfig()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot be read as YAML", f"fix or move away {path}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level", f"fix {path}")
    version = raw.get("schema_version", BRIDGE_SCHEMA_VERSION)
    if version != BRIDGE_SCHEMA_VERSION:
        raise ConfigError(
            f"{path}: schema_version {version!r} is not {BRIDGE_SCHEMA_VERSION}",
            "upgrade nika-os or fix schema_version (the file was left untouched)",
        )
    try:
        return BridgeConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(
            f"{path}: {explain_validation_error(exc)}",
            "correct that field (the file was left untouched)",
        ) from exc


def save_config(config: BridgeConfig, where: Roots) -> Path:
    """Write ``bridge.yaml`` atomically (0600)."""
    path = config_path(where)
    data = config.model_dump(mode="json")
    atomic_write_text(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


def with_env_overrides(config: BridgeConfig, env: Mapping[str, str]) -> BridgeConfig:
    """The config with :data:`PLAIN_VARS` from the environment applied."""
    parts: dict[str, dict[str, str]] = {}
    for var, dotted in PLAIN_VARS.items():
        value = env.get(var, "").strip()
        if value:
            section, _, name = dotted.partition(".")
            parts.setdefault(section, {})[name] = value
    update = {
        section: getattr(config, section).model_copy(update=values)
        for section, values in parts.items()
    }
    return config.model_copy(update=update)


class BridgeSecrets:
    """Resolve and store the bridge's secrets (values never logged nor in messages).

    Args:
        where: The roots (the insecure file is ``{config}/bridge.secrets.insecure.yaml``).
        secrets_env: Where the secret variables are read (default ``os.environ``).
        allow_insecure: ``--insecure-storage`` was given: the 0600 file may be written.
        timeout: Seconds allowed for each keyring call.
    """

    def __init__(
        self,
        where: Roots,
        secrets_env: Mapping[str, str] | None = None,
        *,
        allow_insecure: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.where = where
        self._env = os.environ if secrets_env is None else secrets_env
        self.allow_insecure = allow_insecure
        self.timeout = timeout

    @property
    def insecure_path(self) -> Path:
        """The 0600 plaintext file used only with ``--insecure-storage``."""
        return self.where.config / INSECURE_FILE

    @functools.cached_property
    def secure(self) -> bool:
        """True when a secure OS keyring is available."""
        return keyring_status(self.timeout).secure

    def get(self, name: str) -> str | None:
        """One secret: env var → keyring → insecure file (when it exists); None if nowhere.

        Raises:
            SecretStoreError: the keyring failed, or the file is readable by others.
        """
        value = self._env.get(name, "").strip()
        if value:
            return value
        if self.secure:
            import keyring

            found = call_with_timeout(
                lambda: keyring.get_password(KEYRING_SERVICE, name), self.timeout, f"reading {name}"
            )
            if found:
                return str(found)
        stored = self._read_file().get(name)
        return stored or None

    def put(self, values: Mapping[str, str]) -> str:
        """Store values in the keyring, else (allowed) the 0600 file; where they went.

        Raises:
            SecretStoreError: no secure store and ``--insecure-storage`` was not given.
        """
        if self.secure:
            import keyring

            for name, value in values.items():
                setter = functools.partial(keyring.set_password, KEYRING_SERVICE, name, value)
                call_with_timeout(setter, self.timeout, f"storing {name}")
            return "keyring"
        if not self.allow_insecure:
            raise SecretStoreError(
                "no secure OS keyring to store the bridge secrets",
                "set them as environment variables when running `nika bridge serve`, or "
                "re-run with --insecure-storage to keep them in a 0600 file",
            )
        data = self._read_file()
        data.update(values)
        atomic_write_text(self.insecure_path, yaml.safe_dump(data, sort_keys=True))
        return "file"

    def _read_file(self) -> dict[str, str]:
        return read_insecure_file(self.insecure_path)


@dataclass(frozen=True)
class BridgeSettings:
    """Everything ``nika bridge serve`` runs with, resolved once."""

    config: BridgeConfig
    secrets: dict[str, str] = field(repr=False)
    """Secret name → value (only those found)."""

    def gateway_enabled(self, gateway: Gateway) -> bool:
        """A gateway is served when what verifies its requests is configured."""
        if gateway is Gateway.WHATSAPP:
            return bool(self.secrets.get("WHATSAPP_APP_SECRET"))
        if gateway is Gateway.TEAMS:
            return bool(self.config.teams.app_id)
        return bool(self.config.gchat.audience)

    def missing(self, gateway: Gateway) -> list[str]:
        """What a gateway lacks to receive and answer (names only)."""
        need = {
            Gateway.WHATSAPP: ["WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN",
                               "WHATSAPP_ACCESS_TOKEN"],
            Gateway.TEAMS: ["MICROSOFT_APP_PASSWORD"],
            Gateway.GCHAT: [],
        }[gateway]  # fmt: skip
        out = [name for name in need if not self.secrets.get(name)]
        if gateway is Gateway.TEAMS and not self.config.teams.app_id:
            out.insert(0, "MICROSOFT_APP_ID")
        if gateway is Gateway.GCHAT and not self.config.gchat.audience:
            out.append("GCHAT_PROJECT_NUMBER")
        return out


def resolve(
    where: Roots,
    secrets_env: MutableMapping[str, str],
    *,
    allow_insecure: bool = False,
    scrub: bool = False,
) -> BridgeSettings:
    """Load the config and the secrets.

    Args:
        where: The roots of the caller's settings (``bridge.yaml``, the insecure file).
        secrets_env: The environment the secrets and the URL overrides are read from.
        allow_insecure: read the 0600 file too.
        scrub: remove the secret variables from ``secrets_env`` once read: the bridge starts
            tmux servers for kernels, and a tmux server hands its environment to every pane.

    Raises:
        ConfigError: bridge.yaml is invalid.
        SecretStoreError: the keyring failed.
    """
    config = with_env_overrides(load_config(where), secrets_env)
    store = BridgeSecrets(where, secrets_env, allow_insecure=allow_insecure)
    values = {name: v for name in SECRET_VARS if (v := store.get(name))}
    if scrub:
        for name in SECRET_VARS:
            secrets_env.pop(name, None)
    return BridgeSettings(config=config, secrets=values)
