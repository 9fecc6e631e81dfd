"""The key bar: the screen's active key bindings on one clickable line.

It shows what Textual's ``Footer`` shows (every active binding with ``show=True``, disabled ones
dimmed, the command palette on the right) but as one widget that renders one line of text.
``Footer`` builds one ``FooterKey`` widget per binding and recomposes them all whenever the
bindings change (every focus change, every screen): on the overview that was ~17 widgets
styled on each screen push, about 0.1 s of the first frame and a large share of opening a
screen, measured. Clicking a key presses it, as with ``Footer``.
"""

from __future__ import annotations

from textual.app import RenderResult
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget


class KeyBar(Widget):
    """One line of ``key description`` pairs for the active bindings of this screen."""

    DEFAULT_CSS = """
    KeyBar {
        dock: bottom;
        height: 1;
        background: $footer-background;
        color: $footer-foreground;
    }
    """
    ALLOW_SELECT = False

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        if screen is self.screen:
            self.refresh()

    def action_press(self, key: str) -> None:
        """A click on a key: the same as pressing it."""
        self.app.simulate_key(key)

    def render(self) -> RenderResult:
        """The bindings as one line; the palette key, when enabled, is right-aligned.

        When the line is wider than the terminal it is drawn compact (no padding around the
        keys), as ``Footer`` does, so more keys stay visible. Still too wide (80 columns), the
        screen's last keys give way to ``…`` and the app's own keys (quit, help) stay at the
        end: help lists every key, so no key is out of reach.
        """
        for compact in (False, True):
            keys, palette = self._items(compact)
            line = Content(" " if compact else "").join(keys)
            width = line.cell_length + (palette.cell_length + 1 if palette else 0)
            if width <= self.size.width:
                break
        else:
            room = self.size.width - (palette.cell_length + 1 if palette else 0)
            line = self._fit(keys, self._app_keys, room)
        if palette is not None:
            gap = max(1, self.size.width - line.cell_length - palette.cell_length)
            line = Content.assemble(line, " " * gap, palette)
        return line

    _app_keys = 0
    """How many of the last items are the app's own keys (quit, help), kept when too narrow."""

    def _fit(self, keys: list[Content], app_keys: int, width: int) -> Content:
        """The screen's first keys, ``…``, then the app's keys, in ``width`` cells."""
        split = len(keys) - app_keys
        kept, tail = keys[:split], keys[split:]
        more = Content.styled("…", "bold")
        while kept and Content(" ").join([*kept, more, *tail]).cell_length > width:
            kept.pop()
        return Content(" ").join([*kept, more, *tail])

    def _items(self, compact: bool) -> tuple[list[Content], Content | None]:
        """One clickable item per shown action, and the command palette's item."""
        key_style = "bold $footer-key-foreground on $footer-key-background"
        pad = "" if compact else " "
        items: list[Content] = []
        app_items: list[Content] = []
        seen: set[str] = set()
        palette: Content | None = None
        for key, (node, binding, enabled, _tip) in self.screen.active_bindings.items():
            is_palette = key == self.app.COMMAND_PALETTE_BINDING
            if not (binding.show or is_palette) or binding.action in seen:
                continue  # hidden, or several keys for one action: the first one is enough
            seen.add(binding.action)
            item = Content.assemble(
                (f"{pad}{self.app.get_key_display(binding)}{pad}", key_style),
                f" {binding.description}{pad}",
            )
            if not enabled:
                item = item.stylize("dim")
            item = item.stylize(f"@click=press({binding.key!r})")
            if is_palette:
                palette = item if self.app.ENABLE_COMMAND_PALETTE else None
            else:
                (app_items if node is self.app else items).append(item)
        self._app_keys = len(app_items)
        return items + app_items, palette
