"""``nika compress --tenant T [--repo PATH] [--reset]`` (strategy A) and ``nika snapshot``.

Like the other maintenance commands, each runs in the memory service when it is up (the single
writer holds the shards) and on the stores directly when it is down. ``--reset`` embeds the
knowledge trees again, so outside the service it loads the embedder (a few seconds).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.cli.debt import run_op
from nika_tui.domain import protocol_requests as req
from nika_tui.errors import ServiceNotRunning, ValidationFailed
from nika_tui.settings import Settings

if TYPE_CHECKING:
    from nika_tui.paths import Roots
    from nika_tui.services.memory_client import MemoryClient

RESET_TIMEOUT_S = 3600.0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika compress`` and ``nika snapshot export|import|history``."""
    comp = sub.add_parser(
        "compress", help="strategy A: memories by theme + digest into the knowledge repo"
    )
    comp.add_argument("--tenant", required=True, help="tenant id")
    comp.add_argument("--repo", default=None, help="git work tree (default: knowledge_repo)")
    comp.add_argument(
        "--reset",
        action="store_true",
        help="then snapshot, and switch the tenant to a fresh store re-ingested from the repo",
    )
    add_json_flag(comp)
    comp.set_defaults(handler=_compress)

    snap = sub.add_parser("snapshot", help="full, restorable snapshot of a tenant's memory")
    ssub = snap.add_subparsers(dest="snapshot_command", metavar="ACTION", required=True)
    for name, helptext, fn in (
        (
            "export",
            "write every point, hierarchy, review queue, recall settings to PATH",
            _export,
        ),
        ("import", "load a snapshot into an empty store", _import),
    ):
        p = ssub.add_parser(name, help=helptext)
        p.add_argument("--tenant", required=True, help="tenant id")
        p.add_argument("path", metavar="PATH", help="snapshot directory")
        if name == "import":
            p.add_argument(
                "--force", action="store_true", help="merge into a store that holds points"
            )
        add_json_flag(p)
        p.set_defaults(handler=fn)
    hist = ssub.add_parser("history", help="a memory's supersede chain as a snapshot holds it")
    hist.add_argument("path", metavar="PATH", help="snapshot directory")
    hist.add_argument("memory_id", metavar="ID", help="memory id")
    add_json_flag(hist)
    hist.set_defaults(handler=_history)


def _abs(path: str) -> str:
    return str(Path(path).expanduser().resolve())


RESET_PAUSE_NOTE = (
    "note: while the reset runs (minutes; 10 to 30 at 50,000 memories), this tenant's memory "
    "writes wait in the stream and are stored after it, nothing is lost; other tenants' writes "
    "go on"
)


PAUSE_POLL_S = 0.2


def _note_when_paused(client: MemoryClient, tenant_id: str, stop: threading.Event) -> None:
    """Print :data:`RESET_PAUSE_NOTE` once the service's writes wait for this tenant's reset.

    Only then (decision 486): a bad input is refused before the reset pauses anything, so its
    one-line error comes alone.
    """
    while not stop.is_set():
        if client.reset_running() == tenant_id:
            print(RESET_PAUSE_NOTE, file=sys.stderr, flush=True)
            return
        stop.wait(PAUSE_POLL_S)


def _through_service(client: MemoryClient, request: req.CompressResetRequest) -> Any:
    stop = threading.Event()
    watcher = threading.Thread(
        target=_note_when_paused, args=(client, request.tenant_id, stop), daemon=True
    )
    watcher.start()
    try:
        return client.send(request, timeout=RESET_TIMEOUT_S).report
    finally:
        stop.set()
        watcher.join()  # the note, when there is one, comes before the result or the error


def _with_embedder(request: req.CompressResetRequest, settings: Settings) -> Any:
    """Through the service, else locally with the real embedder (the reset embeds text)."""
    env = dict(os.environ)  # the local engine's children and secrets, never its settings
    from nika_tui.services.memory_client import MemoryClient

    try:
        client = MemoryClient.open(settings)
        if client.service_alive():
            # Decision 439: the reset holds the service's single writer; it says so meanwhile.
            return _through_service(client, request)
    except ServiceNotRunning:
        pass
    from nika_tui.engine.builder import build_context
    from nika_tui.engine.reset import reset

    ctx = build_context(env, settings)
    try:
        return reset(ctx, request.tenant_id, Path(request.repo) if request.repo else None)
    finally:
        ctx.vectors.close()


