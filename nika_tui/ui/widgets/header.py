"""The screens' header: Textual's own, with a title watcher that survives a screen in motion.

Textual 8.2.8's ``Header`` watches the app's and the screen's title and, on a change, looks up
its ``HeaderTitle`` child with ``query_one``, catching only ``NoScreen``. A title change while a
screen is still mounting, or already being dismissed, finds no child and crashes the app with
``NoMatches`` (seen under load in ``tests/ui/test_keys_during_mount.py``: keys typed as screens
mount). Here the watcher updates the title child when there is one, and does nothing otherwise:
the next change, or the mount of the child, shows the right title.
"""

from __future__ import annotations

from textual.dom import NoScreen
from textual.events import Mount
from textual.widget import Widget
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class NikaHeader(Header):
    """``Header`` whose title watcher tolerates a missing title child."""

    def _on_mount(self, event: Mount) -> None:
        # Textual calls every class's handler along the MRO: stop before Header's own watcher,
        # and run Widget's (scrollbars) ourselves.
        event.prevent_default()
        Widget._on_mount(self, event)

        async def set_title() -> None:
            try:
                for title in self.query(HeaderTitle):
                    title.update(self.format_title())
            except NoScreen:
                pass

        self.watch(self.app, "title", set_title)
        self.watch(self.app, "sub_title", set_title)
        self.watch(self.screen, "title", set_title)
        self.watch(self.screen, "sub_title", set_title)
