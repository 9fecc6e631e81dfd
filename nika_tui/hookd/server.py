"""The hook server: everything a hook needs imported once, one forked child per hook run.

``python -m nika_tui.hookd.server SOCKET`` (started by :mod:`nika_tui.hookd.client` when no
server answers). It listens on a unix socket (0600, in a 0700 directory; a peer of another uid
is refused), holds a lock so that only one server serves a socket, and for each connection
forks: the child takes the client's environment and working directory, runs
:func:`~nika_tui.hooks.dispatch.run_hook` — the same code as an in-process run, with its own
time budget (SIGALRM works: the child is single-threaded) and its own Redis connection — sends
the answer back as soon as it is known, finishes the run's deferred work and exits. The parent
never runs a hook and never opens a connection, so a child starts from the same clean state
every time.

It exits after ``NIKA_HOOKD_IDLE_S`` seconds without a run (600 by default), when its socket
file is removed or replaced, and when a ``nika_tui`` source file it loaded has changed since
(that client then runs in-process and starts a fresh server).
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path

from nika_tui.hookd.client import (
    MAX_PAYLOAD_BYTES,
    OK,
    STALE,
    decode_env,
    recv_frame,
    send_frame,
)
from nika_tui.paths import FILE_MODE, ensure_private_dir

DEFAULT_IDLE_S = 600.0
REQUEST_TIMEOUT_S = 5.0


def _preload() -> None:
    # Every module a hook run may import, so that a child imports nothing; the deferred work
    # of a run too (billing, the spool, relevance labels): imported in each child, they cost
    # tens of ms of CPU after the answer, beside the agent's next hook. sqlite3: OpenCode's
    # handoff reads its sessions database (imported lazily by the in-process path).
    import sqlite3  # noqa: F401

    from nika_tui.billing import hooks as _billing  # noqa: F401
    from nika_tui.hooks import (  # noqa: F401
        claude,
        codex,
        common,
        dispatch,
        gemini,
        handoff,
        inject,
        opencode,
    )
    from nika_tui.services import (  # noqa: F401
        bus,
        hook_spool,
        kernel_store,
        memory_client,
        relevance_log,
        used_hits,
        wm_store,
    )

    _ = dispatch.run_hook


def _sources() -> dict[str, float]:
    package = Path(__file__).resolve().parents[1]
    out: dict[str, float] = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path and path.startswith(str(package)):
            with contextlib.suppress(OSError):
                out[path] = os.stat(path).st_mtime
    return out


def _changed(sources: dict[str, float]) -> bool:
    for path, mtime in sources.items():
        try:
            if os.stat(path).st_mtime != mtime:
                return True
        except OSError:
            return True
    return False


def _same_socket(path: Path, inode: int) -> bool:
    try:
        return path.stat().st_ino == inode
    except OSError:
        return False


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def _child(conn: socket.socket) -> None:
    """Run one hook for the connected client (in the forked child)."""
    conn.settimeout(REQUEST_TIMEOUT_S)
    head = recv_frame(conn, 64 * 1024)
    env_raw = recv_frame(conn, MAX_PAYLOAD_BYTES)
    body = recv_frame(conn, MAX_PAYLOAD_BYTES + 2)
    if head is None or env_raw is None or body is None:
        return
    parts = [os.fsdecode(p) for p in head.split(b"\0")]
    if len(parts) != 3:
        return
    cli, event, cwd = parts
    env = decode_env(env_raw)
    os.environ.clear()
    os.environ.update(env)
    with contextlib.suppress(OSError):
        os.chdir(cwd or "/")
    raw = body[1:] if body[:1] == OK else None
    from nika_tui.hooks.dispatch import run_hook

    def reply(output: str) -> None:
        # The client exits as soon as it has the answer; the run's deferred work goes on here,
        # even when the client is gone (a capture must not depend on it).
        with contextlib.suppress(OSError):
            send_frame(conn, OK + output.encode())
        conn.close()
        # What is left is background work: the waiting client (and the agent) get the CPU
        # first; on 2 busy cores the deferred work otherwise delays the client's own exit.
        with contextlib.suppress(OSError):
            os.nice(10)

    run_hook(cli, event, raw, env=env, reply=reply)


def serve(path: Path, idle_s: float) -> int:
    """Serve hook runs on ``path`` until idle, replaced or stale; 0 when another server holds
    the socket's lock."""
    ensure_private_dir(path.parent)
    lock_fd = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0  # another server runs (two clients started one at the same time)
    _preload()
    # Everything imported so far is never collected: a child's collector then leaves those
    # objects (and their pages, shared copy-on-write with this process) alone.
    gc.freeze()
    sources = _sources()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        listener.bind(str(path))
    finally:
        os.umask(old_umask)
    os.chmod(path, FILE_MODE)
    listener.listen(32)
    inode = path.stat().st_ino
    children: set[int] = set()
    last = time.monotonic()
    try:
        while True:
            for pid in list(children):
                with contextlib.suppress(ChildProcessError):
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        children.discard(pid)
            ready, _, _ = select.select([listener], [], [], 1.0)
            if not ready:
                idle = time.monotonic() - last > idle_s
                if (idle and not children) or not _same_socket(path, inode):
                    return 0
                continue
            conn, _ = listener.accept()
            last = time.monotonic()
            if _peer_uid(conn) != os.getuid():
                conn.close()
                continue
            if _changed(sources):
                with contextlib.suppress(OSError):
                    send_frame(conn, STALE)
                conn.close()
                return 0
            pid = os.fork()
            if pid == 0:
                gc.disable()  # a run lives for milliseconds: a collection would only cost
                listener.close()
                # The run may outlive this server (its deferred captures): its copy of the lock
                # must not keep the next server out, which would then quit at once.
                os.close(lock_fd)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                code = 0
                try:
                    _child(conn)
                except BaseException:  # noqa: BLE001 — a child never returns into the loop
                    code = 1
                finally:
                    os._exit(code)
            children.add(pid)
            conn.close()
    finally:
        if _same_socket(path, inode):
            with contextlib.suppress(OSError):
                path.unlink()
        listener.close()
        os.close(lock_fd)


def main(argv: list[str]) -> int:
    """``SOCKET``: serve until idle."""
    if len(argv) != 1:
        sys.stderr.write("usage: python -m nika_tui.hookd.server SOCKET\n")
        return 2
    from nika_tui.settings import Settings

    return serve(Path(argv[0]), Settings.from_env().hookd_idle_s)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
