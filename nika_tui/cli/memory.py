"""``nika memory remember | recall | history`` (DESIGN.md CLI contract), all with ``--json``.

``remember`` validates everything it can before queueing (tenant, text, enumerations, dates),
queues the memory durably on the ingest stream, and by default waits until the service has
ingested it and prints its id; ``--no-wait`` only queues. ``recall`` prints the hits with a
summary of their envelope, or exactly the PALACE line. Reads go through the running service.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.domain.envelope import (
    ActionType,
    Domain,
    Intent,
    NikaMeta,
    Trigger,
    explain_validation_error,
)
from nika_tui.domain.input_limits import check_no_nul, check_valid_from
from nika_tui.domain.memory import MAX_TEXT_CHARS, Layer, MemoryRecord, memory_id
from nika_tui.domain.requests import MAX_RECALL_LIMIT, RecallQuery, RecallResult, RememberRequest
from nika_tui.domain.sensitivity import mark_private
from nika_tui.errors import ValidationFailed

REMEMBER_WAIT_S = 60.0
"""How long ``remember`` waits for the service by default (a cold start loads the model)."""


def _choices(enum: Any) -> str:
    return ", ".join(m.value for m in enum)


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika memory …``."""
    memory = sub.add_parser("memory", help="remember, recall and trace memories")
    msub = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    rem = msub.add_parser("remember", help="store a fact (supersedes what it replaces)")
    rem.add_argument("--tenant", required=True, help="tenant id")
    rem.add_argument("--text", required=True, help="the fact; '-' reads UTF-8 text from stdin")
    rem.add_argument("--project", default="", help="project id")
    rem.add_argument("--job", default="", help="job id")
    rem.add_argument("--task", default="", help="task id")
    rem.add_argument("--domain", default=None, help=f"one of: {_choices(Domain)}")
    rem.add_argument("--action-type", default=None, help=f"one of: {_choices(ActionType)}")
    rem.add_argument("--intent", default=None, help=f"one of: {_choices(Intent)}")
    rem.add_argument("--trigger", default="user", help=f"one of: {_choices(Trigger)}")
    rem.add_argument("--agent", default="", help="agent type (claude-code, codex, …)")
    rem.add_argument("--session", default="", help="agent session id")
    rem.add_argument("--layer", default="semantic", help=f"one of: {_choices(Layer)}")
    rem.add_argument(
        "--valid-from", default=None, help="ISO-8601 time the fact became true (default: now)"
    )
    rem.add_argument(
        "--private",
        action="store_true",
        help="never published to a knowledge repo marked public (nika compress)",
    )
    rem.add_argument("--no-wait", action="store_true", help="queue it and return at once")
    rem.add_argument(
        "--timeout", type=float, default=REMEMBER_WAIT_S, help="seconds to wait for the service"
    )
    add_json_flag(rem)
    rem.set_defaults(handler=remember_cmd)

    rec = msub.add_parser("recall", help="search current memories (PALACE when none)")
    rec.add_argument("--tenant", required=True, help="tenant id")
    rec.add_argument("--project", default=None, help="only this project")
    rec.add_argument("--job", default=None, help="only this job")
    rec.add_argument("--task", default=None, help="only this task")
    rec.add_argument("--domain", default=None, help=f"one of: {_choices(Domain)}")
    rec.add_argument("--action-type", default=None, help=f"one of: {_choices(ActionType)}")
    rec.add_argument("--limit", type=int, default=5, help=f"1-{MAX_RECALL_LIMIT} (default 5)")
    rec.add_argument("--include-retired", action="store_true", help="also retired memories")
    rec.add_argument("--session", default="", help="caller session (marks hits in use)")
    rec.add_argument(
        "--as-of", default=None, help="what was current then, by valid time (2026-03-15, ISO time)"
    )
    rec.add_argument("query", nargs="+", help="what to recall")
    add_json_flag(rec)
    rec.set_defaults(handler=recall_cmd)

    from nika_tui.cli.tune import register_feedback

    register_feedback(msub)  # `nika memory feedback`: labels for `nika tune recall`
    from nika_tui.cli.memory_time import register_timeline

    register_timeline(msub)

    his = msub.add_parser("history", help="the chain of what replaced what")
    his.add_argument("--tenant", required=True, help="tenant id")
    his.add_argument("id", help="memory id")
    add_json_flag(his)
    his.set_defaults(handler=history_cmd)


