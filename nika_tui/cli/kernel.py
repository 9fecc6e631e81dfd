"""``nika kernel spawn|list|attach|stop|restart``: one tmux kernel per tenant."""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.errors import KernelError

if TYPE_CHECKING:
    from nika_tui.engine.kernels.manager import KernelManager


def _manager(args: argparse.Namespace, start_redis: bool = False) -> KernelManager:
    """The kernel manager, on the command's settings; only commands that start a kernel also
    start the embedded Redis.

    Read-only ones (list, attach, stop) say Redis is not running instead of restarting it.
    """
    from nika_tui.engine.kernels.manager import KernelManager

    if start_redis:
        from nika_tui.services.redis_server import redis_url

        redis_url(settings_of(args), start=True)
    return KernelManager(settings_of(args))


def _spawn(args: argparse.Namespace) -> int:
    result = _manager(args, start_redis=True).spawn(args.tenant, wait=not args.no_wait)
    if args.json:
        print_json(dataclasses.asdict(result))
    else:
        print(result.message)
        if result.pod_ttfl_s is not None:
            print(f"pod_ttfl: {result.pod_ttfl_s:.3f} s")
    return 0


def _list(args: argparse.Namespace) -> int:
    statuses = _manager(args).list()
    if args.json:
        print_json([s.model_dump(mode="json") for s in statuses])
        return 0
    if not statuses:
        print("no kernels (start one with `nika kernel spawn TENANT`)")
        return 0
    header = f"{'TENANT':<20} {'STATE':<14} {'SOURCE':<8} {'PID':>7} {'CLI':<12} {'HEARTBEAT':>9}"
    print(header)
    for s in statuses:
        beat = (
            "stale"
            if s.stale
            else ("-" if s.heartbeat_age_s is None else f"{s.heartbeat_age_s:.0f}s")
        )
        pid = "-" if s.pid is None else str(s.pid)
        print(
            f"{s.tenant_id:<20} {s.state.value:<14} {s.source.value:<8} {pid:>7} "
            f"{s.cli:<12} {beat:>9}" + (f"  {s.reason}" if s.reason else "")
        )
        if len(s.agents) > 1:  # one window per agent: each one's own state under the kernel's
            for a in s.agents:
                print(f"  · {a.agent:<17} {a.state.value:<14} {a.source.value:<8}  {a.reason}")
    return 0


def _attach(args: argparse.Namespace) -> int:
    manager = _manager(args)
    target = manager.attach_target(args.tenant, args.agent)
    argv = target.command
    if args.json:
        # A program cannot hand over a terminal: it gets the command to run instead.
        body = {"tenant_id": args.tenant, "agent": target.agent, "why": target.why}
        print_json({**body, "command": argv})
        return 0
    if not manager.is_running(args.tenant):
        raise KernelError(
            f"kernel {args.tenant} is not running",
            f"start it with `nika kernel spawn {args.tenant}`",
        )
    if not sys.stdin.isatty():
        raise KernelError("attach needs a terminal", f"run it in a terminal: {' '.join(argv)}")
    # TMUX is dropped so that attaching from inside another tmux works (it nests on purpose).
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    # Said on stderr before tmux takes the screen, so it is still there after detaching.
    print(f"attaching to {args.tenant}'s {target.agent} window: {target.why}", file=sys.stderr)
    return subprocess.run(argv, env=env, check=False).returncode


def _stop(args: argparse.Namespace) -> int:
    result = _manager(args).stop(args.tenant, timeout_s=args.timeout)
    if args.json:
        print_json(dataclasses.asdict(result))
    else:
        print(result.message)
    return 0


def _restart(args: argparse.Namespace) -> int:
    result = _manager(args, start_redis=True).restart(args.tenant)
    if args.json:
        print_json(dataclasses.asdict(result))
    else:
        print(result.stop.message)
        print(result.spawn.message)
        print(f"recall: {result.recall}")
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika kernel …``."""
    parser = sub.add_parser("kernel", help="tenant kernels (agent CLIs in tmux)")
    actions = parser.add_subparsers(dest="kernel_command", metavar="ACTION", required=True)

    spawn = actions.add_parser("spawn", help="start the tenant's kernel")
    spawn.add_argument("tenant")
    spawn.add_argument(
        "--no-wait", action="store_true", help="return before the agent prints anything"
    )
    add_json_flag(spawn)
    spawn.set_defaults(handler=_spawn)

    lst = actions.add_parser("list", help="every kernel with its state")
    add_json_flag(lst)
    lst.set_defaults(handler=_list)

    attach = actions.add_parser("attach", help="hand this terminal to the kernel (tmux attach)")
    attach.add_argument("tenant")
    attach.add_argument(
        "--agent",
        "--cli",
        dest="agent",
        metavar="NAME",
        help="the agent window to show (claude-code, codex, …; default: the busiest)",
    )
    add_json_flag(attach)
    attach.set_defaults(handler=_attach)

    stop = actions.add_parser("stop", help="ask the agent to exit, kill after a timeout")
    stop.add_argument("tenant")
    stop.add_argument("--timeout", type=float, default=None, help="seconds before killing")
    add_json_flag(stop)
    stop.set_defaults(handler=_stop)

    restart = actions.add_parser("restart", help="stop and spawn again (memory is kept)")
    restart.add_argument("tenant")
    add_json_flag(restart)
    restart.set_defaults(handler=_restart)
