"""The plumbing under the dashboard's Redis source: connection, configs, RPC, kernels, rows.

:class:`RedisReads` holds what every read and action of
:class:`nika_tui.dashboard.redis_source.RedisDashboardSource` shares: the Redis client (short
timeouts, dropped on error), the tenant configs cached by mtime, the memory service's RPC, the
lazily imported kernel manager, and the one pipeline that reads every tenant's overview row.
The helpers below decode Redis replies and tail the bus files.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import redis

from nika_tui.dashboard.model import UNREADABLE, BusLineView, TenantRow
from nika_tui.dashboard.parse import (
    parse_bus_line,
    parse_debt,
    parse_fill,
    parse_kernel,
    pending_confirmations,
    pending_reviews,
    worst_metric,
)
from nika_tui.domain.protocol_codec import Request
from nika_tui.domain.tenant import AgentCli, TenantConfig
from nika_tui.errors import (
    ConfigError,
    KernelError,
    ServiceNotRunning,
    StoreUnavailable,
)
from nika_tui.paths import Roots
from nika_tui.services import redis_keys as keys
from nika_tui.services.config_store import parse_config
from nika_tui.services.liveness import heartbeat_live
from nika_tui.services.redis_server import redis_target

if TYPE_CHECKING:
    from nika_tui.settings import Settings

Rpc = Callable[[str, dict[str, Any], float], dict[str, Any]]
TAIL_BYTES = 32 * 1024
REDIS_ERRORS = (redis.RedisError, OSError)
AUTOSTART_EVERY_S = 30.0
"""Seconds between two service starts from the dashboard (the embedder loads in ~7 s)."""


class KernelControl(Protocol):
    """What the dashboard needs from ``nika_tui.engine.kernels.manager.KernelManager``."""

    def spawn(self, tenant_id: str) -> object: ...
    def stop(self, tenant_id: str) -> object: ...
    def restart(self, tenant_id: str) -> object: ...
    def attach_command(self, tenant_id: str) -> list[str]: ...
    def capture(self, tenant_id: str, lines: int) -> str: ...


def kernel_session(tenant_id: str) -> str:
    """The tmux session of a tenant's kernel (contract: ``nika-tenant-{tenant_id}``)."""
    return f"nika-tenant-{tenant_id}"


