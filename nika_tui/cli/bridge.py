"""``nika bridge serve|link|unlink|status``: the messaging gateways (see docs/bridge.md)."""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.errors import BridgeError, ValidationFailed


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Register ``nika bridge``."""
    p = sub.add_parser(
        "bridge",
        help="WhatsApp / Teams / Google Chat messages to tenant kernels",
        description="Webhooks of WhatsApp Business, Microsoft Teams and Google Chat; "
        "linked senders reach their tenant's kernel and get its answer back.",
    )
    bsub = p.add_subparsers(dest="bridge_command", metavar="ACTION", required=True)

    serve = bsub.add_parser("serve", help="run the webhook server")
    serve.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8788, help="port (0: any free port)")
    serve.add_argument(
        "--insecure-storage", action="store_true", help="read secrets from the 0600 file"
    )
    add_json_flag(serve)
    serve.set_defaults(handler=_serve)

    for name, helptext in (("link", "link a sender to a tenant"), ("unlink", "remove a link")):
        q = bsub.add_parser(name, help=helptext)
        if name == "link":
            q.add_argument("--tenant", required=True, metavar="ID", help="tenant id")
        q.add_argument(
            "--gateway", required=True, choices=["whatsapp", "teams", "gchat"], help="gateway"
        )
        q.add_argument("--sender", required=True, help="phone number, Teams id, users/…")
        add_json_flag(q)
        q.set_defaults(handler=_link if name == "link" else _unlink)

    retry = bsub.add_parser("retry", help="send the kept undeliverable replies again")
    add_json_flag(retry)
    retry.set_defaults(handler=_retry)

    status = bsub.add_parser("status", help="gateways, links, pending messages, errors")
    status.add_argument("--tenant", metavar="ID", help="only this tenant")
    add_json_flag(status)
    status.set_defaults(handler=_status)


def _serve(args: argparse.Namespace) -> int:
    import os

    from nika_tui.bridge.server import serve_forever
    from nika_tui.bridge.settings import resolve
    from nika_tui.services.redis_server import connect

    if not 0 <= args.port <= 65535:
        raise ValidationFailed(f"--port {args.port} is not a port", "use 0-65535")
    # The secrets are read, then removed from our environment: tmux servers the bridge starts
    # for kernels would otherwise pass them on to every agent.
    settings = settings_of(args)
    bridge = resolve(settings.roots, os.environ, allow_insecure=args.insecure_storage, scrub=True)
    # What is left of our environment is what the kernels the bridge starts inherit.
    serve_forever(bridge, settings, connect(settings), os.environ, args.host, args.port)
    return 0


def _change(args: argparse.Namespace, linking: bool) -> int:
    from nika_tui.bridge.settings import load_config, save_config
    from nika_tui.domain import bridge as domain
    from nika_tui.domain.tenant_id import check_tenant_id
    from nika_tui.services.config_store import load_tenant

    where = settings_of(args).roots
    gateway = domain.Gateway(args.gateway)
    config = load_config(where)
    try:
        if linking:
            check_tenant_id(args.tenant)
            load_tenant(args.tenant, where)  # an unknown tenant is refused with its hint
            updated = domain.link(config, gateway, args.sender, args.tenant)
            changed = updated is not config
        else:
            updated, changed = domain.unlink(config, gateway, args.sender)
    except domain.SenderInvalid as exc:
        raise ValidationFailed(str(exc), "give the sender as the gateway sends it") from exc
    except ValueError as exc:
        raise BridgeError(str(exc), "") from exc
    sender = domain.normalize_sender(gateway, args.sender)
    if changed:
        save_config(updated, where)
    result = {"gateway": gateway.value, "sender": sender, "changed": changed,
              "tenant_id": getattr(args, "tenant", None)}  # fmt: skip
    if args.json:
        print_json(result)
    elif linking:
        verb = "linked" if changed else "already linked"
        print(f"{gateway.value} sender {sender} {verb} to tenant {args.tenant}")
        print("a running `nika bridge serve` picks links up on its next start")
    else:
        print(f"{gateway.value} sender {sender} " + ("unlinked" if changed else "was not linked"))
    return 0


def _link(args: argparse.Namespace) -> int:
    return _change(args, linking=True)


def _unlink(args: argparse.Namespace) -> int:
    return _change(args, linking=False)


def _status(args: argparse.Namespace) -> int:
    from nika_tui.bridge.settings import load_config
    from nika_tui.bridge.status import read_status
    from nika_tui.services.redis_server import connect

    settings = settings_of(args)
    config = load_config(settings.roots)
    status = read_status(connect(settings), config, [args.tenant] if args.tenant else None)
    if args.json:
        print_json(status.to_json())
        return 0
    print(f"server: {'running at ' + status.url if status.running else 'not running'}")
    if status.running:
        print("gateways: " + (", ".join(status.gateways) or "none configured"))
    for gateway, missing in status.missing.items():
        if missing:
            print(f"  {gateway} lacks: {', '.join(missing)}")
    print(f"outbox: {status.outbox_pending} pending, {status.dead} undeliverable (kept)")
    for tenant in status.tenants:
        senders = ", ".join(f"{s['gateway']}:{s['sender']}" for s in tenant.senders) or "none"
        print(f"{tenant.tenant_id}: senders {senders}; {tenant.pending} waiting for the kernel")
        for entry in tenant.last[:5]:
            print(f"  {entry['at'][:19]} {entry['direction']:<3} {entry['gateway']:<8} "
                  f"{entry['status']:<10} {entry['text']}")  # fmt: skip
        for entry in tenant.errors[:3]:
            print(f"  error {entry['at'][:19]} {entry['reason']}")
    for entry in status.errors[:5]:
        print(f"error {entry['at'][:19]} {entry['gateway']}: {entry['reason']}")
    return 0


def _retry(args: argparse.Namespace) -> int:
    from nika_tui.bridge.delivery import retry_dead
    from nika_tui.services.redis_server import connect

    moved = retry_dead(connect(settings_of(args)))
    if args.json:
        print_json({"requeued": moved})
    else:
        print(f"{moved} kept repl{'y' if moved == 1 else 'ies'} back in the outbox"
              + ("; a running `nika bridge serve` sends them now" if moved else ""))  # fmt: skip
    return 0
