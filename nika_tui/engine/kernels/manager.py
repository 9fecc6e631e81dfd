"""Kernels: one tmux session ``nika-tenant-{tenant_id}`` per tenant, running its agent CLI.

:class:`KernelManager` spawns, watches, stops and restarts them on nika's private tmux server
(:mod:`nika_tui.services.tmux_sessions`: exact targets, argv-safe launch, ``remain-on-exit``),
with what :mod:`nika_tui.services.kernel_launch` says to run, and keeps their status in Redis
(:mod:`nika_tui.services.kernel_store`). State comes first from agent hooks; :meth:`poll` falls
back to the pane (``capture-pane`` + :mod:`nika_tui.domain.pane_patterns`) when no hook decided
recently, refreshes the heartbeat while the session lives and records exits with their reason.
"""

from __future__ import annotations

import builtins
import os
import shlex
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import redis

from nika_tui.domain.compaction import CompactionDecision
from nika_tui.domain.kernel_state import LIVE_STATES, KernelState, KernelStatus
from nika_tui.domain.tenant import TenantConfig
from nika_tui.domain.tenant_id import check_tenant_id, is_valid_tenant_id
from nika_tui.engine.kernels import agents as kernel_agents
from nika_tui.engine.kernels import compaction as kernel_compaction
from nika_tui.engine.kernels import stopping
from nika_tui.engine.kernels.exit_handoff import hand_off_dead
from nika_tui.engine.kernels.hook_install import install_for_tenant
from nika_tui.engine.kernels.results import (
    SESSION_PREFIX,
    AttachTarget,
    RestartResult,
    SpawnResult,
    StopResult,
    not_running,
    session_name,
)
from nika_tui.errors import KernelError
from nika_tui.services import kernel_launch, kernel_store, redis_keys
from nika_tui.services.config_store import list_tenant_ids, load_tenant
from nika_tui.services.tmux_sessions import PaneInfo, TmuxSessions
from nika_tui.settings import Settings

if TYPE_CHECKING:  # the tmux adapter imports libtmux on first use
    import libtmux