# --- remember ---------------------------------------------------------------------------------
def read_text(value: str) -> str:
    """``value``, or stdin when it is ``-`` (strict UTF-8)."""
    if value != "-":
        return value
    data = sys.stdin.buffer.read()
    try:
        # A piped fact ends with a newline that is not part of it.
        return data.decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise ValidationFailed(
            f"stdin is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            "convert it first, e.g. `iconv -f latin1 -t utf-8 FILE | nika memory remember … -`",
        ) from None


def check_text(text: str) -> str:
    """Refuse empty and oversized text with a one-line fix."""
    if not text.strip():
        raise ValidationFailed(
            "the text is empty", "pass the fact with --text TEXT (or - for stdin)"
        )
    if len(text) > MAX_TEXT_CHARS:
        raise ValidationFailed(
            f"the text is {len(text):,} characters; one memory holds at most {MAX_TEXT_CHARS:,}",
            "split it into several facts, or summarise it",
        )
    return check_no_nul(text)


def _parse_time(value: str | None, now: datetime) -> datetime:
    if value is None:
        return now
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationFailed(
            f"--valid-from {value!r} is not an ISO-8601 time",
            "e.g. 2026-06-01 or 2026-06-01T09:30Z",
        ) from None
    parsed = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
    return check_valid_from(parsed, now)


def build_request(args: argparse.Namespace, text: str, now: datetime) -> RememberRequest:
    """The request the flags describe, or :class:`ValidationFailed` naming the bad field."""
    valid_from = _parse_time(args.valid_from, now)
    try:
        meta = NikaMeta(
            session_id=args.session,
            agent_type=args.agent,
            trigger=args.trigger,
            project_id=args.project,
            job_id=args.job,
            task_id=args.task,
            timestamp=valid_from,
            action_type=args.action_type,
            domain=args.domain,
            intent=args.intent,
        )
        if args.private:
            meta = mark_private(meta)
        return RememberRequest(
            tenant_id=args.tenant, text=text, layer=args.layer, meta=meta, valid_from=valid_from
        )
    except ValidationError as exc:
        raise ValidationFailed(
            explain_validation_error(exc), "see `nika memory remember --help`"
        ) from None


def remember_cmd(args: argparse.Namespace) -> int:
    """Queue (and by default wait for) one memory."""
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    text = check_text(read_text(args.text))
    req = build_request(args, text, datetime.now(UTC))
    client = MemoryClient.open(settings_of(args), start_redis=True)
    if not args.no_wait and not client.service_alive():
        # Queue it anyway (durable, idempotent): it is ingested as soon as a service runs.
        key = client.remember(req)
        from nika_tui.errors import ServiceNotRunning

        raise ServiceNotRunning(
            hint=f"start it with `nika up` (the memory is queued as {memory_id(req.tenant_id, key)}"
            " and will be ingested then)"
        )
    key = client.remember(req)
    point_id = memory_id(req.tenant_id, key)
    if args.no_wait:
        out: dict[str, Any] = {"id": point_id, "idempotency_key": key, "status": "queued"}
    else:
        out = client.wait_ingested(req.tenant_id, key, timeout=args.timeout)
    if args.json:
        print_json({"tenant_id": req.tenant_id, **out})
    else:
        print(out["id"])
        for old in out.get("retired", []):
            print(f"retired {old} (superseded)", file=sys.stderr)
        for line in review_lines(out, req.tenant_id):
            print(line, file=sys.stderr)
        if out.get("status") == "duplicate":
            print("already remembered (same text): nothing new stored", file=sys.stderr)
    return 0


def review_lines(out: Mapping[str, Any], tenant_id: str) -> list[str]:
    """One line per review the ingest queued, with the judge's reason (issue 17).

    Each review came from one UNCERTAIN judgement, in the same order.
    """
    unclear = [j for j in out.get("judgements", []) if str(j.get("verdict")).upper() == "UNCERTAIN"]
    lines = []
    for i, rid in enumerate(out.get("reviews", [])):
        why = (
            f" ({unclear[i].get('judge')}: {unclear[i].get('reason')})" if i < len(unclear) else ""
        )
        lines.append(f"review {rid} queued{why}: see `nika review list --tenant {tenant_id}`")
    return lines


