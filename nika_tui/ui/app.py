"""The dashboard App and its factory (Posting-style: settings and services first, then the App).

The App talks to one port, :class:`nika_tui.dashboard.model.DashboardSource`. All I/O runs in thread
workers that report back with Messages; the overview poll is rescheduled with ``set_timer``
only after it finished, so polls never pile up. The App owns the actions every screen, key and
command-palette entry share (spawn, attach, stop, restart, open a screen).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import RenderableType
from textual import events, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.theme import Theme
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from nika_tui.dashboard.model import DashboardSource, ReviewItemView, Snapshot
from nika_tui.paths import Roots
from nika_tui.services.ui_settings import (
    UiSettings,
    load_ui_settings,
    save_ui_settings,
    settings_path,
)
from nika_tui.ui.gc import IdleCollector
from nika_tui.ui.host import Clock, DashboardHost
from nika_tui.ui.kernel_actions import KernelActions
from nika_tui.ui.palette import DashboardCommands

if TYPE_CHECKING:
    from nika_tui.settings import Settings


class SnapshotReady(Message):
    """The overview poll answered."""

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__()
        self.snapshot = snapshot


class ReviewsQueued(Message):
    """The pairs a poll saw newly queued, read back to say why (``items`` empty: unread)."""

    def __init__(self, tenant_id: str, count: int, items: Sequence[ReviewItemView]) -> None:
        super().__init__()
        self.tenant_id = tenant_id
        self.count = count
        self.items = list(items)


class SourceFailed(Message):
    """The source itself raised (a bug or an unexpected environment): shown, then retried."""

    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


@dataclass
class DashboardOptions:
    """What the factory decided: source, clock, settings."""

    source: DashboardSource
    clock: Clock
    settings: UiSettings
    settings_file: Path | None
    show_welcome: bool
    roots: Roots
    """Where the tenants' configs are (the welcome screen closes once one exists)."""
    embedded_redis: bool
    """No ``REDIS_URL``: the dashboard started (or found) nika's embedded Redis, which outlives
    it like the service does (said when it quits)."""
    preview: bool = False
    """The offline preview (``--offline-ui``): a banner on every screen, actions refused."""