def check_repo_path(repo: Path, where: Roots) -> None:
    """``--repo`` must be an existing directory, or a new one inside an existing directory.

    The service used to create any path it was given (``mkdir -p``), anywhere the user can
    write; a typo made a tree of directories. Nika's own config and data dirs (``where``'s)
    are refused.

    Raises:
        ValidationFailed: with the fix.
    """
    if not repo.exists() and not repo.parent.is_dir():
        raise ValidationFailed(
            f"--repo {repo}: its parent directory {repo.parent} does not exist",
            "create it first (`mkdir -p`), or pass an existing git work tree",
        )
    for own in (where.config, where.data):
        own = own.expanduser().resolve()
        if repo == own or own in repo.parents or repo in own.parents:
            raise ValidationFailed(
                f"--repo {repo} is inside (or holds) nika's own directory {own}",
                "pass a separate git work tree for the knowledge files",
            )


def _compress(args: argparse.Namespace) -> int:
    repo = _abs(args.repo) if args.repo else None
    if repo is not None:
        check_repo_path(Path(repo), settings_of(args).roots)
    if args.reset:
        result = _with_embedder(req.CompressResetRequest(args.tenant, repo), settings_of(args))
        if args.json:
            print_json(result)
            return 0
        comp = result["compress"]
        print(
            f"{args.tenant}: live points {result['live_points_before']} → "
            f"{result['live_points_after']} (generation {result['generation']})"
        )
        print(f"  snapshot {result['snapshot']['path']} ({result['snapshot']['points']} points)")
        print(f"  repo {comp['repo']} commit {comp['commit'] or 'unchanged'}, "
              f"pushed {comp['pushed'] or 'no remote'}")  # fmt: skip
        return 0

    result = run_op(req.CompressRequest(args.tenant, repo), settings_of(args))
    if args.json:
        print_json(result)
        return 0
    commit = result["commit"] or "nothing new to commit"
    print(
        f"{result['memories']} memories ({result['kept']} kept) in "
        f"{len(result['files'])} files — {commit}"
    )
    if result.get("private"):
        print(f"  {result['private']['memories']} private memories kept in "
              f"{result['private']['tree']} (never pushed)")  # fmt: skip
    if result.get("pushed"):
        print(f"  pushed {result['pushed']} to origin")
    from nika_tui.services.digest_writer import OFFLINE_BY_SETTING

    for where, part in (("repo", result), ("private tree", result.get("private") or {})):
        digest = part.get("digest")
        if digest and digest["reason"] != OFFLINE_BY_SETTING:  # llm was asked for
            fell = f", {len(digest['fallbacks'])} nodes fell back" if digest["fallbacks"] else ""
            print(f"  {where} digest: {digest['mode']} ({digest['reason']}){fell}")
    return 0


def _export(args: argparse.Namespace) -> int:
    result = run_op(req.SnapshotExportRequest(args.tenant, _abs(args.path)), settings_of(args))
    if args.json:
        print_json(result)
        return 0
    print(f"{result['points']} points ({result['bytes']} bytes) written to {result['path']}")
    return 0


def _import(args: argparse.Namespace) -> int:
    result = run_op(
        req.SnapshotImportRequest(args.tenant, _abs(args.path), bool(args.force)), settings_of(args)
    )
    if args.json:
        print_json(result)
        return 0
    print(
        f"{result['points']} points, {result['reviews']} review items imported; "
        f"hierarchy {result['hierarchy']}; "
        f"recall settings {result.get('recall_settings', 'absent')}"
    )
    return 0


def _history(args: argparse.Namespace) -> int:
    from nika_tui.engine.snapshot.restore import snapshot_history

    chain = snapshot_history(Path(_abs(args.path)), args.memory_id)
    if args.json:
        print_json({"records": chain})
        return 0
    for p in chain:
        mark = "*" if p["id"] == args.memory_id else " "
        print(f"{mark} {p['valid_from'][:10]} {p['status']:<8} {p['id']}  {p['text'][:70]}")
    return 0
