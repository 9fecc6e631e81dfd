"""``nika serve | up | down``: the memory service process.

- ``serve`` runs the service in the foreground (loads the embedder, opens the vector store).
- ``up`` makes sure the embedded Redis runs, then starts ``nika serve`` in the tmux session
  ``nika-core`` on the project's socket (``tmux -L $NIKA_TMUX_SOCKET``) and waits until its
  heartbeat appears; an already running service is reused.
- ``down`` stops the service (SIGTERM: it finishes the current entry; nothing is lost) and, with
  ``--redis``, the embedded Redis too.

Environment handoff: the tmux server may be older than this shell, so ``up`` writes the nika
variables to a 0600 file that ``serve --env-file`` reads and deletes at once; nothing (such as
a password inside ``REDIS_URL``) appears on a tmux or process command line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.errors import NikaError, ServiceNotRunning
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir, roots
from nika_tui.settings import Settings

if TYPE_CHECKING:
    from nika_tui.domain.ports import Embedder
    from nika_tui.services.embed_process import ProcessEmbedder

SESSION = "nika-core"
UP_TIMEOUT_S = 120.0
DOWN_TIMEOUT_S = 10.0
"""Seconds ``down`` waits after SIGTERM before SIGKILL (safe: nothing unflushed is acked)."""
_HANDOFF_PREFIXES = ("NIKA_", "QDRANT_", "HF_", "XDG_CONFIG_HOME", "XDG_DATA_HOME")
_HANDOFF_KEYS = ("REDIS_URL", "TRANSFORMERS_OFFLINE")


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika serve``, ``nika up`` and ``nika down``."""
    serve = sub.add_parser("serve", help="run the memory service in the foreground")
    serve.add_argument("--env-file", default=None, help=argparse.SUPPRESS)
    serve.add_argument(
        "--join", metavar="REDIS_URL", default=None,
        help="run as a worker on this Redis (password: NIKA_REDIS_PASSWORD_FILE)",
    )  # fmt: skip
    serve.add_argument("--worker-id", default=None, help="worker name (default: host + data dir)")
    add_json_flag(serve)
    serve.set_defaults(handler=serve_cmd)

    up = sub.add_parser("up", help="start Redis and the memory service (tmux session nika-core)")
    up.add_argument("--timeout", type=float, default=UP_TIMEOUT_S, help="seconds to wait")
    up.add_argument(
        "--repair-aof",
        action="store_true",
        help="repair a corrupt embedded-Redis AOF first (truncates after the damage, keeps a copy)",
    )
    add_json_flag(up)
    up.set_defaults(handler=up_cmd)

    down = sub.add_parser("down", help="stop the memory service")
    down.add_argument("--redis", action="store_true", help="also stop the embedded Redis")
    add_json_flag(down)
    down.set_defaults(handler=down_cmd)


def log_path(where: Roots | None = None) -> Path:
    """The service's log file, under ``where``'s data root (None: that of ``os.environ``)."""
    return (where or roots()).data / "logs" / "service.log"


# --- serve ------------------------------------------------------------------------------------
def _load_env_file(path: str) -> None:
    file = Path(path)
    try:
        values = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise NikaError(
            f"cannot read the environment handoff {path}", "run `nika up` again"
        ) from exc
    finally:
        file.unlink(missing_ok=True)
    if isinstance(values, dict):
        os.environ.update({str(k): str(v) for k, v in values.items()})