class NikaDashboard(KernelActions):
    """The nika-os console: every tenant, kernel, memory and decision."""

    TITLE = "nika-os"
    SUB_TITLE = "dashboard"
    CSS_PATH = "styles/dashboard.tcss"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {DashboardCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "leave", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("ctrl+r", "refresh", "Refresh", show=False),
    ]

    def __init__(self, options: DashboardOptions) -> None:
        super().__init__()
        self.options = options
        self.source: DashboardSource = options.source
        self.clock: Clock = options.clock
        self.settings: UiSettings = options.settings
        self.snapshot: Snapshot | None = None
        """The latest overview snapshot (``None`` before the first poll answers)."""
        self.preview: bool = options.preview
        """True in the offline preview: screens show a banner, the source refuses actions."""
        self.selected_tenant: str | None = None
        """The tenant under the overview's cursor: the target of every tenant action."""
        self._poll_timer: Timer | None = None
        self._polling = False
        self._poll_again = False
        self._warmed_up = False
        self.leaving = False
        """True once ``q`` asked to quit: keys typed after it are dropped (see ``on_event``)."""
        self.gc = IdleCollector()
        """Full garbage collections only while nobody types (see :mod:`nika_tui.ui.gc`)."""

    # --- lifecycle ----------------------------------------------------------------------
    def on_mount(self) -> None:
        self.gc.install()
        from nika_tui.ui.screens.overview import OverviewScreen

        if self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.push_screen(OverviewScreen())
        if self.options.show_welcome:
            from nika_tui.ui.screens.welcome import WelcomeScreen

            self.push_screen(WelcomeScreen())
        self.request_refresh()

    def exit(
        self, result: None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        """Exit (every way out: `q`, ctrl+q); the keys typed after it are dropped."""
        self.leaving = True
        super().exit(result, return_code, message)

    def on_unmount(self) -> None:
        self.gc.uninstall()
        self.source.close()

    def _theme_changed(self, theme: Theme) -> None:
        self.settings = self.settings.model_copy(update={"theme": theme.name})
        self._save_settings(self.settings)

    @work(thread=True, exclusive=True, exit_on_error=False, group="settings")
    def _save_settings(self, settings: UiSettings) -> None:
        if self.options.settings_file is not None:
            save_ui_settings(self.options.settings_file, settings)

    # --- the overview poll --------------------------------------------------------------
    def request_refresh(self) -> None:
        """Poll now (or right after the poll in flight); never two polls at once."""
        if self._polling:
            self._poll_again = True
            return
        if self._poll_timer is not None:
            self._poll_timer.stop()
            self._poll_timer = None
        self._polling = True
        self._poll_snapshot()

    @work(thread=True, exclusive=True, exit_on_error=False, group="snapshot")
    def _poll_snapshot(self) -> None:
        try:
            snap = self.source.snapshot(self.clock())
        except Exception as exc:  # noqa: BLE001 - UI edge: show it, keep polling
            self.post_message(SourceFailed(f"{type(exc).__name__}: {exc}"))
        else:
            self.post_message(SnapshotReady(snap))

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.MouseDown)):
            if self.leaving or not self.screen_stack:
                # Keys typed after `q` (a shell command typed ahead) would open screens in an
                # app that is shutting down: they crashed it instead of reaching the shell.
                # With every screen already closed, Textual itself fails on a key.
                return
            self.gc.input_seen()
        await super().on_event(event)

    def _poll_finished(self) -> None:
        self.gc.tick()
        self._polling = False
        if self._poll_again:
            self._poll_again = False
            self.request_refresh()
        else:
            self._poll_timer = self.set_timer(self.settings.refresh_s, self.request_refresh)

    def on_snapshot_ready(self, message: SnapshotReady) -> None:
        previous, self.snapshot = self.snapshot, message.snapshot
        if previous is not None:
            self._notify_changes(previous, message.snapshot)
        for screen in self.screen_stack:
            show = getattr(screen, "show_snapshot", None)
            if show is not None:
                show(message.snapshot)
        self._poll_finished()

    @property
    def warmed_up(self) -> bool:
        """Whether :meth:`warm_up_once` ran."""
        return self._warmed_up

    def warm_up_once(self) -> None:
        """Load what the first frame did not need (the kernel manager), once.

        The overview calls it after its first rows are painted. It runs in the UI thread
        (libtmux must be imported there), so no key can reach a kernel action before it.
        """
        if self._warmed_up:
            return
        self._warmed_up = True
        warm_up = getattr(self.source, "warm_up", None)
        if warm_up is not None:
            warm_up()

    def on_source_failed(self, message: SourceFailed) -> None:
        for screen in self.screen_stack:
            fail = getattr(screen, "show_source_error", None)
            if fail is not None:
                fail(message.error)
        self._poll_finished()

    def _notify_changes(self, old: Snapshot, new: Snapshot) -> None:
        """Notifications: a kernel starts waiting, a metric enters alert, a decision is queued."""
        for row in new.tenants:
            before = old.row(row.tenant_id)
            if before is None:
                continue
            t = row.tenant_id
            if row.kernel.state == "waiting-input" and before.kernel.state != "waiting-input":
                self.notify(f"{t}: the kernel is waiting for input", title="Kernel waiting")
            if row.debt_status == "alert" and before.debt_status != "alert":
                self.notify(
                    f"{t}: {row.debt_worst} crossed into alert",
                    title="Memory debt",
                    severity="error",
                )
            if row.review_count > before.review_count:
                self._read_new_reviews(t, row.review_count - before.review_count)
            if row.confirmation_count > before.confirmation_count:
                self.notify(f"{t}: an action waits for your confirmation", title="Decision queued")

    @work(thread=True, exit_on_error=False, group="review-toast")
    def _read_new_reviews(self, tenant_id: str, count: int) -> None:
        # The poll only counts pending pairs (no JSON parse per tenant per second); the toast
        # says why they were queued, as the CLI does, so the newest are read once here.
        try:
            items = self.source.review_items(tenant_id)
        except Exception:  # noqa: BLE001 - UI edge: the toast falls back to the count
            items = []
        pending = [i for i in items if i.status == "pending" and not i.unreadable]
        pending.sort(key=lambda i: i.created_at.timestamp() if i.created_at else 0.0)
        self.post_message(ReviewsQueued(tenant_id, count, pending[-1:]))

    def on_reviews_queued(self, message: ReviewsQueued) -> None:
        from nika_tui.ui.widgets.memory_text import review_toast

        self.notify(
            review_toast(message.tenant_id, message.count, message.items),
            title="Decision queued",
            timeout=12,
            markup=False,  # the judge's words and the memories are data, not markup
        )

    # --- actions shared by keys and the palette -----------------------------------------
    def run_palette_action(self, action: str, tenant: str | None) -> None:
        """Run a palette entry, optionally for a named tenant (it becomes the selection)."""
        if tenant is not None:
            self.selected_tenant = tenant
        getattr(self, f"action_{action}")()

    def _tenant(self) -> str | None:
        if self.selected_tenant is None:
            self.notify("no tenant selected", severity="warning")
        return self.selected_tenant

    def action_refresh(self) -> None:
        """Poll now."""
        self.request_refresh()

    def _overview_action(self, name: str) -> None:
        from nika_tui.ui.screens.overview import OverviewScreen

        for screen in self.screen_stack:
            if isinstance(screen, OverviewScreen):
                getattr(screen, f"action_{name}")()

    def action_filter_state(self) -> None:
        """Cycle the overview's state filter."""
        self._overview_action("filter_state")

    def action_toggle_needs_me(self) -> None:
        """Toggle the overview's needs-me filter."""
        self._overview_action("toggle_needs_me")

    def action_cycle_sort(self) -> None:
        """Cycle the overview's sort."""
        self._overview_action("cycle_sort")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # exit_on_error=False: a failed worker must not kill the app; say it and carry on.
        if event.state == WorkerState.ERROR and event.worker.group == "settings":
            self.notify(f"could not save UI settings: {event.worker.error}", severity="warning")

    def use_source(self, source: DashboardSource) -> None:
        """Swap the data source (e.g. the welcome screen's sample-data preview)."""
        self.source.close()
        self.source = source
        self.snapshot = None
        self.request_refresh()

    def tenants_configured(self) -> bool:
        """Whether any tenant config exists (the welcome screen closes once one does)."""
        from nika_tui.services.config_store import list_tenant_ids

        return bool(list_tenant_ids(self.options.roots))

    def preview_sample_data(self) -> None:
        """Show the bundled sample data instead of the live stores (the welcome's preview)."""
        from nika_tui.dashboard.fixture_source import FixtureSource

        source = FixtureSource.from_file(preview=True)
        self.preview = True
        self.clock = lambda: source.now  # sample data has its own fixed clock
        self.use_source(source)