class RedisReads:
    """Connection, configs, RPC, kernel manager and overview rows of the Redis source."""

    def __init__(
        self,
        settings: Settings,
        *,
        child_env: Mapping[str, str] | None = None,
        kernels: KernelControl | None = None,
        rpc: Rpc | None = None,
        history_samples: int = 120,
        debt_reports: int = 30,
        defer_warm_up: bool = False,
        autostart: Callable[[], None] | None = None,
    ) -> None:
        """Build a source on the process's settings.

        Args:
            settings: The settings the dashboard's entry built (the roots, ``REDIS_URL``).
            child_env: What the kernels it starts inherit (``PATH``…); ``os.environ`` if ``None``.
            kernels: Kernel manager; a ``KernelManager`` on these settings when ``None``.
            rpc: ``(op, body, timeout) -> reply``; the memory service's client when ``None``.
            history_samples: Fill samples read for the detail screen.
            debt_reports: Audit reports read for the sparklines.
            defer_warm_up: Do not import the kernel manager now; the caller calls
                :meth:`warm_up` from its UI thread later (the dashboard: after its first frame,
                which does not need it).
            autostart: Starts the memory service (detached, without waiting); called when a
                snapshot finds Redis up and no live service, at most every
                :data:`AUTOSTART_EVERY_S`. ``None``: never (tests, previews).
        """
        self.settings = settings
        """The ``NIKA_*`` knobs (a kernel's, a confirmation's), built once by the entry."""
        self.child_env: Mapping[str, str] = dict(os.environ if child_env is None else child_env)
        """What the kernels started from here (a spawn, a ``compact``) inherit."""
        self.roots: Roots = settings.roots
        """Where the tenants' files are (``settings.redis_url`` names their Redis)."""
        self._kernels = kernels
        if kernels is None and not defer_warm_up:
            # Import now, not from a worker inside the running app: libtmux reads
            # sys.stdout.encoding at import time, and Textual replaces sys.stdout while running.
            self.warm_up()
        self._rpc_override = rpc
        self._history_samples = history_samples
        self._debt_reports = debt_reports
        self._redis: redis.Redis | None = None
        self._configs: dict[str, tuple[float, TenantConfig | None, str]] = {}
        self._autostart = autostart
        self._last_autostart = -AUTOSTART_EVERY_S

    # --- plumbing -----------------------------------------------------------------------
    def _client(self) -> redis.Redis:
        if self._redis is None:
            # Short timeouts: a dead Redis must cost one poll a second at most, not five.
            self._redis = redis.Redis.from_url(
                redis_target(self.settings.redis_url, self.roots, start=False),
                decode_responses=True,
                socket_timeout=1.0,
                socket_connect_timeout=1.0,
            )
        return self._redis

    def _drop_client(self) -> None:
        if self._redis is not None:
            self._redis.close()
        self._redis = None

    def _config(self, tenant_id: str) -> tuple[TenantConfig | None, str]:
        """The tenant's config (cached by mtime) and the reason when it is unreadable."""
        path = self.roots.tenant_config_path(tenant_id)
        try:
            mtime = path.stat().st_mtime
        except OSError:
            return None, "config missing"
        cached = self._configs.get(tenant_id)
        if cached and cached[0] == mtime:
            return cached[1], cached[2]
        try:
            config: TenantConfig | None = parse_config(path, path.read_text(encoding="utf-8"))
            problem = ""
        except (ConfigError, OSError) as exc:
            config, problem = None, f"config unreadable: {exc}"
        self._configs[tenant_id] = (mtime, config, problem)
        return config, problem

    def _auto(self, config: TenantConfig | None) -> dict[str, str]:
        return config.auto_actions.model_dump(mode="json") if config else {}

    def _ask(self, request: Request[Any], timeout: float = 5.0) -> dict[str, Any]:
        """The result of ``request``, unparsed: the dashboard's parsers read it leniently (a
        view degrades field by field rather than fail whole)."""
        return self._rpc(request.OP, request.to_body(), timeout)

    def _rpc(self, op: str, body: dict[str, Any], timeout: float = 5.0) -> dict[str, Any]:
        if self._rpc_override is not None:
            return self._rpc_override(op, body, timeout)
        client = self._client()
        try:
            alive = bool(client.exists(keys.SERVICE_HEARTBEAT))
        except REDIS_ERRORS as exc:
            self._drop_client()
            raise ServiceNotRunning(f"Redis is unreachable ({exc})") from exc
        if not alive:
            raise ServiceNotRunning()
        try:
            from nika_tui.services.memory_client import MemoryClient
        except ImportError as exc:
            raise ServiceNotRunning("the memory client is not installed in this build") from exc
        return MemoryClient(client, timeout=timeout).call(op, body, timeout=timeout)

    def warm_up(self) -> None:
        """Import the kernel manager and libtmux now (the constructor does; safe to call again).

        libtmux reads ``sys.stdout.encoding`` at import time and Textual replaces
        ``sys.stdout`` with a capture object that has none while it runs: the real stream is
        put back for the duration of the import (call it from the UI thread). The tmux adapter
        imports libtmux only on first use (decision 452), which inside the running app would
        be a worker thread with the capture in place: so libtmux is imported here too.
        """
        if self._kernels is not None or "libtmux" in sys.modules:
            return
        out = sys.stdout
        if getattr(out, "encoding", None) is None and sys.__stdout__ is not None:
            sys.stdout = sys.__stdout__
        try:
            with contextlib.suppress(ImportError):
                import libtmux  # noqa: F401

                import nika_tui.engine.kernels.manager  # noqa: F401
        finally:
            sys.stdout = out

    def _kernel_manager(self) -> KernelControl:
        if self._kernels is None:
            self.warm_up()
            try:
                from nika_tui.engine.kernels.manager import KernelManager
            except ImportError as exc:
                raise KernelError(
                    "kernel control is not available in this build",
                    "use `nika kernel spawn TENANT` from a shell",
                ) from exc
            self._kernels = KernelManager(self.settings, child_env=self.child_env)
        return self._kernels

    def _maybe_autostart(self) -> str:
        """Restart a dead service (DESIGN: the dashboard starts it when absent), rate-limited.

        Returns:
            The status-bar line saying so ('' when this source never starts it): a service
            started behind the person's back is what issue 17 asked to end.
        """
        if self._autostart is None:
            return ""
        now = time.monotonic()
        if now - self._last_autostart >= AUTOSTART_EVERY_S:
            self._last_autostart = now
            self._autostart()
        return (
            "memory service down — starting it in the background (nika-core; it outlives the "
            "dashboard; NIKA_NO_AUTOSTART=1 to not start it)"
        )

    def _read_rows(
        self, ids: Sequence[str], day: str
    ) -> tuple[dict[str, list[Any]], bool, list[str], object]:
        pipe = self._client().pipeline(transaction=False)
        pipe.get(keys.SERVICE_HEARTBEAT)
        pipe.hkeys(keys.TENANT_ALARMS)
        pipe.get(keys.WRITES_PAUSED)
        for t in ids:
            pipe.hgetall(keys.kernel_state(t))
            pipe.get(keys.kernel_heartbeat(t))
            pipe.hgetall(keys.working_memory(t))
            pipe.hvals(keys.review_queue(t))
            pipe.hvals(keys.confirmations(t))
            pipe.xrevrange(keys.debt_history(t), count=1)
            pipe.get(keys.tokens_day(t, day))
            pipe.get(keys.cost_day(t, day))
        # A key of the wrong type comes back as an error object: that row is unreadable.
        out = pipe.execute(raise_on_error=False)
        if out and isinstance(out[0], redis.ConnectionError):
            raise out[0]
        # Live by pid too: a kill -9'd service's heartbeat outlives it by its TTL.
        service_ok = isinstance(out[0], str) and heartbeat_live(_heartbeat_info(out[0]))
        alarms = sorted(str(t) for t in out[1]) if isinstance(out[1], list) else []
        per, first = 8, 3
        rows = {t: out[first + i * per : first + (i + 1) * per] for i, t in enumerate(ids)}
        return rows, service_ok, alarms, out[2]

    def _row(self, tenant_id: str, raw: list[Any] | None, now: datetime) -> TenantRow:
        config, problem = self._config(tenant_id)
        problems = [problem] if problem else []
        base = TenantRow(
            tenant_id=tenant_id,
            display_name=config.display_name if config else UNREADABLE,
            cli=config.agent_cli.value if config else UNREADABLE,
            problems=tuple(problems),
        )
        if raw is None:
            return base
        state, beat, wm, review, confs, debt, tokens, cost = (
            v if not isinstance(v, Exception) else _Bad(v) for v in raw
        )
        for label, value in (("kernel", state), ("fill", wm), ("review", review), ("debt", debt)):
            if isinstance(value, _Bad):
                problems.append(f"{label} {UNREADABLE}")
        kernel = parse_kernel(
            state if isinstance(state, dict) else {"state": UNREADABLE},
            beat if isinstance(beat, str) else None,
            isinstance(beat, str),
            now,
        )
        fill = parse_fill(wm) if isinstance(wm, dict) else parse_fill({"fill_percent": "?"})
        reports = (
            [e.get("report") for e in stream_entries(debt)] if isinstance(debt, list) else ["?"]
        )
        debt_view = parse_debt(tenant_id, reports)
        status, label = worst_metric(debt_view)
        return replace(
            base,
            kernel=kernel,
            fill=fill,
            debt_status=status,
            debt_worst=label,
            debt_held=status == "alert" and not debt_view.needs_person,
            review_count=pending_reviews(review) if isinstance(review, list) else 0,
            confirmation_count=len(pending_confirmations(confs)) if isinstance(confs, list) else 0,
            problems=tuple(problems),
            tokens_today=int(tokens) if isinstance(tokens, str) and tokens.isdigit() else 0,
            tokens_limit=config.quotas.tokens_per_day if config else None,
            cost_today=_float(cost),
        )

    def close(self) -> None:
        """Close the Redis connection."""
        self._drop_client()


