"""A title change while a screen's header has no title child does not crash the dashboard.

Textual's own ``Header`` looked its title up with ``query_one`` and crashed the app with
``NoMatches`` when a title changed while a screen was mounting or being dismissed (seen in
``test_keys_during_mount`` under load). Here the title child is removed by hand, the state
such a screen is in, and the app's title is changed.
"""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App, ComposeResult
from textual.css.query import NoMatches
from textual.widgets import Header
from textual.widgets._header import HeaderTitle

from nika_tui.ui.widgets.header import NikaHeader


class _Titled(App[None]):
    def __init__(self, header: type[Header]) -> None:
        super().__init__()
        self._header = header

    def compose(self) -> ComposeResult:
        yield self._header()


async def _change_title_without_child(header: type[Header]) -> BaseException | None:
    app = _Titled(header)
    async with app.run_test() as pilot:
        await app.query_one(HeaderTitle).remove()
        app.title = "acme"
        await pilot.pause()
        return app._exception


def test_textual_header_crashes_on_a_title_change_without_its_child() -> None:
    # The premise: without our header, this state crashes the app.
    with pytest.raises(NoMatches):  # run_test re-raises the app's crash
        asyncio.run(_change_title_without_child(Header))


def test_nika_header_survives_a_title_change_without_its_child() -> None:
    assert asyncio.run(_change_title_without_child(NikaHeader)) is None


def test_nika_header_still_shows_the_title() -> None:
    async def shown() -> str:
        app = _Titled(NikaHeader)
        async with app.run_test() as pilot:
            app.title = "acme"
            await pilot.pause()
            return str(app.query_one(HeaderTitle).render())

    assert "acme" in asyncio.run(shown())
