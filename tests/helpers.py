"""Test helpers shared across areas."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from nika_tui.domain.ports import Embedder

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


class RecordingEmbedder:
    """An embedder (the real one, in tests) recording each call's texts; ``hold`` may keep a
    call in progress (it gets the texts before the inner embedder does)."""

    def __init__(
        self, inner: Embedder, hold: Callable[[list[str]], None] = lambda texts: None
    ) -> None:
        self.inner = inner
        self.hold = hold
        self.calls: list[list[str]] = []
        self.dimension = inner.dimension
        self.name = inner.name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.hold(list(texts))
        return self.inner.embed(texts)
