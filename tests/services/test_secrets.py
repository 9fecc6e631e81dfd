"""SecretStore: env → keyring → 0600 file, insecure backends, timeouts."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nika_tui.domain.tenant import SecretRef, SecretSource
from nika_tui.errors import SecretStoreError
from nika_tui.services.secrets import SecretStore, classify_backend

if TYPE_CHECKING:  # keyring is imported where it is used: collection stays light (issue 12)
    from tests.support.memory_keyring import MemoryKeyring

SECRET = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"


def _insecure_backend(name: str) -> object:
    """A keyring backend that is no secure store: ``fail``, ``null`` or ``plaintext``."""
    import keyring.backends.fail
    import keyring.backends.null

    from tests.support.memory_keyring import MemoryKeyring

    class PlaintextKeyring(MemoryKeyring):
        """Stands for keyrings.alt's PlaintextKeyring: a usable priority, but clear text."""

    backends = {
        "fail": keyring.backends.fail.Keyring,
        "null": keyring.backends.null.Keyring,
        "plaintext": PlaintextKeyring,
    }
    return backends[name]()


def test_keyring_roundtrip_under_service_and_username(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore("acme")
    assert store.storage() is SecretSource.KEYRING
    store.put_many({"scaleway.secret_key": SECRET}, SecretSource.KEYRING)
    assert memory_keyring.entries == {("nika-os/acme", "scaleway.secret_key"): SECRET}
    ref = SecretRef(source=SecretSource.KEYRING, name="scaleway.secret_key")
    assert store.get("scaleway", "secret_key", ref) == SECRET


def test_env_var_wins_over_the_keyring(memory_keyring: MemoryKeyring) -> None:
    memory_keyring.entries[("nika-os/acme", "scaleway.secret_key")] = "from-keyring"
    store = SecretStore("acme", env={"SCW_SECRET_KEY": SECRET})
    assert store.get("scaleway", "secret_key") == SECRET


def test_env_reference_reads_the_named_variable() -> None:
    store = SecretStore("acme", env={"MY_SCW": SECRET})
    ref = SecretRef(source=SecretSource.ENV, name="MY_SCW")
    assert store.get("scaleway", "secret_key", ref) == SECRET
    assert store.get("scaleway", "access_key") is None


def test_gcp_env_var_is_a_path_to_the_json(tmp_path: Path) -> None:
    creds = tmp_path / "sa.json"
    creds.write_text('{"type": "service_account"}')
    store = SecretStore("acme", env={"GOOGLE_APPLICATION_CREDENTIALS": str(creds)})
    assert store.get("gcp", "service_account") == '{"type": "service_account"}'
    missing = SecretStore("acme", env={"GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "no")})
    with pytest.raises(SecretStoreError, match="GOOGLE_APPLICATION_CREDENTIALS points at"):
        missing.get("gcp", "service_account")


@pytest.mark.parametrize("name", ["fail", "null", "plaintext"])
def test_insecure_backends_are_no_secure_store(name: str) -> None:
    import keyring

    previous = keyring.get_keyring()
    keyring.set_keyring(_insecure_backend(name))  # type: ignore[arg-type]
    try:
        store = SecretStore("acme")
        assert not store.has_secure_store()
        assert store.storage() is SecretSource.ENV
        with pytest.raises(SecretStoreError, match="no secure store"):
            store.put_many({"scaleway.secret_key": SECRET}, SecretSource.KEYRING)
        assert SecretStore("acme", allow_insecure=True).storage() is SecretSource.FILE
    finally:
        keyring.set_keyring(previous)


def test_memory_backend_counts_as_secure() -> None:
    from tests.support.memory_keyring import MemoryKeyring

    assert classify_backend(MemoryKeyring()).secure


def test_plain_file_only_with_insecure_storage() -> None:
    store = SecretStore("acme")
    with pytest.raises(SecretStoreError, match="--insecure-storage"):
        store.put_many({"runpod.api_key": "x" * 24}, SecretSource.FILE)
    assert not store.insecure_path.exists()
    allowed = SecretStore("acme", allow_insecure=True)
    allowed.put_many({"runpod.api_key": "x" * 24}, SecretSource.FILE)
    assert stat.S_IMODE(allowed.insecure_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(allowed.insecure_path.parent.stat().st_mode) == 0o700
    assert allowed.get("runpod", "api_key") == "x" * 24
    # Without the flag, a FILE reference written earlier is still honoured at run time.
    ref = SecretRef(source=SecretSource.FILE, name="runpod.api_key")
    assert SecretStore("acme").get("runpod", "api_key", ref) == "x" * 24
    assert SecretStore("acme").get("runpod", "api_key") is None


def test_a_world_readable_secrets_file_is_refused() -> None:
    store = SecretStore("acme", allow_insecure=True)
    store.put_many({"runpod.api_key": "x" * 24}, SecretSource.FILE)
    store.insecure_path.chmod(0o644)
    with pytest.raises(SecretStoreError, match="chmod 600"):
        store.get("runpod", "api_key")


def test_a_hanging_keyring_times_out(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore("acme", timeout=0.2)
    assert store.has_secure_store()  # probed before the backend starts hanging
    memory_keyring.block.set()
    with pytest.raises(SecretStoreError, match="did not answer"):
        store.get("scaleway", "secret_key")
    with pytest.raises(SecretStoreError, match="did not answer") as exc:
        store.put_many({"scaleway.secret_key": SECRET}, SecretSource.KEYRING)
    assert SECRET not in str(exc.value)
    memory_keyring.release.set()


def test_delete_removes_keyring_and_file_entries(memory_keyring: MemoryKeyring) -> None:
    store = SecretStore("acme", allow_insecure=True)
    store.put_many({"aws.secret_access_key": "k" * 40}, SecretSource.KEYRING)
    store.delete("aws.secret_access_key")
    store.delete("aws.secret_access_key")  # already gone: fine
    assert memory_keyring.entries == {}
