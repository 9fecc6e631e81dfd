"""Kernels: one tmux session ``nika-tenant-{tenant_id}`` per tenant, running its agent CLI.

Everything runs on the project's private tmux server (``tmux -L $NIKA_TMUX_SOCKET``, default
``nika``), never the user's default one, through libtmux.

Spawning. The session is created by one tmux invocation that chains three commands, so that tmux
applies them before it can notice the agent exit (it reaps children in its event loop, after the
command queue): ``new-session`` (start directory and ``-e VAR=value`` session environment from the
tenant config), ``set-option remain-on-exit on`` (a CLI that dies at once leaves its last words
and exit status to read) and ``set-option @nika_tenant {tenant_id}`` (marks the session as ours:
a foreign session with the same name is never touched).

Argument safety. The agent command reaches tmux as an argument list and tmux execs it without a
shell when it gets more than one argument. We always give it
``/bin/sh -c 'exec "$0" "$@"' ARGV...``: the only shell text is our constant; every element of the
tenant's command is a positional parameter, so ``; touch /tmp/pwned`` is an argument, never
code. (A one-element command would otherwise be run by tmux through ``$SHELL -c``.)

Secrets never go on the tmux command line: ``kernel.env`` holds only non-secret values (the config
model says so) and a ``REDIS_URL`` with a password is left out (the kernel then inherits the tmux
server's environment).
"""

from __future__ import annotations

import builtins
import importlib
import os
import re
import shlex
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import libtmux
import redis
from libtmux import exc as tmux_exc

from nika_tui.domain.agent_cli_table import spec_for
from nika_tui.domain.compaction import CompactionAction, CompactionDecision, decide_compaction
from nika_tui.domain.kernel_state import LIVE_STATES, KernelState, KernelStatus, StateSource
from nika_tui.domain.pane_patterns import classify_pane
from nika_tui.domain.tenant import TenantConfig
from nika_tui.domain.tenant_id import check_tenant_id
from nika_tui.errors import ConfigError, KernelError
from nika_tui.paths import tmux_socket_name
from nika_tui.services import kernel_store, redis_keys
from nika_tui.services.agent_clis import INSTALL_HINTS, binary_for
from nika_tui.services.agent_homes import agent_home_env
from nika_tui.services.config_store import list_tenant_ids, load_tenant

SESSION_PREFIX = "nika-tenant-"
OWNER_OPTION = "@nika_tenant"
AUTOCOMPACT_PCT = "61"
RUN_SHIM = ("/bin/sh", "-c", '"$0" "$@"; s=$?; printf \'\\n[exited %d]\\n\' "$s"; exit "$s"')
"""Constant shell text; the tenant's argv follows as positional parameters (see module doc).
It prints ``[exited N]`` when the agent ends: tmux 3.3 does not always report a dead pane's
status, and the reason of an exit is worth having."""
_EXIT_MARK = re.compile(r"^\[exited (\d+)\]$")
PANE_WIDTH, PANE_HEIGHT = 200, 50
NIKA_LOCATION_VARS = ("NIKA_OS_CONFIG_DIR", "NIKA_OS_DATA_DIR", "NIKA_TMUX_SOCKET")
"""Passed on so that hooks and MCP inside the kernel find the same stores as nika."""
HOOK_INSTALLER = "nika_tui.hooks.install.install_for_tenant"
"""``install_for_tenant(config, env)``: merges nika's hooks into the tenant's agent settings."""
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def session_name(tenant_id: str) -> str:
    """``nika-tenant-{tenant_id}``."""
    return f"{SESSION_PREFIX}{tenant_id}"


def _target(name: str) -> str:
    # "=" asks tmux for an exact name (not a prefix match); ":" makes it a pane/window target.
    return f"={name}:"


@dataclass(frozen=True, slots=True)
class SpawnResult:
    """Outcome of :meth:`KernelManager.spawn`."""

    tenant_id: str
    session: str
    spawned: bool
    message: str
    pid: int | None = None
    pod_ttfl_s: float | None = None
    command: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StopResult:
    """Outcome of :meth:`KernelManager.stop`."""

    tenant_id: str
    session: str
    stopped: bool
    forced: bool
    message: str


@dataclass(frozen=True, slots=True)
class RestartResult:
    """Outcome of :meth:`KernelManager.restart`."""

    stop: StopResult
    spawn: SpawnResult
    recall: str