class KernelManager:
    """Spawns, watches, stops and restarts tenant kernels on the private tmux server."""

    def __init__(
        self,
        settings: Settings,
        *,
        child_env: Mapping[str, str] | None = None,
        redis_client: redis.Redis | None = None,
        clock: Callable[[], datetime] | None = None,
        heartbeat_ttl_s: float = kernel_store.HEARTBEAT_TTL_S,
        hook_fresh_s: float = kernel_store.HOOK_FRESH_S,
        first_output_timeout_s: float = 15.0,
        stop_timeout_s: float = 6.0,
    ) -> None:
        self.settings = settings
        """The ``NIKA_*`` knobs and roots (socket, stores, quota cgroups), built by the entry."""
        self.child_env: dict[str, str] = dict(os.environ if child_env is None else child_env)
        """What the kernels' tmux server and agents start from (PATH, HOME, the CLIs' own
        variables; ``os.environ`` when None), never where a setting is read."""
        self.socket = self.settings.tmux_socket
        self.tmux = TmuxSessions(self.socket, self.child_env.get("PATH"), self.child_env)
        self._redis = redis_client
        self._clock = clock or (lambda: datetime.now(UTC))
        self.heartbeat_ttl_s = heartbeat_ttl_s
        self.hook_fresh_s = hook_fresh_s
        self.first_output_timeout_s = first_output_timeout_s
        self.stop_timeout_s = stop_timeout_s

    # --- plumbing ---------------------------------------------------------------------------
    @property
    def redis(self) -> redis.Redis:
        """The Redis client (connected on first use)."""
        if self._redis is None:
            from nika_tui.services.redis_server import connect

            # Never started from here: `nika kernel list` after `nika down --redis` must say
            # "not reachable — start it with `nika up`", not bring Redis back silently.
            self._redis = connect(self.settings, start=False)
        return self._redis

    @property
    def server(self) -> libtmux.Server:
        """The private tmux server (``tmux -L socket``)."""
        return self.tmux.server

    def now(self) -> datetime:
        """The manager's clock."""
        return self._clock()

    def bus_event(self, tenant_id: str, kind: str, body: dict[str, Any]) -> None:
        """Append one line to the tenant's bus."""
        from nika_tui.services.bus import open_bus

        open_bus(tenant_id, self.settings.roots).append(kind, body, now=self.now())

    def _read(self, tenant_id: str) -> KernelStatus | None:
        return kernel_store.read_status(self.redis, tenant_id, self.now())

    def check_owner(self, tenant_id: str, name: str, info: PaneInfo) -> None:
        if info.owner != tenant_id:
            raise KernelError(
                f"a tmux session named {name} already exists on socket {self.socket} "
                "and was not started by nika",
                f"rename or close it (`tmux -L {self.socket} kill-session -t ={name}`) "
                "and spawn again",
            )

    # --- lifecycle ----------------------------------------------------------------------------
    def spawn(self, tenant_id: str, wait: bool = True) -> SpawnResult:
        """Start the tenant's kernel; a no-op with a message when it already runs.

        Args:
            tenant_id: the tenant.
            wait: wait for the first output line (records pod_ttfl and catches a CLI that
                exits at once); otherwise :meth:`poll` records pod_ttfl later.

        Returns:
            A :class:`SpawnResult`.

        Raises:
            KernelError: tmux or the CLI is missing, a foreign session holds the name, or the
                CLI exited at once (its status and last line are in the message).
            ConfigError: the tenant's kernel settings are invalid.
        """
        check_tenant_id(tenant_id)
        config = load_tenant(tenant_id, self.settings.roots)
        name = session_name(tenant_id)
        existing = self.tmux.pane(name)
        if existing is not None:
            self.check_owner(tenant_id, name, existing)
            if self.is_running(tenant_id):
                return SpawnResult(
                    tenant_id,
                    name,
                    spawned=False,
                    message=f"kernel {tenant_id} is already running (tmux session {name}); "
                    f"attach with `nika kernel attach {tenant_id}`",
                    pid=self.tmux.pane_agent_pid(existing),
                )
            self.tmux.kill(name)  # ours, every agent dead: replace it
        argv = kernel_launch.command_for(config, self.child_env)
        workdir = kernel_launch.workdir_for(config, self.child_env)
        environment = kernel_launch.session_environment(config, self.settings.roots, self.child_env)
        extras = kernel_launch.extra_commands(config, self.child_env)
        self._install_hooks(config)
        started, spawned_at = time.monotonic(), self.now()
        self.tmux.create(name, tenant_id, workdir, environment, argv, config.agent_cli.value)
        for window, extra_argv in extras:  # several agents, one memory: a window each
            self.tmux.add_window(name, window, workdir, environment, extra_argv)
        created = self.tmux.pane(name)
        shim_pid = created.pid if created is not None else None
        self._limit(config, shim_pid)  # its own cgroup nika-tenant-{id} (quotas, issue 18)
        kernel_store.start_kernel(
            self.redis,
            tenant_id,
            cli=config.agent_cli.value,
            session=name,
            pid=shim_pid,
            now=spawned_at,
            heartbeat_ttl_s=self.heartbeat_ttl_s,
            agents=[config.agent_cli.value, *(window for window, _ in extras)],
        )
        ttfl = self._wait_first_output(tenant_id, name, config, argv, started) if wait else None
        pid = self.tmux.agent_pid(shim_pid)
        if pid != shim_pid:
            self.redis.hset(redis_keys.kernel_state(tenant_id), "pid", str(pid))
            self._limit(config, pid)  # forked before the shim moved: move it too
        self.bus_event(
            tenant_id,
            "kernel.event",
            {"action": "spawn", "session": name, "cli": config.agent_cli.value, "pid": pid,
             "pod_ttfl_s": ttfl},
        )  # fmt: skip
        return SpawnResult(
            tenant_id,
            name,
            spawned=True,
            message=f"kernel {tenant_id} started in tmux session {name} (socket {self.socket})",
            pid=pid,
            pod_ttfl_s=ttfl,
            command=argv,
        )

    def _limit(self, config: TenantConfig, pid: int | None) -> None:
        """CPU and RAM quotas through the tenant's cgroup; the bus says how (or why not)."""
        from nika_tui.quota.enforce import limit_kernel

        if pid is not None:
            self.bus_event(
                config.tenant_id, "quota.cgroup", limit_kernel(config, pid, self.settings)
            )

    def _install_hooks(self, config: TenantConfig) -> None:
        """Install the agent hooks into the tenant's agent settings (:mod:`.hook_install`)."""
        install_for_tenant(config, self.settings.roots, self.child_env)

    def _wait_first_output(
        self, tenant_id: str, name: str, config: TenantConfig, argv: list[str], started: float
    ) -> float | None:
        """Wait for the first non-empty pane line; record pod_ttfl; raise if the agent died."""
        deadline = started + self.first_output_timeout_s
        while time.monotonic() < deadline:
            pane = self.tmux.pane(name)
            if pane is None or pane.dead:
                reason = self._record_exit(tenant_id, name, pane, during_spawn=True)
                raise KernelError(
                    f"kernel {tenant_id}: the agent exited at once ({reason})",
                    f"run it by hand to see why: {shlex.join(argv)}",
                )
            text = self.tmux.visible(pane)
            if text.strip():
                ttfl = time.monotonic() - started
                kernel_store.record_pod_ttfl(self.redis, tenant_id, ttfl)
                kernel_agents.classify_agent(
                    self, tenant_id, config.agent_cli.value, text, self.now()
                )
                return ttfl
            time.sleep(0.005)
        return None

    def _record_exit(
        self, tenant_id: str, name: str, pane: PaneInfo | None, during_spawn: bool = False
    ) -> str:
        """Record why the agent is gone, remove its (dead) session and return the reason."""
        if pane is None:
            reason = "the tmux session is gone"
            state = KernelState.EXITED
        else:
            state, reason = kernel_agents.exit_reason(self, name, pane, during_spawn)
            self.tmux.kill(name)
        hand_off_dead(self, tenant_id, None, reason)  # a session left without its SessionEnd
        kernel_store.end_kernel(
            self.redis, tenant_id, state, self.now(), event="exit", reason=reason
        )
        body = {"action": "exit", "state": state.value, "reason": reason}
        self.bus_event(tenant_id, "kernel.event", body)
        return reason

    def poll(
        self, tenant_id: str, windows: Mapping[str, Mapping[str, PaneInfo]] | None = None
    ) -> KernelStatus | None:
        """Watch one kernel once: heartbeat, pane fallback, exit detection.

        While the session lives its heartbeat is refreshed; when no hook decided the state
        recently, each agent window's screen is captured and classified
        (:func:`.agents.poll_agents`). A missing session, or every agent window dead, marks
        the kernel exited (or error, with the exit status and last line as the reason).

        Args:
            tenant_id: the tenant.
            windows: a :meth:`TmuxSessions.windows` snapshot to reuse (``list`` takes one).

        Returns:
            The kernel's status, or None when the tenant never had a kernel.
        """
        check_tenant_id(tenant_id)
        name = session_name(tenant_id)
        fields = kernel_store.read_fields(self.redis, tenant_id)
        panes = (self.tmux.windows() if windows is None else windows).get(name, {})
        info = next(iter(panes.values()), None)
        if info is None or info.owner != tenant_id:  # gone, or a foreign session: not ours
            if fields.get("state") in {s.value for s in LIVE_STATES}:
                self._record_exit(tenant_id, name, None)
            return self._read(tenant_id)
        if all(pane.dead for pane in panes.values()):
            self._record_exit(tenant_id, name, info)
            return self._read(tenant_id)
        now = self.now()
        kernel_store.heartbeat(self.redis, tenant_id, now, self.heartbeat_ttl_s)
        if not fields.get("state"):
            # A session of ours that Redis forgot (flushed): adopt it.
            kernel_store.start_kernel(
                self.redis, tenant_id, cli="", session=name, pid=self.tmux.pane_agent_pid(info),
                now=now, heartbeat_ttl_s=self.heartbeat_ttl_s,
            )  # fmt: skip
            self.redis.hdel(redis_keys.kernel_state(tenant_id), "spawned_epoch")
            fields = kernel_store.read_fields(self.redis, tenant_id)
        cli = fields.get("cli") or "shell"
        text = kernel_agents.poll_agents(self, tenant_id, name, cli, panes)
        if text is None:  # every agent ended since the listing
            self._record_exit(tenant_id, name, self.tmux.pane(name))
            return self._read(tenant_id)
        if not fields.get("pod_ttfl_s") and fields.get("spawned_epoch") and text.strip():
            # Spawned without waiting: the first poll that sees output records pod_ttfl.
            ttfl = max(0.0, now.timestamp() - float(fields["spawned_epoch"]))
            kernel_store.record_pod_ttfl(self.redis, tenant_id, ttfl)
        return self._read(tenant_id)

    def known_tenants(self, panes: Mapping[str, object] | None = None) -> builtins.list[str]:
        """Configured tenants plus tenants with a nika-named session on the socket, sorted."""
        ids = set(list_tenant_ids(self.settings.roots))
        for name in self.tmux.panes() if panes is None else panes:
            if name.startswith(SESSION_PREFIX):
                ids.add(name.removeprefix(SESSION_PREFIX))
        return sorted(i for i in ids if is_valid_tenant_id(i))

    def list(self) -> builtins.list[KernelStatus]:
        """Poll every known kernel (one tmux listing for all); statuses of those that ran."""
        windows = self.tmux.windows()
        out: builtins.list[KernelStatus] = []
        for tenant_id in self.known_tenants(windows):
            status = self.poll(tenant_id, windows)
            if status is not None:
                out.append(status)
        return out

    def status(self, tenant_id: str) -> KernelStatus | None:
        """The stored status, without touching tmux (what the dashboard reads)."""
        return self._read(tenant_id)

    def stop(self, tenant_id: str, timeout_s: float | None = None) -> StopResult:
        """Ask the agent to exit, then kill after a timeout (see :func:`.stopping.stop_kernel`)."""
        return stopping.stop_kernel(self, tenant_id, timeout_s)

    def restart(self, tenant_id: str) -> RestartResult:
        """Stop then spawn again (see :func:`.stopping.restart_kernel`)."""
        return stopping.restart_kernel(self, tenant_id)

    # --- terminal, screen and input ---------------------------------------------------------------
    def attach_command(self, tenant_id: str, agent: str | None = None) -> builtins.list[str]:
        """The argv that attaches a terminal to the kernel (see :meth:`attach_target`)."""
        return self.attach_target(tenant_id, agent).command

    def attach_target(self, tenant_id: str, agent: str | None = None) -> AttachTarget:
        """Which window attach shows (``agent``'s, else the busiest, else the first) and how.

        Raises:
            KernelError: ``agent`` is given and the kernel has no window for it.
        """
        check_tenant_id(tenant_id)
        name = session_name(tenant_id)
        chosen, pane, why = kernel_agents.attach_choice(self, tenant_id, name, agent)
        several = len(self.tmux.windows().get(name, {})) > 1
        # select-window only when there is a choice: one window needs no ``;`` in the argv.
        pane_id = pane.pane_id if pane is not None and several else ""
        return AttachTarget(chosen, why, self.tmux.attach_argv(name, pane_id))

    def is_running(self, tenant_id: str) -> bool:
        """True when the tenant's session exists, is ours, and one of its agents is alive."""
        panes = self.tmux.windows().get(session_name(tenant_id), {})
        first = next(iter(panes.values()), None)
        return (
            first is not None
            and first.owner == tenant_id
            and not all(p.dead for p in panes.values())
        )

    def capture(self, tenant_id: str, lines: int = 50, agent: str | None = None) -> str:
        """The last ``lines`` non-empty lines of an agent's pane (default: the first window)."""
        pane = kernel_agents.agent_pane(self, tenant_id, session_name(tenant_id), agent)
        return "\n".join(self.tmux.history_tail(pane, lines))

    def screen(self, tenant_id: str, agent: str | None = None) -> str:
        """The visible screen of an agent's pane (default: the first window; "" when none)."""
        try:
            pane = kernel_agents.agent_pane(self, tenant_id, session_name(tenant_id), agent)
        except KernelError:
            if agent is not None:
                raise
            return ""
        return self.tmux.visible(pane)

    def send_text(self, tenant_id: str, text: str, agent: str | None = None) -> None:
        """Type one line into an agent's window (literally, then Enter; default: the first).

        Raises:
            KernelError: the kernel is not running, or has no live window for ``agent``.
        """
        pane = kernel_agents.agent_pane(self, tenant_id, session_name(tenant_id), agent)
        if pane.dead or pane.owner != tenant_id:
            raise not_running(tenant_id)
        self.tmux.send_text(pane, text)

    def send_compact(
        self,
        tenant_id: str,
        trigger: str = "nika-confirmed",
        fill_percent: float | None = None,
        agent: str | None = None,
    ) -> str:
        """Type an agent CLI's compact command (see :func:`kernel_compaction.send_compact`)."""
        return kernel_compaction.send_compact(self, tenant_id, trigger, fill_percent, agent)

    def apply_compaction_policy(
        self, tenant_id: str, fill_percent: float, agent: str | None = None
    ) -> CompactionDecision:
        """Run the 61% policy for one agent (see :mod:`nika_tui.engine.kernels.compaction`)."""
        return kernel_compaction.apply_compaction_policy(self, tenant_id, fill_percent, agent)
