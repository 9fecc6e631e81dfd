"""The ``memory_keyring`` fixture: an in-memory keyring backend for one test.

It installs :class:`tests.support.memory_keyring.MemoryKeyring` with ``keyring.set_keyring``
and restores the previous backend afterwards, so secrets written by a test live only in this
process's memory. ``keyring`` is imported by the fixture, not at load: every pytest start
loads this plugin, few tests use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.support.memory_keyring import MemoryKeyring


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    """Install an in-memory keyring for the test; restore the previous backend afterwards."""
    import keyring

    from tests.support.memory_keyring import MemoryKeyring

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        backend.release.set()
        keyring.set_keyring(previous)
