"""Helpers for Pilot tests: run a scenario, wait for a condition (never a blind sleep)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from textual.css.query import NoMatches
from textual.pilot import Pilot

from nika_tui.ui.app import NikaDashboard


def run(scenario: Coroutine[Any, Any, None]) -> None:
    """Run one async scenario to completion."""
    asyncio.run(scenario)


async def wait_for(
    pilot: Pilot[Any], probe: Callable[[], object], what: str, timeout: float = 10.0
) -> None:
    """Let the app process messages until ``probe()`` is truthy."""
    deadline = time.monotonic() + timeout
    while not _holds(probe):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def _holds(probe: Callable[[], object]) -> bool:
    # A screen that is still composing has no children yet: not an error, just "not yet".
    try:
        return bool(probe())
    except NoMatches:
        return False


async def ready(pilot: Pilot[Any]) -> NikaDashboard:
    """Wait for the first overview snapshot to be on screen."""
    app = pilot.app
    assert isinstance(app, NikaDashboard)
    await wait_for(pilot, lambda: app.snapshot is not None, "the first snapshot")
    await pilot.pause()
    return app


async def screen_is(pilot: Pilot[Any], name: str) -> None:
    """Wait until the active screen's class is ``name``."""
    await wait_for(
        pilot,
        lambda: type(pilot.app.screen).__name__ == name and pilot.app.screen.is_mounted,
        f"screen {name}",
    )
    await pilot.pause()


def notes(app: NikaDashboard) -> list[str]:
    """Messages of the notifications currently shown."""
    return [n.message for n in app._notifications]


Step = Callable[[Pilot[Any]], Awaitable[None]]
