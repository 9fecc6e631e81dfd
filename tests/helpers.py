"""Test helpers shared across areas."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def retry_until(
    probe: Callable[[], T | None], timeout: float = 10.0, interval: float = 0.02, what: str = ""
) -> T:
    """Poll ``probe`` until it returns a truthy value; fail with ``what`` after ``timeout``.

    This waits for a condition; it is not a sleep that hopes the condition holds.
    """
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(
        f"timed out after {timeout}s waiting for {what or probe!r} (last={last!r})"
    )
