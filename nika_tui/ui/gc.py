"""When the dashboard lets Python's cyclic garbage collector do a full pass: when nobody types.

A Textual screen allocates many small objects per frame (segments, strips, styles) and keeps
many in its render caches, so CPython's automatic full collections (every few seconds under a
live refresh) walked the whole heap in the middle of a key press: 80-330 ms pauses, measured
in a tmux pane with 50 tenants. Young collections stay automatic (they are short); full
collections run from :meth:`IdleCollector.tick`, called after each poll, once the person has
not pressed a key or clicked for ``quiet_s`` — or regardless after ``max_wait_s``, so memory
held by cycles is always reclaimed.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

YOUNG_THRESHOLD = 10_000
"""Allocations between two young collections (CPython's default is 700: ~15x fewer pauses)."""
NO_AUTOMATIC_FULL = 1_000_000
"""A third threshold no run reaches: full collections only happen in :meth:`tick`."""


class IdleCollector:
    """Full garbage collections at quiet moments (install once, then tick regularly)."""

    def __init__(
        self,
        every_s: float = 30.0,
        quiet_s: float = 2.0,
        max_wait_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = every_s
        self.quiet_s = quiet_s
        self.max_wait_s = max_wait_s
        self._clock = clock
        self._last_input = float("-inf")
        self._last_full = clock()
        self._saved: tuple[int, int, int] | None = None
        self.collections = 0
        """Full collections done by :meth:`tick` (for tests and the benchmark)."""

    def install(self) -> None:
        """Take over full collections (young ones stay automatic, less often)."""
        if self._saved is None:
            self._saved = gc.get_threshold()
            _, middle, _ = self._saved
            gc.set_threshold(YOUNG_THRESHOLD, middle, NO_AUTOMATIC_FULL)

    def uninstall(self) -> None:
        """Give the thresholds back (the app exits, or a test ends)."""
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def input_seen(self) -> None:
        """A key or a click: the person is active, do not pause now."""
        self._last_input = self._clock()

    def tick(self) -> bool:
        """Run a full collection if one is due and it is quiet; True if it ran."""
        now = self._clock()
        since_full = now - self._last_full
        quiet = now - self._last_input >= self.quiet_s
        if since_full < self.every_s or not (quiet or since_full >= self.max_wait_s):
            return False
        gc.collect()
        self._last_full = self._clock()
        self.collections += 1
        return True
