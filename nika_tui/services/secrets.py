"""Provider secrets: env var → OS keyring → a 0600 file only with ``--insecure-storage``.

The keyring entry of a field is service ``nika-os/{tenant_id}``, username ``{provider}.{field}``.
A keyring that is missing, the null / fail backend, or a plaintext backend is "no secure store":
nothing is stored there, and the caller offers env vars or ``--insecure-storage`` instead.
Every keyring call runs in a daemon thread joined with a timeout, so a locked or absent keyring
daemon can never hang the wizard. Values are never logged nor put in exception messages.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml

from nika_tui.domain.provider_formats import field_spec
from nika_tui.domain.tenant import Provider, SecretRef, SecretSource
from nika_tui.errors import SecretStoreError
from nika_tui.paths import FILE_MODE, tenants_dir
from nika_tui.services.files import atomic_write_text

T = TypeVar("T")

DEFAULT_TIMEOUT = 3.0
INSECURE_FILE = "secrets.insecure.yaml"
_NO_STORE_HINT = (
    "set the provider's environment variables at run time, or re-run with --insecure-storage "
    "to keep them in a 0600 file"
)
# Backends that store nothing or store it in clear text: never a "secure store".
_INSECURE_MODULES = ("keyring.backends.fail", "keyring.backends.null", "keyrings.alt.file")


@dataclass(frozen=True, slots=True)
class KeyringStatus:
    """What the OS keyring offers.

    Attributes:
        backend: The backend's dotted class name (or ``none``).
        secure: True when secrets can be stored there safely.
        reason: Why it is not secure (empty when it is).
    """

    backend: str
    secure: bool
    reason: str = ""


def _backend_name(backend: object) -> str:
    return f"{type(backend).__module__}.{type(backend).__qualname__}"


def classify_backend(backend: object) -> KeyringStatus:
    """Tell a secure keyring backend from a null / fail / plaintext one.

    Args:
        backend: A ``keyring.backend.KeyringBackend`` instance.

    Returns:
        Its status.
    """
    name = _backend_name(backend)
    members = getattr(backend, "backends", None)
    if name.startswith("keyring.backends.chainer") and isinstance(members, list):
        statuses = [classify_backend(b) for b in members]
        good = [s for s in statuses if s.secure]
        if good:
            return KeyringStatus(f"{name}({good[0].backend})", True)
        return KeyringStatus(name, False, "no usable keyring backend behind the chainer")
    if name.startswith(("keyring.backends.fail", "keyring.backends.null")):
        return KeyringStatus(name, False, "no OS keyring backend is available")
    if name.startswith(_INSECURE_MODULES) or "plaintext" in name.lower():
        return KeyringStatus(name, False, "the keyring backend stores secrets in plain text")
    try:
        priority = float(getattr(backend, "priority", 1))
    except Exception:  # noqa: BLE001 - a backend's priority probe may raise anything
        return KeyringStatus(name, False, "the keyring backend is not usable here")
    if priority <= 0:
        return KeyringStatus(name, False, "the keyring backend is not usable here")
    return KeyringStatus(name, True)


def call_with_timeout(fn: Callable[[], T], timeout: float, what: str) -> T:
    """Run ``fn`` in a daemon thread; give up after ``timeout`` seconds.

    A keyring daemon waiting for an unlock dialog would block forever; the thread is left
    behind (daemon) and the caller gets a :class:`SecretStoreError` instead.

    Raises:
        SecretStoreError: Timeout, or a keyring error (translated).
    """
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the calling thread
            box["error"] = exc

    thread = threading.Thread(target=run, name="nika-keyring", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise SecretStoreError(
            f"the OS keyring did not answer within {timeout:g} s ({what})",
            "unlock your keyring, or " + _NO_STORE_HINT,
        )
    if "error" in box:
        exc = box["error"]
        if _is_keyring_error(exc):
            raise SecretStoreError(
                f"the OS keyring failed ({what}): {type(exc).__name__}", _NO_STORE_HINT
            ) from exc
        raise exc
    value: T = box["value"]
    return value


def _is_keyring_error(exc: BaseException) -> bool:
    try:
        from keyring.errors import KeyringError
    except ImportError:
        return False
    return isinstance(exc, KeyringError | RuntimeError)


def keyring_status(timeout: float = DEFAULT_TIMEOUT) -> KeyringStatus:
    """The status of the OS keyring (``secure=False`` when the package is missing)."""
    try:
        import keyring
    except ImportError:
        return KeyringStatus("none", False, "the keyring package is not installed")
    try:
        backend = call_with_timeout(keyring.get_keyring, timeout, "detecting the backend")
    except SecretStoreError as exc:
        return KeyringStatus("unknown", False, exc.message)
    return classify_backend(backend)


class SecretStore:
    """Resolve and store one tenant's provider secrets.

    Args:
        tenant_id: The tenant.
        env: Environment to read variables from (default ``os.environ``).
        allow_insecure: ``--insecure-storage`` was given: the 0600 file may be written and read.
        timeout: Seconds allowed for each keyring call.
    """

    def __init__(
        self,
        tenant_id: str,
        *,
        env: Mapping[str, str] | None = None,
        allow_insecure: bool = False,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.tenant_id = tenant_id
        self._env = os.environ if env is None else env
        self.allow_insecure = allow_insecure
        self.timeout = timeout
        self._status: KeyringStatus | None = None

    @property
    def service(self) -> str:
        """Keyring service name: ``nika-os/{tenant_id}``."""
        return f"nika-os/{self.tenant_id}"

    @property
    def insecure_path(self) -> Path:
        """The 0600 plaintext file used only with ``--insecure-storage``."""
        return tenants_dir(self._env) / self.tenant_id / INSECURE_FILE

    def status(self) -> KeyringStatus:
        """The keyring status (probed once per store)."""
        if self._status is None:
            self._status = keyring_status(self.timeout)
        return self._status

    def has_secure_store(self) -> bool:
        """True when a secure keyring backend is available."""
        return self.status().secure

    def storage(self) -> SecretSource:
        """Where new secrets go: keyring, else the file if allowed, else env references."""
        if self.has_secure_store():
            return SecretSource.KEYRING
        return SecretSource.FILE if self.allow_insecure else SecretSource.ENV

    # -- writing -----------------------------------------------------------------------------

    def put_many(self, secrets: Mapping[str, str], source: SecretSource) -> None:
        """Store values keyed ``{provider}.{field}`` in the keyring or the insecure file.

        Raises:
            SecretStoreError: No secure store (keyring), file not allowed, or keyring failure.
        """
        if not secrets:
            return
        if source is SecretSource.KEYRING:
            if not self.has_secure_store():
                raise SecretStoreError(f"no secure store: {self.status().reason}", _NO_STORE_HINT)
            import keyring

            for key, value in secrets.items():
                setter = functools.partial(keyring.set_password, self.service, key, value)
                call_with_timeout(setter, self.timeout, f"storing {key}")
        elif source is SecretSource.FILE:
            if not self.allow_insecure:
                raise SecretStoreError(
                    "refusing to store secrets in a plain file",
                    "pass --insecure-storage to allow it explicitly",
                )
            data = self._read_file()
            data.update(secrets)
            atomic_write_text(self.insecure_path, yaml.safe_dump(data, sort_keys=True))
        else:
            raise SecretStoreError(
                "env references store no value", "set the environment variables at run time"
            )

    def delete(self, key: str) -> None:
        """Remove one entry from the keyring and the insecure file (missing is fine)."""
        if self.has_secure_store():
            import keyring
            from keyring.errors import PasswordDeleteError

            def drop() -> None:
                with contextlib.suppress(PasswordDeleteError):
                    keyring.delete_password(self.service, key)

            call_with_timeout(drop, self.timeout, f"deleting {key}")
        if self.insecure_path.exists():
            data = self._read_file()
            if data.pop(key, None) is not None:
                atomic_write_text(self.insecure_path, yaml.safe_dump(data, sort_keys=True))

    # -- reading -----------------------------------------------------------------------------

    def env_value(self, provider: Provider | str, field: str, var: str | None = None) -> str | None:
        """The value from the environment (for GCP: the JSON that the variable points at).

        Raises:
            SecretStoreError: The GCP credentials path cannot be read.
        """
        spec = field_spec(provider, field)
        name = var or spec.env_var
        raw = self._env.get(name)
        if not raw:
            return None
        if spec.env_is_path:
            return read_credentials_file(Path(raw).expanduser(), name)
        return raw.strip()

    def get(self, provider: Provider | str, field: str, ref: SecretRef | None = None) -> str | None:
        """Resolve one secret: env var → keyring → insecure file.

        Args:
            provider: The provider.
            field: The field name.
            ref: The config's reference, when there is one (its env var name wins).

        Returns:
            The value, or ``None`` when it is nowhere.

        Raises:
            SecretStoreError: The keyring failed or timed out, or a file cannot be read.
        """
        spec = field_spec(provider, field)
        var = ref.name if ref is not None and ref.source is SecretSource.ENV else None
        value = self.env_value(provider, field, var)
        if value is None and var is not None:
            value = self.env_value(provider, field)
        if value is not None:
            return value
        if self.has_secure_store():
            import keyring

            found = call_with_timeout(
                lambda: keyring.get_password(self.service, spec.key),
                self.timeout,
                f"reading {spec.key}",
            )
            if found is not None:
                return str(found)
        if self.allow_insecure or (ref is not None and ref.source is SecretSource.FILE):
            stored = self._read_file().get(spec.key)
            return str(stored) if stored is not None else None
        return None

    def _read_file(self) -> dict[str, str]:
        return read_insecure_file(self.insecure_path)


def read_insecure_file(path: Path) -> dict[str, str]:
    """The secrets kept in a ``--insecure-storage`` YAML file (``{}`` when there is none).

    Shared by the tenant secrets and the bridge's: the same file rules for both.

    Raises:
        SecretStoreError: The file is readable by others, not YAML, or not a mapping.
    """
    if not path.exists():
        return {}
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SecretStoreError(
            f"{path} is readable by other users (mode {mode:o})",
            f"run `chmod {FILE_MODE:o} {path}`",
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SecretStoreError(f"{path}: not valid YAML", "fix or delete the file") from exc
    if not isinstance(data, dict):
        raise SecretStoreError(f"{path}: expected a mapping", "fix or delete the file")
    return {str(k): str(v) for k, v in data.items()}


def read_credentials_file(path: Path, var: str = "GOOGLE_APPLICATION_CREDENTIALS") -> str:
    """Read a credentials file that an env var points at.

    Raises:
        SecretStoreError: It does not exist or cannot be read.
    """
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SecretStoreError(
            f"{var} points at {path}, which cannot be read ({exc.strerror})",
            f"set {var} to the path of the service-account JSON file",
        ) from exc