def make_app(
    settings: Settings,
    source: DashboardSource | None = None,
    clock: Clock | None = None,
    show_welcome: bool | None = None,
    settings_file: Path | None = None,
    autostart: Callable[[], None] | None = None,
    preview: bool = False,
    child_env: Mapping[str, str] | None = None,
) -> NikaDashboard:
    """Build the UI settings and services on the process's settings, then the App.

    Args:
        settings: The settings the entry built (the roots, ``REDIS_URL``...).
        source: The data source; the live Redis source on ``settings`` when ``None``.
        clock: ``now`` for snapshots; UTC wall clock when ``None`` (tests pass a fixed one).
        show_welcome: Open on the welcome screen; default: when no tenant is configured.
        settings_file: The UI settings file; ``{config}/ui.yaml`` when ``None``.
        autostart: Starts the memory service when the live source finds it dead.
        preview: The offline preview (``--offline-ui``): banner, actions refused.
        child_env: What the kernels the live source starts inherit; ``os.environ`` if ``None``.

    Returns:
        The App, not yet running.
    """
    from nika_tui.services.config_store import list_tenant_ids

    if source is None:
        from nika_tui.dashboard.redis_source import RedisDashboardSource

        # libtmux is only needed for kernel actions: import it after the first frame.
        source = RedisDashboardSource(
            settings, child_env=child_env, defer_warm_up=True, autostart=autostart
        )
    where = settings.roots
    path = settings_file if settings_file is not None else settings_path(where)
    welcome = show_welcome if show_welcome is not None else not list_tenant_ids(where)
    options = DashboardOptions(
        source=source,
        clock=clock or (lambda: datetime.now(UTC)),
        settings=load_ui_settings(path),
        settings_file=path,
        show_welcome=welcome,
        roots=where,
        embedded_redis=not settings.redis_url,
        preview=preview,
    )
    return NikaDashboard(options)


if TYPE_CHECKING:
    # mypy checks here that the app gives its screens everything their protocol names.
    _HOST: type[DashboardHost] = NikaDashboard