# --- recall -----------------------------------------------------------------------------------
def build_query(args: argparse.Namespace) -> RecallQuery:
    """The recall the flags describe, or :class:`ValidationFailed`."""
    for flag, enum, value in (
        ("--domain", Domain, args.domain),
        ("--action-type", ActionType, args.action_type),
    ):
        if value is not None and value not in {m.value for m in enum}:
            raise ValidationFailed(
                f"{flag}: {value!r} is not allowed; allowed values: {_choices(enum)}",
                "see `nika memory recall --help`",
            )
    query = " ".join(args.query).strip()
    if not query:
        raise ValidationFailed(
            "the recall query is empty",
            "say what to recall, e.g. `nika memory recall --tenant T how do we deploy`",
        )
    check_no_nul(query, "the query")
    try:
        return RecallQuery(
            tenant_id=args.tenant,
            query=query,
            project_id=args.project,
            job_id=args.job,
            task_id=args.task,
            domain=args.domain,
            action_type=args.action_type,
            limit=args.limit,
            include_retired=args.include_retired,
            session_id=args.session,
            as_of=parse_as_of_flag(args.as_of),
        )
    except ValidationError as exc:
        raise ValidationFailed(
            explain_validation_error(exc), "see `nika memory recall --help`"
        ) from None


def parse_as_of_flag(value: str | None) -> datetime | None:
    """``--as-of`` as an aware time (a bare date means the end of that day, UTC)."""
    if value is None:
        return None
    from nika_tui.domain.timeline import parse_as_of

    try:
        return parse_as_of(value)
    except ValueError as exc:
        raise ValidationFailed(f"--as-of: {exc}", "see `nika memory recall --help`") from None


def summary(record: MemoryRecord) -> str:
    """One line of envelope: where (project/job/task), what (domain, action), when, status."""
    m = record.meta
    where = "/".join(x for x in (m.project_id, m.job_id, m.task_id) if x) or "-"
    what = ",".join(x.value for x in (m.domain, m.action_type, m.intent) if x is not None) or "-"
    status = record.status.value
    if record.superseded_by:
        status += f" → {record.superseded_by}"
    return f"{where} · {what} · valid {record.valid_from:%Y-%m-%d %H:%M} · {status}"


def print_recall(result: RecallResult) -> None:
    """Human output: hits, or exactly the PALACE line; then hierarchy status (golden rule)."""
    if not result.hits:
        print(result.palace)
    for hit in result.hits:
        r = hit.record
        print(f"{r.id}  cos {hit.cosine:.2f}  {summary(r)}")
        print(f"    {r.text}")
    for node_id, info in result.hierarchy.items():
        status = info.get("status") or "not in the hierarchy"
        print(f"status {node_id}: {status} (hierarchy)")


def recall_cmd(args: argparse.Namespace) -> int:
    """Recall through the running service."""
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    q = build_query(args)
    result = MemoryClient.open(settings_of(args)).recall(q)
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print_recall(result)
    return 0


# --- history ----------------------------------------------------------------------------------
def history_cmd(args: argparse.Namespace) -> int:
    """Show the supersede chain around one memory."""
    from nika_tui.domain.timeline import earlier_lines
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.memory_client import MemoryClient

    load_tenant(args.tenant, settings_of(args).roots)
    records, snapshots = MemoryClient.open(settings_of(args)).history_and_snapshots(
        args.tenant, args.id
    )
    if args.json:
        print_json(
            {
                "tenant_id": args.tenant,
                "id": args.id,
                "chain": [r.model_dump(mode="json") for r in records],
                "snapshots": snapshots,
            }
        )
        return 0
    if records:
        for line in earlier_lines(snapshots, records[0].id):
            print(line)
    for r in records:
        marker = "*" if r.id == args.id else " "
        print(f"{marker} {r.id}  {summary(r)}")
        print(f"    {r.text}")
        if r.retire_reason:
            print(f"    retired {r.retired_at:%Y-%m-%d %H:%M}: {r.retire_reason}")
    return 0