def _tmux_error(action: str, error: Exception) -> KernelError:
    return KernelError(f"tmux failed to {action}: {error}", "check `tmux -V` and `nika doctor`")


class KernelManager:
    """Spawns, watches, stops and restarts tenant kernels on the private tmux server."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        redis_client: redis.Redis | None = None,
        clock: Callable[[], datetime] | None = None,
        heartbeat_ttl_s: float = kernel_store.HEARTBEAT_TTL_S,
        hook_fresh_s: float = kernel_store.HOOK_FRESH_S,
        first_output_timeout_s: float = 15.0,
        stop_timeout_s: float = 6.0,
    ) -> None:
        self.env: dict[str, str] = dict(os.environ if env is None else env)
        self.socket = tmux_socket_name(self.env)
        self._redis = redis_client
        self._clock = clock or (lambda: datetime.now(UTC))
        self.heartbeat_ttl_s = heartbeat_ttl_s
        self.hook_fresh_s = hook_fresh_s
        self.first_output_timeout_s = first_output_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self._server: libtmux.Server | None = None

    # --- plumbing ---------------------------------------------------------------------------
    @property
    def redis(self) -> redis.Redis:
        """The Redis client (connected on first use)."""
        if self._redis is None:
            from nika_tui.services.redis_server import connect

            self._redis = connect(self.env)
        return self._redis

    @property
    def server(self) -> libtmux.Server:
        """The private tmux server (``tmux -L socket``)."""
        if self._server is None:
            tmux_bin = shutil.which("tmux", path=self.env.get("PATH"))
            if tmux_bin is None:
                raise KernelError(
                    "tmux is not installed", "install it (apt install tmux / brew install tmux)"
                )
            self._server = libtmux.Server(socket_name=self.socket, tmux_bin=tmux_bin)
        return self._server

    def _tmux(self, *args: str) -> list[str]:
        try:
            proc = self.server.cmd(*args)
        except tmux_exc.LibTmuxException as error:
            raise _tmux_error(args[0], error) from error
        if proc.returncode != 0:
            raise KernelError(
                f"tmux {args[0]} failed: {' '.join(proc.stderr) or f'exit {proc.returncode}'}",
                f"inspect the server with `tmux -L {self.socket} ls`",
            )
        return list(proc.stdout)

    def _create_session(
        self,
        tenant_id: str,
        name: str,
        workdir: Path,
        environment: Mapping[str, str],
        argv: builtins.list[str],
    ) -> None:
        """Create the kernel's session in one tmux invocation (see the module docstring).

        The session starts on a placeholder (``cat``, constant text), gets ``remain-on-exit``
        and our owner mark, and only then ``respawn-pane -k`` replaces the placeholder with the
        agent: the option is in place before the agent can exit, so even a CLI that dies at
        once leaves its output and exit status behind.
        """
        target = _target(name)
        args = (
            "new-session", "-d", "-s", name,
            "-x", str(PANE_WIDTH), "-y", str(PANE_HEIGHT),
            "-c", str(workdir),
            *[f"-e{key}={value}" for key, value in environment.items()],
            "--", "cat",
            ";", "set-option", "-w", "-t", target, "remain-on-exit", "on",
            ";", "set-option", "-t", target, OWNER_OPTION, tenant_id,
            ";", "respawn-pane", "-k", "-t", target, "-c", str(workdir), "--", *RUN_SHIM, *argv,
        )  # fmt: skip
        for attempt in range(4):
            try:
                self._tmux(*args)
                return
            except KernelError as error:
                # The last session was just killed (a restart): the old server is still
                # shutting down and refuses us. A new one starts on the next attempt.
                transient = "server exited" in error.message or "no server" in error.message
                if not transient or attempt == 3 or self._session(name) is not None:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def _session(self, name: str) -> libtmux.Session | None:
        try:
            found = self.server.sessions.filter(session_name=name)
        except tmux_exc.LibTmuxException as error:
            raise _tmux_error("list sessions", error) from error
        return found[0] if found else None

    def _owner(self, name: str) -> str:
        proc = self.server.cmd("show-options", "-v", "-q", "-t", _target(name), OWNER_OPTION)
        return proc.stdout[0].strip() if proc.stdout else ""

    def _pane(self, name: str) -> libtmux.Pane | None:
        try:
            panes = self.server.panes.filter(session_name=name)
        except tmux_exc.LibTmuxException as error:
            raise _tmux_error("list panes", error) from error
        return panes[0] if panes else None

    def _bus(self, tenant_id: str, kind: str, body: dict[str, Any]) -> None:
        from nika_tui.services.bus import open_bus

        open_bus(tenant_id, self.env).append(kind, body, now=self._clock())

    def _now(self) -> datetime:
        return self._clock()

    # --- what to run --------------------------------------------------------------------------
    def command_for(self, config: TenantConfig) -> list[str]:
        """The agent's argument list: ``kernel.command`` or the CLI's default.

        Raises:
            ConfigError: the configured command is empty.
            KernelError: the executable is not installed (the hint names the install).
        """
        overridden = config.kernel.command is not None
        argv = (
            list(config.kernel.command)
            if config.kernel.command is not None
            else [binary_for(config.agent_cli, self.env)]
        )
        if not argv or not argv[0]:
            raise ConfigError(
                f"tenant {config.tenant_id}: kernel.command is empty",
                "remove kernel.command to use the CLI's default, or give an argument list",
            )
        exe = argv[0]
        if "/" in exe:
            path = Path(exe).expanduser()
            if not path.is_absolute():
                path = self.workdir_for(config) / path
            found = path.is_file() and os.access(path, os.X_OK)
        else:
            search = self._session_env(config).get("PATH", self.env.get("PATH"))
            found = shutil.which(exe, path=search) is not None
        if not found:
            hint = (
                f"fix kernel.command in {config.tenant_id}'s config: {exe!r} is not an executable"
                if overridden
                else INSTALL_HINTS[config.agent_cli]
            )
            where = "" if "/" in exe else " on PATH"
            raise KernelError(f"{config.agent_cli.value}: command {exe!r} not found{where}", hint)
        return argv

    def workdir_for(self, config: TenantConfig) -> Path:
        """The agent's working directory (``kernel.workdir``, else the home directory)."""
        raw = config.kernel.workdir
        path = Path(raw).expanduser() if raw else Path(self.env.get("HOME") or Path.home())
        if not path.is_dir():
            raise ConfigError(
                f"tenant {config.tenant_id}: kernel.workdir {str(path)!r} is not a directory",
                "create it or fix kernel.workdir with `nika setup kernel`",
            )
        return path

    def _session_env(self, config: TenantConfig) -> dict[str, str]:
        out: dict[str, str] = {}
        for key in NIKA_LOCATION_VARS:
            if self.env.get(key):
                out[key] = self.env[key]
        url = self.env.get("REDIS_URL")
        if url and urlparse(url).password is None:
            out["REDIS_URL"] = url
        for key, value in config.kernel.env.items():
            if not _ENV_NAME.fullmatch(key):
                raise ConfigError(
                    f"tenant {config.tenant_id}: kernel.env has an invalid variable name {key!r}",
                    "use letters, digits and '_' (not starting with a digit)",
                )
            out[key] = value
        # Ours win over kernel.env: isolation and the 61% threshold are not optional.
        out["NIKA_TENANT_ID"] = config.tenant_id
        out["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = AUTOCOMPACT_PCT
        return out

    def session_environment(self, config: TenantConfig) -> dict[str, str]:
        """Variables set in the tmux session environment (``new-session -e``) for a tenant."""
        out = self._session_env(config)
        out.update(agent_home_env(config.tenant_id, self.env))
        return out

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
        config = load_tenant(tenant_id, self.env)
        name = session_name(tenant_id)
        if self._session(name) is not None:
            self._check_owner(tenant_id, name)
            pane = self._pane(name)
            if pane is not None and pane.pane_dead != "1":
                return SpawnResult(
                    tenant_id,
                    name,
                    spawned=False,
                    message=f"kernel {tenant_id} is already running (tmux session {name}); "
                    f"attach with `nika kernel attach {tenant_id}`",
                    pid=int(pane.pane_pid) if pane.pane_pid else None,
                )
            self._kill(name)  # ours, with a dead pane: replace it
        argv = self.command_for(config)
        workdir = self.workdir_for(config)
        environment = self.session_environment(config)
        self._install_hooks(config)
        started = time.monotonic()
        self._create_session(tenant_id, name, workdir, environment, argv)
        pane = self._pane(name)
        pid = int(pane.pane_pid) if pane is not None and pane.pane_pid else None
        now = self._now()
        kernel_store.start_kernel(
            self.redis,
            tenant_id,
            cli=config.agent_cli.value,
            session=name,
            pid=pid,
            now=now,
            heartbeat_ttl_s=self.heartbeat_ttl_s,
        )
        ttfl = self._wait_first_output(tenant_id, name, config, argv, started) if wait else None
        agent_pid = self._agent_pid(pid)
        if agent_pid != pid:
            self.redis.hset(redis_keys.kernel_state(tenant_id), "pid", str(agent_pid))
            pid = agent_pid
        self._bus(
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

    @staticmethod
    def _agent_pid(shim_pid: int | None) -> int | None:
        """The agent's pid: the child of our ``/bin/sh`` shim (Linux ``/proc``), else the shim's.

        The shim forks the agent at once; once the agent has printed, the child exists.
        """
        if shim_pid is None:
            return None
        try:
            children = Path(f"/proc/{shim_pid}/task/{shim_pid}/children").read_text().split()
        except OSError:
            return shim_pid
        return int(children[0]) if children else shim_pid

    def _check_owner(self, tenant_id: str, name: str) -> None:
        owner = self._owner(name)
        if owner != tenant_id:
            raise KernelError(
                f"a tmux session named {name} already exists on socket {self.socket} "
                "and was not started by nika",
                f"rename or close it (`tmux -L {self.socket} kill-session -t ={name}`) "
                "and spawn again",
            )

    def _install_hooks(self, config: TenantConfig) -> None:
        """Install the agent hooks into the tenant's agent settings, when that module exists.

        The installer belongs to the hooks package (:data:`HOOK_INSTALLER`); it is looked up by
        name so that kernels keep working on their own while it is absent.
        """
        module_name, _, func_name = HOOK_INSTALLER.rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError:
            return
        install = getattr(module, func_name, None)
        if callable(install):
            install(config, self.env)

    def _wait_first_output(
        self, tenant_id: str, name: str, config: TenantConfig, argv: list[str], started: float
    ) -> float | None:
        deadline = started + self.first_output_timeout_s
        while time.monotonic() < deadline:
            pane = self._pane(name)
            if pane is None or pane.pane_dead == "1":
                reason = self._record_exit(tenant_id, name, pane, during_spawn=True)
                raise KernelError(
                    f"kernel {tenant_id}: the agent exited at once ({reason})",
                    f"run it by hand to see why: {shlex.join(argv)}",
                )
            text = self._visible(pane)
            if text.strip():
                ttfl = time.monotonic() - started
                kernel_store.record_pod_ttfl(self.redis, tenant_id, ttfl)
                self._classify(tenant_id, config.agent_cli.value, text)
                return ttfl
            time.sleep(0.005)
        return None

    def _visible(self, pane: libtmux.Pane) -> str:
        try:
            lines = pane.capture_pane() or []
        except tmux_exc.LibTmuxException:
            return ""
        return "\n".join(lines)

    def _history_tail(self, pane: libtmux.Pane, lines: int) -> list[str]:
        try:
            raw = pane.capture_pane(start=-max(lines, 1) - PANE_HEIGHT) or []
        except tmux_exc.LibTmuxException:
            return []
        kept = [line.rstrip() for line in raw if line.strip()]
        return kept[-lines:]

    def _dead_status(self, name: str, pane: libtmux.Pane, tail: builtins.list[str]) -> str:
        """The exit status of a dead pane: our ``[exited N]`` line, else tmux's, else "?"."""
        for line in reversed(tail):
            mark = _EXIT_MARK.match(line.strip())
            if mark:
                return mark.group(1)
        # tmux learns the status when it reaps the child, a moment after the pane closed.
        deadline = time.monotonic() + 0.3
        current: libtmux.Pane | None = pane
        while current is not None and not current.pane_dead_status:
            if time.monotonic() > deadline:
                break
            time.sleep(0.01)
            current = self._pane(name)
        return (current.pane_dead_status if current is not None else None) or "?"

    def _record_exit(
        self, tenant_id: str, name: str, pane: libtmux.Pane | None, during_spawn: bool = False
    ) -> str:
        """Record why the agent is gone, remove its session and return the reason."""
        if pane is None:
            reason = "the tmux session is gone"
            state = KernelState.EXITED
        else:
            tail = self._history_tail(pane, 8)
            status = self._dead_status(name, pane, tail)
            last = [
                ln for ln in tail if not ln.startswith("Pane is dead") and not _EXIT_MARK.match(ln)
            ]
            said = f": {last[-1]}" if last else ""
            reason = f"exited with status {status}{said}"
            state = (
                KernelState.ERROR
                if during_spawn or status not in ("0", "?")
                else KernelState.EXITED
            )
            self._kill(name)
        kernel_store.set_state(
            self.redis, tenant_id, state, StateSource.MANAGER, self._now(), event="exit",
            reason=reason,
        )  # fmt: skip
        kernel_store.clear_heartbeat(self.redis, tenant_id)
        self._bus(
            tenant_id, "kernel.event", {"action": "exit", "state": state.value, "reason": reason}
        )
        return reason

    def _kill(self, name: str) -> None:
        session = self._session(name)
        if session is None:
            return
        try:
            session.kill()
        except tmux_exc.LibTmuxException as error:
            if self._session(name) is not None:
                raise _tmux_error("kill the session", error) from error

    def _classify(self, tenant_id: str, cli: str, text: str) -> KernelState | None:
        state = classify_pane(cli, text)
        if state is None:
            return None
        fields = kernel_store.read_fields(self.redis, tenant_id)
        if fields.get("state") != state.value or fields.get("state_source") != StateSource.PANE:
            kernel_store.set_state(self.redis, tenant_id, state, StateSource.PANE, self._now())
        return state

    def poll(self, tenant_id: str) -> KernelStatus | None:
        """Watch one kernel once: heartbeat, pane fallback, exit detection.

        While the session lives its heartbeat is refreshed; when no hook decided the state
        recently, the pane is captured and classified. A dead pane or a missing session marks
        the kernel exited (or error, with the exit status and last line as the reason).

        Returns:
            The kernel's status, or None when the tenant never had a kernel.
        """
        check_tenant_id(tenant_id)
        name = session_name(tenant_id)
        fields = kernel_store.read_fields(self.redis, tenant_id)
        session = self._session(name)
        ours = session is not None and self._owner(name) == tenant_id
        if not ours:
            if fields.get("state") in {s.value for s in LIVE_STATES}:
                self._record_exit(tenant_id, name, None)
            return kernel_store.read_status(self.redis, tenant_id, self._now())
        pane = self._pane(name)
        if pane is None or pane.pane_dead == "1":
            self._record_exit(tenant_id, name, pane)
            return kernel_store.read_status(self.redis, tenant_id, self._now())
        now = self._now()
        kernel_store.heartbeat(self.redis, tenant_id, now, self.heartbeat_ttl_s)
        if not fields.get("state"):
            # A session of ours that Redis forgot (flushed): adopt it.
            kernel_store.start_kernel(
                self.redis, tenant_id, cli="", session=name,
                pid=int(pane.pane_pid) if pane.pane_pid else None, now=now,
                heartbeat_ttl_s=self.heartbeat_ttl_s,
            )  # fmt: skip
            self.redis.hdel(redis_keys.kernel_state(tenant_id), "spawned_epoch")
            fields = kernel_store.read_fields(self.redis, tenant_id)
        text = self._visible(pane)
        # The agent may have died between listing the pane and capturing it: the screen then
        # shows tmux's "Pane is dead" line. Look again so the exit status becomes the reason.
        after = self._pane(name)
        if after is None or after.pane_dead == "1":
            self._record_exit(tenant_id, name, after)
            return kernel_store.read_status(self.redis, tenant_id, self._now())
        if not fields.get("pod_ttfl_s") and fields.get("spawned_epoch") and text.strip():
            # Spawned without waiting: the first poll that sees output records pod_ttfl.
            kernel_store.record_pod_ttfl(
                self.redis,
                tenant_id,
                max(0.0, now.timestamp() - float(fields["spawned_epoch"])),
            )
        if not kernel_store.hook_state_is_fresh(fields, now, self.hook_fresh_s):
            self._classify(tenant_id, fields.get("cli") or "shell", text)
        return kernel_store.read_status(self.redis, tenant_id, self._now())

    def known_tenants(self) -> list[str]:
        """Configured tenants plus tenants with a nika session on the socket, sorted."""
        ids = set(list_tenant_ids(self.env))
        try:
            sessions = list(self.server.sessions)
        except tmux_exc.LibTmuxException:
            sessions = []
        for session in sessions:
            name = session.session_name or ""
            if name.startswith(SESSION_PREFIX):
                ids.add(name.removeprefix(SESSION_PREFIX))
        return sorted(i for i in ids if re.fullmatch(r"[a-z0-9][a-z0-9-]{0,39}", i))

    def list(self) -> builtins.list[KernelStatus]:
        """Poll every known kernel and return the statuses of those that ever ran."""
        out: list[KernelStatus] = []
        for tenant_id in self.known_tenants():
            status = self.poll(tenant_id)
            if status is not None:
                out.append(status)
        return out

    def status(self, tenant_id: str) -> KernelStatus | None:
        """The stored status, without touching tmux (what the dashboard reads)."""
        return kernel_store.read_status(self.redis, tenant_id, self._now())

    def stop(self, tenant_id: str, timeout_s: float | None = None) -> StopResult:
        """Ask the agent to exit (its exit command, then C-d), then kill after a timeout.

        Returns:
            A :class:`StopResult` (``stopped`` is False when nothing was running).

        Raises:
            KernelError: the session with that name is not nika's.
        """
        check_tenant_id(tenant_id)
        name = session_name(tenant_id)
        timeout = self.stop_timeout_s if timeout_s is None else timeout_s
        if self._session(name) is None:
            self.poll(tenant_id)  # records "exited" if Redis still thought it alive
            return StopResult(tenant_id, name, False, False, f"kernel {tenant_id} is not running")
        self._check_owner(tenant_id, name)
        fields = kernel_store.read_fields(self.redis, tenant_id)
        spec = spec_for(fields.get("cli") or "shell")
        forced = False
        pane = self._pane(name)
        if pane is not None and pane.pane_dead != "1":
            if spec.exit_command:
                self._send_text(pane, spec.exit_command)
            if not self._wait_gone(name, timeout / 2):
                pane.send_keys("C-d", enter=False)
                if not self._wait_gone(name, timeout / 2):
                    forced = True
        self._kill(name)
        how = f"killed after {timeout:g}s" if forced else "exited on request"
        kernel_store.set_state(
            self.redis, tenant_id, KernelState.EXITED, StateSource.MANAGER, self._now(),
            event="stop", reason=f"stopped by nika ({how})",
        )  # fmt: skip
        kernel_store.clear_heartbeat(self.redis, tenant_id)
        self._bus(tenant_id, "kernel.event", {"action": "stop", "session": name, "forced": forced})
        return StopResult(tenant_id, name, True, forced, f"kernel {tenant_id} stopped ({how})")

    def _wait_gone(self, name: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pane = self._pane(name)
            if pane is None or pane.pane_dead == "1":
                return True
            time.sleep(0.05)
        return False

    def restart(self, tenant_id: str) -> RestartResult:
        """Stop then spawn again. Memory is untouched (it lives in the stores, not the kernel).

        Recall is re-injected by the CLI's SessionStart hook where it has one (Claude Code);
        for the others the result says so, and recall stays available through MCP and
        ``nika memory recall``.
        """
        stopped = self.stop(tenant_id)
        spawned = self.spawn(tenant_id)
        cli = load_tenant(tenant_id, self.env).agent_cli
        if spec_for(cli).session_start_hook:
            recall = "re-injected by the SessionStart hook"
        else:
            recall = (
                f"{cli.value} has no SessionStart hook: recall is available through the MCP "
                "tools and `nika memory recall`"
            )
        self._bus(tenant_id, "kernel.event", {"action": "restart", "recall": recall})
        return RestartResult(stop=stopped, spawn=spawned, recall=recall)

    def attach_command(self, tenant_id: str) -> builtins.list[str]:
        """The argv that attaches a terminal to the tenant's kernel."""
        check_tenant_id(tenant_id)
        tmux_bin = shutil.which("tmux", path=self.env.get("PATH")) or "tmux"
        return [tmux_bin, "-L", self.socket, "attach-session", "-t", f"={session_name(tenant_id)}"]

    def is_running(self, tenant_id: str) -> bool:
        """True when the tenant's session exists, is ours, and its agent is alive."""
        name = session_name(tenant_id)
        if self._session(name) is None or self._owner(name) != tenant_id:
            return False
        pane = self._pane(name)
        return pane is not None and pane.pane_dead != "1"

    def capture(self, tenant_id: str, lines: int = 50) -> str:
        """The last ``lines`` non-empty lines of the kernel's pane (history included)."""
        pane = self._pane(session_name(tenant_id))
        if pane is None:
            raise KernelError(
                f"kernel {tenant_id} is not running",
                f"start it with `nika kernel spawn {tenant_id}`",
            )
        return "\n".join(self._history_tail(pane, lines))

    def screen(self, tenant_id: str) -> str:
        """The visible screen of the kernel's pane."""
        pane = self._pane(session_name(tenant_id))
        return "" if pane is None else self._visible(pane)

    # --- input and compaction -------------------------------------------------------------------
    def _send_text(self, pane: libtmux.Pane, text: str) -> None:
        # -l sends the text literally (no key-name lookup), then Enter on its own.
        try:
            pane.send_keys(text, enter=True, literal=True)
        except tmux_exc.LibTmuxException as error:
            raise _tmux_error("send keys", error) from error

    def send_text(self, tenant_id: str, text: str) -> None:
        """Type one line into the kernel (then Enter)."""
        name = session_name(tenant_id)
        if not self.is_running(tenant_id):
            raise KernelError(
                f"kernel {tenant_id} is not running",
                f"start it with `nika kernel spawn {tenant_id}`",
            )
        pane = self._pane(name)
        assert pane is not None  # is_running checked it
        self._send_text(pane, text)

    def send_compact(
        self, tenant_id: str, trigger: str = "nika-confirmed", fill_percent: float | None = None
    ) -> str:
        """Type the CLI's compact command into the kernel; return the command sent.

        Also what the dashboard calls when a human approves a ``compact`` confirmation. The
        compaction is recorded in the tenant's ``compactions`` stream with ``trigger``.
        """
        fields = kernel_store.read_fields(self.redis, tenant_id)
        cli = fields.get("cli") or load_tenant(tenant_id, self.env).agent_cli.value
        command = spec_for(cli).compact_command
        if command is None:
            raise KernelError(f"{cli} has no compact command", "compact it by hand in the pane")
        self.send_text(tenant_id, command)
        now = self._now()
        kernel_store.mark_compact_requested(self.redis, tenant_id, now)
        kernel_store.record_compaction(self.redis, tenant_id, now, trigger, fill_percent)
        self._bus(tenant_id, "kernel.event", {"action": "compact", "command": command})
        return command

    def apply_compaction_policy(self, tenant_id: str, fill_percent: float) -> CompactionDecision:
        """Run the 61% policy for one kernel (CLIs without a native threshold).

        ``autonomous`` types the compact command, ``escalate`` queues one confirmation (never
        two pending at once) in the ``confirmations`` hash and on the bus, ``off`` does nothing.

        Returns:
            The :class:`CompactionDecision` taken.
        """
        config = load_tenant(tenant_id, self.env)
        status = self.poll(tenant_id)
        state = status.state if status is not None else KernelState.EXITED
        now = self._now()
        decision = decide_compaction(
            fill_percent,
            state,
            config.agent_cli,
            config.auto_actions.compact,
            now,
            kernel_store.compact_requested_at(self.redis, tenant_id),
        )
        if decision.action is CompactionAction.SEND_COMPACT:
            self.send_compact(tenant_id, "nika-autonomous", fill_percent)
        elif decision.action is CompactionAction.REQUEST_CONFIRMATION:
            if kernel_store.pending_confirmation(self.redis, tenant_id, "compact") is None:
                item = kernel_store.queue_confirmation(
                    self.redis,
                    tenant_id,
                    "compact",
                    f"Compact {tenant_id}'s context ({fill_percent:.0f}% full)?",
                    f"{decision.reason} The kernel will receive {decision.command}.",
                    now,
                )
                self._bus(tenant_id, "confirmation.requested", item)
            kernel_store.mark_compact_requested(self.redis, tenant_id, now)
        return decision
