"""A tenant's Edge shards carried between workers on different hosts, through Redis.

Workers on one host copy a tenant's shard directory from the previous holder's data dir
(:meth:`Worker._adopt_shards`). Across hosts there is no shared filesystem, but there is the one
Redis every worker joined: the holder that gives a tenant up (a move, a stop) while a worker on
another host is live flushes and closes the tenant's shards, packs the directory (zlib, holes
kept as holes), and publishes it under ``nika:shards:{tenant}`` *before* it releases the
lease. The next holder, on acquiring, unpacks the pack whose ``from`` is the tenant's home
worker (the last holder), checks its SHA-256 and size, swaps the directory in and deletes the pack.

Why Redis and not HTTP between workers: Redis is already authenticated and reachable from
every worker (it is how they joined), so no worker opens a port. The cost is that Redis holds
the pack until it is adopted (its AOF too); a tenant larger than :data:`MAX_PACK_BYTES` is not
packed (the log says so) and needs ``QDRANT_URL``. A worker that *dies* publishes nothing:
its tenants' shards stay on its host until it comes back (see decisions 132, 240).

A pack is tied to its holder: ``from`` must be the tenant's home (``nika:lease:home:{t}``), so
an old pack of an earlier move is never adopted over newer writes.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import uuid
import zlib
from pathlib import Path
from typing import Any

import redis

from nika_tui.errors import StoreUnavailable
from nika_tui.services.redis_keys import PREFIX

log = logging.getLogger("nika.worker")

CHUNK_BYTES = 4 * 1024 * 1024
"""One list element per chunk: Redis's own limit is 512 MB, but big values block its loop."""
MAX_PACK_BYTES = 1024 * 1024 * 1024
"""Packs above this stay local (a GB through Redis is where a shared Qdrant is the answer)."""
PACK_TTL_S = 7 * 86400
"""A pack nobody adopted within a week is dropped (the releasing worker still has the shards)."""


def pack_key(tenant_id: str) -> str:
    """The pack's metadata (``from``, ``host``, ``sha256``, ``size``, ``chunks``)."""
    return f"{PREFIX}:shards:{tenant_id}"


def data_key(tenant_id: str) -> str:
    """The pack's bytes, a list of chunks."""
    return f"{PREFIX}:shards:{tenant_id}:data"


def binary_client(r: redis.Redis) -> redis.Redis:
    """A client on the same server that returns bytes (the workers' clients decode to str)."""
    pool = r.connection_pool
    kwargs: dict[str, Any] = {**pool.connection_kwargs, "decode_responses": False}
    return redis.Redis(
        connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
    )


