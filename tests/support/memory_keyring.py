"""An in-memory keyring backend: a real ``keyring.backend.KeyringBackend`` holding secrets in a
dict (the ``memory_keyring`` fixture of ``tests/plugins/keyring_memory.py`` installs it)."""

from __future__ import annotations

import threading

from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError


class MemoryKeyring(KeyringBackend):
    """Secrets in a dict; ``block`` makes every call wait (to test the timeout)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}
        self.block = threading.Event()  # set → calls hang until ``release`` is set
        self.release = threading.Event()

    def _maybe_block(self) -> None:
        if self.block.is_set():
            self.release.wait(30)

    def get_password(self, service: str, username: str) -> str | None:
        self._maybe_block()
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self._maybe_block()
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self._maybe_block()
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError(username)
