"""Every way into the memory browser lands on the memory the person pointed at (issue 17).

By keyboard: the ▶ recall hit (not the first), the ▶ bus line (not only the newest), either
side of a review pair; by mouse: a click on an underlined memory id.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import yaml
from textual.geometry import Offset
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from nika_tui.dashboard.fixture_source import DEMO_SNAPSHOT, FixtureSource
from nika_tui.ui.app import NikaDashboard
from nika_tui.ui.screens.memories import MemoryBrowserScreen
from tests.ui.conftest import SIZE
from tests.ui.pilot_helpers import ready, run, screen_is, wait_for

Build = Callable[..., NikaDashboard]


def _data() -> dict[str, Any]:
    return dict(yaml.safe_load(DEMO_SNAPSHOT.read_text(encoding="utf-8")))


def _acme(data: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in data["tenants"] if t["tenant_id"] == "acme")


def _with_two_vat_hits() -> FixtureSource:
    """The sample data with a second recall hit (m-412, the retired per-order rule)."""
    data = _data()
    hits = _acme(data)["recall"]["vat"]["hits"]
    second = copy.deepcopy(hits[0])
    second.update(score=0.41, cosine=0.52)
    second["record"].update(id="m-412", text="Checkout rounds VAT once per order.")
    hits.append(second)
    return FixtureSource(data)


def _with_two_memory_lines() -> FixtureSource:
    """The sample data with a newer bus line about m-770 after the one about m-881."""
    data = _data()
    _acme(data)["bus"].append(
        '{"id":"a3","tenant_id":"acme","kind":"memory.ingested",'
        '"at":"2026-12-02T09:59:59+00:00","NIKA_META":{"action_type":"code","domain":"tests"},'
        '"body":{"memory_id":"m-770","layer":"episodic"}}'
    )
    return FixtureSource(data)


def _mem(app: NikaDashboard) -> MemoryBrowserScreen:
    screen = app.screen
    assert isinstance(screen, MemoryBrowserScreen)
    return screen


def _shown(app: NikaDashboard) -> list[str]:
    table = app.screen.query_one("#mem-table", DataTable)
    return [str(k.value) for k in table.rows]


async def _acme_selected(pilot: Pilot[Any]) -> NikaDashboard:
    app = await ready(pilot)
    await pilot.press("o", "up")  # by tenant: acme first
    await wait_for(pilot, lambda: app.selected_tenant == "acme", "acme selected")
    return app


async def _recall_vat(pilot: Pilot[Any], app: NikaDashboard, hits: int) -> Static:
    await pilot.press("slash")
    await screen_is(pilot, "RecallScreen")
    await pilot.press(*"vat", "enter")
    view = app.screen.query_one("#recall-hits", Static)
    await wait_for(
        pilot,
        lambda: getattr(app.screen, "view", None) and len(app.screen.view.hits) == hits,  # type: ignore[attr-defined]
        f"{hits} hits",
    )
    return view


def _clickable(app: NikaDashboard, memory_id: str) -> Offset:
    """Where on the screen the underlined id ``memory_id`` is drawn (its click opens it)."""
    width, height = app.size
    for y in range(height):
        for x in range(width):
            meta = app.screen.get_style_at(x, y).meta
            if memory_id in str(meta.get("@click", "")):
                return Offset(x, y)
    raise AssertionError(f"{memory_id} is not drawn as a clickable id")


def test_recall_ctrl_o_opens_the_selected_hit_not_the_first(build_app: Build) -> None:
    async def scenario() -> None:
        async with build_app(_with_two_vat_hits()).run_test(size=SIZE) as pilot:
            app = await _acme_selected(pilot)
            await _recall_vat(pilot, app, hits=2)
            await pilot.press("ctrl+n")
            await wait_for(pilot, lambda: app.screen.selected == 1, "the second hit ▶")  # type: ignore[attr-defined]
            await pilot.press("ctrl+o")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert (_mem(app).tenant_id, _mem(app).flt.text) == ("acme", "m-412")
            await wait_for(pilot, lambda: _shown(app) == ["m-412"], "m-412 listed")

    run(scenario())


def test_bus_m_opens_the_selected_lines_memory(build_app: Build) -> None:
    async def scenario() -> None:
        async with build_app(_with_two_memory_lines()).run_test(size=SIZE) as pilot:
            app = await _acme_selected(pilot)
            await pilot.press("b")
            await screen_is(pilot, "BusScreen")
            lines = lambda: app.screen.memory_lines  # type: ignore[attr-defined]  # noqa: E731
            await wait_for(pilot, lambda: len(lines()) == 2, "two lines about a memory")
            picked = app.screen.query_one("#bus-selected", Static)
            # Until a line is picked, the ▶ is the newest line's memory.
            assert "m-770" in str(picked.render()) and "line 2 of 2" in str(picked.render())
            await pilot.press("ctrl+b")
            await wait_for(pilot, lambda: "m-881" in str(picked.render()), "older line ▶")
            assert "line 1 of 2" in str(picked.render())
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert (_mem(app).tenant_id, _mem(app).flt.text) == ("acme", "m-881")
            await wait_for(pilot, lambda: _shown(app) == ["m-881"], "m-881 listed")
            await pilot.press("escape")
            await screen_is(pilot, "BusScreen")
            await pilot.press("ctrl+n", "m")  # back to the newest line
            await screen_is(pilot, "MemoryBrowserScreen")
            assert _mem(app).flt.text == "m-770"

    run(scenario())


def test_review_m_opens_the_old_memory_and_shift_m_the_new(
    build_app: Build, fixture_source: FixtureSource
) -> None:
    async def scenario() -> None:
        async with build_app(fixture_source).run_test(size=SIZE) as pilot:
            app = await ready(pilot)  # beta first: its review queue has pairs
            await pilot.press("v")
            await screen_is(pilot, "ReviewScreen")
            await wait_for(pilot, lambda: app.screen.query_one(DataTable).row_count, "pairs")
            await pilot.press("M")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert (_mem(app).tenant_id, _mem(app).flt.text) == ("beta", "m-99")
            await pilot.press("escape")
            await screen_is(pilot, "ReviewScreen")
            await pilot.press("down", "M")  # the second pair's new memory
            await screen_is(pilot, "MemoryBrowserScreen")
            assert _mem(app).flt.text == "m-102"
            await pilot.press("escape")
            await screen_is(pilot, "ReviewScreen")
            await pilot.press("m")
            await screen_is(pilot, "MemoryBrowserScreen")
            assert _mem(app).flt.text == "m-21"

    run(scenario())


def test_clicking_a_memory_id_opens_the_browser_on_that_memory(build_app: Build) -> None:
    async def scenario() -> None:
        async with build_app(_with_two_vat_hits()).run_test(size=SIZE) as pilot:
            app = await _acme_selected(pilot)
            await _recall_vat(pilot, app, hits=2)
            # The second hit, not the ▶ one: the click alone decides which memory opens.
            assert app.screen.selected == 0  # type: ignore[attr-defined]
            await pilot.pause()
            assert await pilot.click(offset=_clickable(app, "m-412"))
            await screen_is(pilot, "MemoryBrowserScreen")
            assert (_mem(app).tenant_id, _mem(app).flt.text) == ("acme", "m-412")
            await wait_for(pilot, lambda: _shown(app) == ["m-412"], "m-412 listed")
            detail = str(app.screen.query_one("#mem-detail", Static).render())
            assert "once per order" in detail

    run(scenario())