def _extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The data extents of a file: Edge preallocates 32 MB WAL and mmap files that are mostly
    holes (214 MB apparent, 0.7 MB real for a 60-point shard), so holes are not copied."""
    if not hasattr(os, "SEEK_DATA"):
        return [(0, size)] if size else []
    out: list[tuple[int, int]] = []
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                break  # only a hole is left
            raise
        end = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, end - start))
        offset = end
    return out


def pack_dir(src: Path, out: Any) -> None:
    """Write ``src`` (directories, regular files, holes kept as holes) as one zlib stream.

    Each entry is a 4-byte length, a JSON header (``path`` relative to ``src``, ``dir`` or
    ``file``, ``size``, ``extents``) and the extents' bytes.
    """
    z = zlib.compressobj(1)
    for path in sorted([src, *src.rglob("*")]):
        rel = path.relative_to(src).as_posix()
        if path.is_symlink() or not (path.is_dir() or path.is_file()):
            continue  # Edge writes neither; a link could point out of the tree
        if path.is_dir():
            header: dict[str, Any] = {"path": rel, "dir": True}
            out.write(z.compress(_frame(header)))
            continue
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            extents = _extents(fh.fileno(), size)
            out.write(z.compress(_frame({"path": rel, "size": size, "extents": extents})))
            for start, length in extents:
                fh.seek(start)
                left = length
                while left:
                    chunk = fh.read(min(left, CHUNK_BYTES))
                    if not chunk:
                        raise OSError(f"{path} shrank while it was packed")
                    out.write(z.compress(chunk))
                    left -= len(chunk)
    out.write(z.flush())


def _frame(header: dict[str, Any]) -> bytes:
    body = json.dumps(header).encode()
    return len(body).to_bytes(4, "big") + body


def unpack_dir(data: bytes, dst: Path) -> None:
    """Recreate what :func:`pack_dir` wrote under ``dst`` (an empty directory).

    Raises:
        ValueError: a truncated stream, or a path that would leave ``dst``.
    """
    raw = zlib.decompress(data)
    pos = 0
    root = dst.resolve()
    while pos < len(raw):
        n = int.from_bytes(raw[pos : pos + 4], "big")
        header = json.loads(raw[pos + 4 : pos + 4 + n])
        pos += 4 + n
        target = (dst / str(header["path"])).resolve()
        if target != root and root not in target.parents:
            raise ValueError(f"a packed path leaves the tenant's directory: {header['path']!r}")
        if header.get("dir"):
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
            continue
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, int(header["size"]))  # the holes stay holes
            for start, length in header["extents"]:
                if pos + length > len(raw):
                    raise ValueError("the pack is truncated")
                os.pwrite(fd, raw[pos : pos + length], start)
                pos += length
        finally:
            os.close(fd)


def publish(r: redis.Redis, tenant_id: str, root: Path, worker_id: str, host: str) -> bool:
    """Pack ``root/tenant_id`` (closed shards) into Redis for the next holder.

    Args:
        r: The workers' Redis.
        tenant_id: The tenant being released.
        root: The Edge store's root (one directory per tenant).
        worker_id: This worker (the pack's ``from``; the tenant's home names it).
        host: This worker's host (for the log of the adopter).

    Returns:
        True when a pack was published; False when the tenant has no shards here or they are
        over :data:`MAX_PACK_BYTES` (any older pack is deleted either way).
    """
    src = root / tenant_id
    raw = binary_client(r)
    try:
        raw.delete(pack_key(tenant_id), data_key(tenant_id))
        if not src.is_dir():
            return False
        with tempfile.SpooledTemporaryFile(max_size=CHUNK_BYTES) as buf:
            pack_dir(src, buf)
            size = buf.tell()
            if size > MAX_PACK_BYTES:
                log.warning(
                    "the shards of %s are %d MB packed: too big for Redis, they stay on %s "
                    "(use QDRANT_URL for tenants this size)", tenant_id, size >> 20, host,
                )  # fmt: skip
                return False
            buf.seek(0)
            digest = hashlib.sha256()
            # Written under a temporary name and renamed at once: an adopter never sees half.
            tmp = f"{data_key(tenant_id)}:{uuid.uuid4().hex}"
            chunks = 0
            while chunk := buf.read(CHUNK_BYTES):
                digest.update(chunk)
                raw.rpush(tmp, chunk)
                chunks += 1
        meta: dict[Any, Any] = {"from": worker_id, "host": host,
                                      "sha256": digest.hexdigest(), "size": size,
                                      "chunks": chunks}  # fmt: skip
        pipe = raw.pipeline(transaction=True)
        if chunks:
            pipe.rename(tmp, data_key(tenant_id))
            pipe.expire(data_key(tenant_id), PACK_TTL_S)
        pipe.hset(pack_key(tenant_id), mapping=meta)
        pipe.expire(pack_key(tenant_id), PACK_TTL_S)
        pipe.execute()
    finally:
        raw.close()
    log.info("published the shards of %s (%d bytes) for the next holder", tenant_id, size)
    return True


def pack_from(r: redis.Redis, tenant_id: str) -> str | None:
    """The worker whose pack of the tenant waits in Redis (``None``: none)."""
    value = r.hget(pack_key(tenant_id), "from")
    return str(value) if value else None


def adopt(r: redis.Redis, tenant_id: str, root: Path, home: str) -> bool:
    """Unpack the tenant's pack from ``home`` into ``root/tenant_id`` (replacing it).

    The caller holds the tenant's lease and has closed its shards here.

    Returns:
        False when no pack from ``home`` is waiting (nothing is changed).

    Raises:
        StoreUnavailable: the pack is incomplete or corrupt (it is left for a retry).
    """
    raw = binary_client(r)
    try:
        found: Any = raw.hgetall(pack_key(tenant_id))
        meta = {bytes(k).decode(): bytes(v).decode() for k, v in found.items()}
        if meta.get("from") != home:
            return False
        chunks = int(meta.get("chunks", "0"))
        buf = io.BytesIO()
        for start in range(0, chunks, 16):
            part: Any = raw.lrange(data_key(tenant_id), start, min(chunks, start + 16) - 1)
            for chunk in part:
                buf.write(bytes(chunk))
        data = buf.getvalue()
        if len(data) != int(meta.get("size", "-1")) or (
            hashlib.sha256(data).hexdigest() != meta.get("sha256")
        ):
            raise StoreUnavailable(
                f"the shard pack of tenant {tenant_id} from {home} is incomplete or corrupt",
                "the lease was released; the next takeover retries, or restart the worker "
                f"{home} so it publishes the shards again",
            )
        dst = root / tenant_id
        tmp = dst.with_name(f".{tenant_id}.adopting")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True, mode=0o700)
        try:
            unpack_dir(data, tmp)
        except (ValueError, KeyError, TypeError, zlib.error) as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreUnavailable(
                f"the shard pack of tenant {tenant_id} from {home} cannot be unpacked: {exc}",
                f"restart the worker {home} so it publishes the shards again",
            ) from exc
        tmp.chmod(0o700)
        shutil.rmtree(dst, ignore_errors=True)
        tmp.rename(dst)
        raw.delete(pack_key(tenant_id), data_key(tenant_id))
    finally:
        raw.close()
    log.info("adopted the shards of %s from %s on %s (through Redis)", tenant_id, home,
             meta.get("host"))  # fmt: skip
    return True
