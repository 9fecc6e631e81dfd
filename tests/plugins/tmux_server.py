"""A private tmux server per test: the socket name comes from ``NIKA_TMUX_SOCKET`` (unique per
test, set by the ``isolated_env`` fixture), and the server is killed afterwards."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from nika_tui.paths import tmux_socket_name

if TYPE_CHECKING:
    import libtmux


@pytest.fixture
def tmux_server(isolated_env: dict[str, str]) -> Iterator[libtmux.Server]:
    """A libtmux ``Server`` on the test's own socket (``tmux -L``), killed at teardown."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    import libtmux  # here, not at load: every pytest start would pay for it

    server = libtmux.Server(socket_name=tmux_socket_name(isolated_env))
    yield server
    if server.is_alive():
        server.kill()