def _setup_logging(where: Roots) -> None:
    path = log_path(where)
    ensure_private_dir(path.parent)
    path.touch(mode=FILE_MODE, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("nika")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    root.addHandler(logging.StreamHandler(sys.stderr))


def serve_cmd(args: argparse.Namespace) -> int:
    """Run the service until SIGTERM / SIGINT."""
    if args.env_file:
        _load_env_file(args.env_file)
    settings = Settings.from_env()  # once, after the env file: passed to all that reads a knob
    _setup_logging(settings.roots)
    from nika_tui.engine.builder import build_context
    from nika_tui.engine.server.loop import MemoryService
    from nika_tui.engine.worker import Worker
    from nika_tui.engine.worker_keys import PRIMARY_ID, default_worker_id
    from nika_tui.scale.workers import join_url, lease_ttl

    if args.join:
        url = join_url(args.join, settings)
        os.environ["REDIS_URL"] = url  # what this worker's children inherit, as before
        settings = settings.with_redis_url(url)
    worker_id = args.worker_id or (
        default_worker_id(settings.data_root) if args.join else PRIMARY_ID
    )
    ttl = lease_ttl(settings)
    ctx = build_context(settings=settings, fast_start=True)
    host = settings.worker_host or None
    worker = Worker(ctx.redis, worker_id, settings.data_root, ctx.vectors, ttl_s=ttl, host=host)
    # The ingest embeds in a child process (decision 583): its forward passes then leave the
    # readers the GIL. Not with an HTTP embedder: there the model is already elsewhere.
    children: list[ProcessEmbedder] = []
    if settings.embed_process and not settings.embeddings_url:
        from nika_tui.services.embed_process import ProcessEmbedder

        def _ingest_embedder(door: Embedder) -> Embedder:
            children.append(ProcessEmbedder(door, threads=settings.embed_threads))
            return children[-1]

        service = MemoryService(ctx, worker=worker, bulk_embedder=_ingest_embedder)
    else:
        service = MemoryService(ctx, worker=worker)
    service.check_single()  # before the loop; the model is loaded by now, the check is cheap
    # Heartbeats, pane fallback and the 61% policy need a periodic look at every kernel;
    # the service is the one long-lived process, so it carries that loop on its own thread.
    # A joined worker runs on a host without the installation's kernels: it does not.
    watch_s = settings.kernel_watch_s
    watcher = None
    if watch_s > 0 and not args.join:
        from nika_tui.engine.kernel_watch import KernelWatcher

        watcher = KernelWatcher(settings, interval_s=watch_s)
        watcher.start()

    def _stop(signum: int, frame: object) -> None:
        service.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        service.run()
    finally:
        if watcher is not None:
            watcher.stop()
        for child in children:
            child.close()
        ctx.vectors.close()
    if args.json:
        print_json({"stopped": True, "ingested": service.processed})
    return 0


# --- up / down --------------------------------------------------------------------------------
def _tmux(socket: str, *argv: str) -> subprocess.CompletedProcess[str]:
    from nika_tui.services.tmux_env import server_environment

    # This may start nika's tmux server: only allow-listed variables, or every kernel would
    # inherit this shell's secrets; the service's own variables travel in the handoff file.
    return subprocess.run(
        ["tmux", "-L", socket, *argv],
        capture_output=True,
        text=True,
        check=False,
        env=server_environment(os.environ),
    )


def _session_exists(socket: str) -> bool:
    return _tmux(socket, "has-session", "-t", f"={SESSION}").returncode == 0


def kernels_running(socket: str) -> list[str]:
    """Tenants whose kernel session (``nika-tenant-{t}``) is still up on nika's tmux server.

    ``nika down`` stops the service only: kernels are the person's agents, possibly mid-task,
    so they keep running and ``down`` says so instead of leaving them unmentioned.
    """
    proc = _tmux(socket, "list-sessions", "-F", "#{session_name}")
    prefix = "nika-tenant-"
    return sorted(n[len(prefix) :] for n in proc.stdout.split() if n.startswith(prefix))


def _session_alive(socket: str) -> bool:
    """True when ``nika-core``'s pane still runs a live process (a service starting up)."""
    from nika_tui.services.liveness import process_alive

    proc = _tmux(socket, "list-panes", "-t", f"={SESSION}", "-F", "#{pane_dead} #{pane_pid}")
    for line in proc.stdout.splitlines():
        dead, _, pid = line.partition(" ")
        if dead != "1" and pid.isdigit() and process_alive(int(pid)):
            return True
    return False


def _write_handoff(where: Roots) -> Path:
    values = {
        k: v for k, v in os.environ.items() if k.startswith(_HANDOFF_PREFIXES) or k in _HANDOFF_KEYS
    }
    root = ensure_private_dir(where.data / "run")
    path = root / f"serve-env-{uuid.uuid4().hex[:8]}.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(values, fh)
    return path


def _log_tail(where: Roots, lines: int = 5) -> str:
    try:
        text = log_path(where).read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


def up_cmd(args: argparse.Namespace) -> int:
    """Start (or reuse) Redis and the service; wait for the heartbeat."""
    from nika_tui.services.memory_client import MemoryClient

    settings = settings_of(args)
    where, socket = settings.roots, settings.tmux_socket
    if getattr(args, "repair_aof", False):
        from nika_tui.services.redis_server import repair_aof

        print(repair_aof(where), file=sys.stderr)
    client = MemoryClient.open(settings, start_redis=True)
    from nika_tui.paths import tighten_modes
    from nika_tui.services.hook_spool import replay_all

    for root in (where.config, where.data):
        tighten_modes(root)  # files of an earlier version, or copied in with 0644
    replayed = replay_all(client, where)  # hooks' writes spooled while Redis was down
    if replayed and not args.json:
        print(f"replayed spooled hook writes: {replayed}", file=sys.stderr)
    # Live by pid, not only by heartbeat: a kill -9'd service's key outlives it by its TTL.
    info = client.service_info()
    started = False
    if info is None:
        if _session_exists(socket) and not _session_alive(socket):
            _tmux(socket, "kill-session", "-t", f"={SESSION}")  # a dead service's leftover session
        if not _session_exists(socket):
            handoff = _write_handoff(where)
            cmd = [sys.executable, "-m", "nika_tui", "serve", "--env-file", str(handoff)]
            proc = _tmux(socket, "new-session", "-d", "-s", SESSION, "-x", "160", "-y", "40", *cmd)
            if proc.returncode != 0:
                handoff.unlink(missing_ok=True)
                raise NikaError(
                    f"tmux could not start the session {SESSION}: {proc.stderr.strip()}",
                    "check that tmux is installed (`nika doctor`)",
                )
            started = True
        deadline = time.monotonic() + args.timeout
        while (info := client.service_info()) is None:
            if time.monotonic() > deadline or not _session_exists(socket):
                raise ServiceNotRunning(
                    "the memory service did not start",
                    f"see {log_path(where)} ({_log_tail(where) or 'empty'})",
                )
            time.sleep(0.1)
    out = {"running": True, "started": started, "session": SESSION, **info}
    if args.json:
        print_json(out)
    else:
        verb = "started" if started else "already running"
        print(
            f"memory service {verb} (pid {info.get('pid')}, tmux -L {socket} attach -t {SESSION})"
        )
    return 0


def down_cmd(args: argparse.Namespace) -> int:
    """Stop the service (and the embedded Redis with ``--redis``)."""
    from nika_tui.services.liveness import process_alive as pid_alive
    from nika_tui.services.liveness import reap
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.services.redis_server import embedded_running, stop_embedded

    settings = settings_of(args)
    where, socket = settings.roots, settings.tmux_socket
    stopped = False
    signalled = False
    try:
        client: MemoryClient | None = MemoryClient.open(settings_of(args))
    except NikaError:  # Redis is down: no heartbeat to read, the session may still exist
        client = None
    info = client.service_info() if client is not None else None
    if info is not None:
        pid = int(info.get("pid", 0))
        if pid and pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            signalled = True
            deadline = time.monotonic() + DOWN_TIMEOUT_S
            while pid_alive(pid) and time.monotonic() < deadline:
                reap(pid)  # our own child (tests, scripts) would otherwise stay a zombie
                time.sleep(0.05)
            if pid_alive(pid):
                # Stuck past the deadline: SIGKILL loses nothing (entries are acknowledged
                # only after their flush; the rest stay pending and are replayed).
                os.kill(pid, signal.SIGKILL)
                retry_deadline = time.monotonic() + 5
                while pid_alive(pid) and time.monotonic() < retry_deadline:
                    reap(pid)
                    time.sleep(0.02)
            stopped = not pid_alive(pid)
    if _session_exists(socket):
        _tmux(socket, "kill-session", "-t", f"={SESSION}")
        stopped = True
    redis_stopped = stop_embedded(where) if args.redis else False
    kernels = kernels_running(socket)
    if args.json:
        print_json(
            {
                "stopped": stopped,
                "stopping": signalled and not stopped,
                "redis_stopped": redis_stopped,
                "kernels_running": kernels,
            }
        )
    else:
        if stopped:
            print("memory service stopped")
        elif signalled:
            # It finishes the entry in hand and flushes before exiting; nothing is lost.
            print(f"memory service is stopping (pid {info.get('pid') if info else '?'})")
        else:
            print("memory service was not running")
        if redis_stopped:
            print("embedded Redis stopped")
        elif not args.redis and embedded_running(where):
            print("embedded Redis keeps running — stop it with `nika down --redis`")
        if kernels:
            print(
                f"{len(kernels)} kernel(s) keep running: {', '.join(kernels)} — "
                "stop one with `nika kernel stop TENANT`"
            )
    return 0