def hash_reply(value: object) -> dict[str, str]:
    """A decoded hash reply (``decode_responses=True``) typed as ``str → str``."""
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def stream_entries(value: object) -> list[dict[str, str]]:
    """Stream entries (newest first, as XREVRANGE returns them) → fields, oldest first."""
    if not isinstance(value, list):
        return []
    return [hash_reply(fields) for _, fields in reversed(value)]


class _Bad:
    """A pipeline reply that was an error (wrong key type...)."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


def _heartbeat_info(raw: str) -> dict[str, Any]:
    try:
        info = json.loads(raw)
    except ValueError:
        return {"pid": raw}
    return info if isinstance(info, dict) else {"pid": info}


def redis_down(exc: Exception) -> StoreUnavailable:
    """The error an action shows when Redis cannot be reached."""
    return StoreUnavailable(f"Redis is not reachable ({exc})", "start it with `nika up`")


def bus_files(root: Path) -> list[Path]:
    from nika_tui.services.bus import Bus

    return Bus(root, root.parent.name).files()


def read_new_lines(
    tenant_id: str, path: Path, cursor: dict[str, int], first: bool
) -> list[BusLineView]:
    """Complete lines of ``path`` after the cursor's offset; advances the cursor."""
    key = str(path)
    try:
        size = path.stat().st_size
        start = cursor.get(key, max(0, size - TAIL_BYTES) if first else 0)
        if start > size:  # truncated or replaced: read it again from the top
            start = 0
        with path.open("rb") as fh:
            fh.seek(start)
            chunk = fh.read(size - start)
    except OSError:
        return []
    end = chunk.rfind(b"\n")
    if end < 0:
        cursor[key] = start
        return []
    body = chunk[: end + 1]
    cursor[key] = start + end + 1
    texts = body.decode("utf-8", errors="replace").split("\n")
    if first and start > 0:
        texts = texts[1:]  # the first line was cut by the seek
    return [parse_bus_line(tenant_id, t) for t in texts if t.strip()]


def codex_trust_problems(config: TenantConfig, where: Roots) -> list[str]:
    """A tenant with Codex among its agents whose hooks Codex does not trust: loss and fix."""
    if AgentCli.CODEX not in config.agent_clis:
        return []
    from nika_tui.services.agent_settings import agent_home, codex_trust_report

    if not (agent_home(config.tenant_id, "codex", where) / "hooks.json").exists():
        return []
    report = codex_trust_report(config.tenant_id, where)
    if report.ok:
        return []
    return [
        f"Codex hooks untrusted ({', '.join(sorted(report.untrusted))}): Codex skips them. "
        f"To trust them: {report.hint(config.tenant_id)}"
    ]


def _float(value: object) -> float | None:
    """A Redis float counter's value, ``None`` when absent or unreadable."""
    try:
        return float(str(value)) if isinstance(value, str) else None
    except ValueError:
        return None
