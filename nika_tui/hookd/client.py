"""The lean hook entry: ``nika hook CLI EVENT`` as the agent CLIs run it, before every prompt.

A hook's own work is a few Redis round trips; what cost ~0.4 s a run was starting Python and
importing redis-py (which loads its asyncio, cluster and telemetry modules), pydantic and the
models. This module imports only the standard library and :mod:`nika_tui.paths`, then hands the
run to the hook server (:mod:`nika_tui.hookd.server`), a process that has imported everything
once and forks one child per hook run: the child runs the same
:func:`~nika_tui.hooks.dispatch.run_hook` with this process's payload, environment and working
directory, and sends back what to print.

When no server answers (first run, after an upgrade, ``NIKA_HOOKD=0``) the hook runs here,
in-process, exactly as before, and a server is started in the background for the next run.
Either way the process exits 0 and prints nothing or the hook's JSON.
"""

from __future__ import annotations

# Deliberately few and small imports: ``_socket`` (the C module, without ``socket``'s enum and
# selectors), no json (a NUL-separated wire format), no pathlib. ``python -X importtime`` shows
# what each one costs.
import _socket
import os
import struct
import sys
import zlib

# Not typing.TYPE_CHECKING: importing typing (or collections.abc) costs the hook a few ms.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
"""Same limit as :data:`nika_tui.hooks.context.MAX_PAYLOAD_BYTES` (not imported: heavy side)."""
REPLY_TIMEOUT_S = 12.0
"""Above the hook's own 8 s budget, below the 15 s the CLIs give a hook."""
MAX_SOCKET_PATH = 100
_HEADER = struct.Struct("!I")
STALE = b"S"
"""The server's one-byte answer when its code changed since it started (it then exits)."""
OK = b"\x01"
APP = "nika-os"


def server_id() -> str:
    """Which Python and which ``nika_tui`` a server runs: a client only talks to its own."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{zlib.adler32(f'{sys.executable}|{package}'.encode()):08x}"


def data_root(env: Mapping[str, str]) -> str:
    """:func:`nika_tui.paths.data_dir` without pathlib (same order: env, XDG, home)."""
    if env.get("NIKA_OS_DATA_DIR"):
        return os.path.expanduser(env["NIKA_OS_DATA_DIR"])
    if env.get("XDG_DATA_HOME"):
        return os.path.join(os.path.expanduser(env["XDG_DATA_HOME"]), APP)
    return os.path.join(os.path.expanduser("~"), ".local", "share", APP)


def socket_path(env: Mapping[str, str]) -> str:
    """``{data}/run/hookd-{id}.sock``, or a short path under ``/tmp`` when that one is too long
    for a unix socket (108 bytes on Linux)."""
    path = os.path.join(data_root(env), "run", f"hookd-{server_id()}.sock")
    if len(path) <= MAX_SOCKET_PATH:
        return path
    digest = zlib.adler32(path.encode())
    return os.path.join("/tmp", f"nika-hookd-{os.getuid()}", f"{digest:08x}-{server_id()}.sock")


def enabled(env: Mapping[str, str]) -> bool:
    """False when ``NIKA_HOOKD`` is ``0`` / ``off`` / ``false`` (every run in-process)."""
    return env.get("NIKA_HOOKD", "1").strip().lower() not in ("0", "off", "false", "no")


def encode_env(env: Mapping[str, str]) -> bytes:
    """``KEY=VALUE`` pairs separated by NUL (no variable can contain a NUL)."""
    return b"\0".join(os.fsencode(f"{k}={v}") for k, v in env.items())


def decode_env(raw: bytes) -> dict[str, str]:
    """The inverse of :func:`encode_env`."""
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = os.fsdecode(item).partition("=")
        if sep and key:
            out[key] = value
    return out


def send_frame(sock: _socket.socket, data: bytes) -> None:
    """One length-prefixed frame."""
    sock.sendall(_HEADER.pack(len(data)) + data)


def recv_frame(sock: _socket.socket, limit: int) -> bytes | None:
    """One length-prefixed frame, or None when the peer closed or sent more than ``limit``."""
    head = _recv_exact(sock, _HEADER.size)
    if head is None:
        return None
    (size,) = _HEADER.unpack(head)
    if size > limit:
        return None
    return _recv_exact(sock, size)


def _recv_exact(sock: _socket.socket, size: int) -> bytes | None:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_payload(argv: Sequence[str]) -> bytes | None:
    if len(argv) > 2:
        return argv[2].encode("utf-8", "replace")
    if sys.stdin is None or sys.stdin.isatty():
        return None
    # One byte over the limit is enough to know it is too big (run_hook refuses it).
    return sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)


def _via_server(path: str, cli: str, event: str, raw: bytes | None) -> str | None:
    """The hook's output from the server; None when no server took the run (nothing ran)."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(1.0)
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    try:
        sock.settimeout(REPLY_TIMEOUT_S)
        # Frames: cli NUL event NUL cwd, the environment, then the payload (0 = none, 1 + bytes).
        send_frame(sock, b"\0".join(os.fsencode(x) for x in (cli, event, os.getcwd())))
        send_frame(sock, encode_env(os.environ))
        send_frame(sock, b"\x00" if raw is None else OK + raw)
        reply = recv_frame(sock, MAX_PAYLOAD_BYTES)
    except OSError:
        return ""  # the server took the run and failed or timed out: print nothing
    finally:
        sock.close()
    if reply == STALE:
        return None  # its code changed: it is exiting, nothing ran
    if reply is None or reply[:1] != OK:
        return ""  # it took the run and failed: print nothing, never run it twice
    return reply[1:].decode("utf-8", "replace")


def _start_server(path: str) -> None:
    import contextlib
    import subprocess

    # On failure the next run tries again; this one still runs in-process.
    with contextlib.suppress(OSError):
        logs = os.path.join(data_root(os.environ), "logs")
        os.makedirs(logs, mode=0o700, exist_ok=True)
        # Its stderr goes to a log of its own, never to the agent's pipe (the CLI waits on it).
        err = os.open(
            os.path.join(logs, "hookd.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600
        )
        try:
            subprocess.Popen(
                [sys.executable, "-m", "nika_tui.hookd.server", path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
                close_fds=True,
            )
        finally:
            os.close(err)


def is_fast_call(argv: Sequence[str]) -> bool:
    """True for ``hook CLI EVENT [PAYLOAD]`` without options (``--help`` goes to argparse)."""
    return (
        len(argv) in (3, 4) and argv[0] == "hook" and not any(a.startswith("-") for a in argv[1:3])
    )


def main(argv: Sequence[str]) -> int:
    """``CLI EVENT [PAYLOAD]``: run one hook; print its output. Always returns 0."""
    if len(argv) < 2:
        sys.stderr.write("usage: nika hook CLI EVENT [PAYLOAD]\n")
        return 0
    cli, event = argv[0], argv[1]
    raw = _read_payload(argv)
    output: str | None = None
    if enabled(os.environ):
        path = socket_path(os.environ)
        output = _via_server(path, cli, event, raw)
        if output is None:
            _start_server(path)
    if output is None:
        from nika_tui.hooks.dispatch import run_hook

        output = run_hook(cli, event, raw)
    if output:
        sys.stdout.write(output + "\n")
        sys.stdout.flush()
    return 0
