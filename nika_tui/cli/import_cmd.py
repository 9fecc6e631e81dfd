"""``nika import --tenant T SOURCE…``: sessions, instruction files and docs into memory.

See :mod:`nika_tui.importer` and docs/import.md. Prints a report (counts, and one line per
file or line skipped with its reason); ``--dry-run`` reads everything and queues nothing.
A progress bar is drawn on stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json
from nika_tui.errors import ValidationFailed
from nika_tui.importer.run import DEFAULT_BATCH, ImportReport, Progress

KEYWORDS = ("claude", "codex", "gemini", "opencode")
DEFAULT_TIMEOUT = 3600.0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika import``."""
    p = sub.add_parser(
        "import",
        help="import existing agent sessions, CLAUDE.md/AGENTS.md/GEMINI.md and docs",
        description="SOURCE: a file, a folder, or one of "
        + ", ".join(KEYWORDS)
        + " (that CLI's own session store). Re-running adds nothing; a killed import resumes.",
    )
    p.add_argument("--tenant", required=True, help="tenant id")
    p.add_argument("--project", default="", help="project id for everything (default: per cwd)")
    p.add_argument("--dry-run", action="store_true", help="count what would be imported")
    p.add_argument("--wait", action="store_true", help="wait until the service ingested it")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds --wait waits")
    p.add_argument("--max-file-mb", type=float, default=None, help="skip larger session files")
    p.add_argument("--batch", type=int, default=DEFAULT_BATCH, help=argparse.SUPPRESS)
    p.add_argument("sources", nargs="+", metavar="SOURCE", help="what to import")
    add_json_flag(p)
    p.set_defaults(handler=import_cmd)


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Progress | None]:
    """A rich progress bar on stderr (one task per phase), or None off a terminal."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
    from rich.progress import Progress as Bar

    tasks: dict[str, Any] = {}
    with Bar(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:

        def update(phase: str, done: int, total: int) -> None:
            if phase not in tasks:
                label = "reading files" if phase == "read" else "queueing memories"
                tasks[phase] = bar.add_task(label, total=total)
            bar.update(tasks[phase], completed=done, total=total)

        yield update


def print_report(report: ImportReport) -> None:
    """Human report: counts, then every skipped file or line with its reason."""
    verb = "would queue" if report.dry_run else "queued"
    count = report.semantic + report.episodic - (0 if report.dry_run else report.already_queued)
    print(
        f"{report.files} files: {report.sessions} sessions, {report.documents} documents, "
        f"{report.unchanged} unchanged since the last import, {len(report.skipped)} skipped"
    )
    print(
        f"{verb} {count if report.dry_run else report.queued} memories "
        f"({report.semantic} semantic, {report.episodic} episodic"
        + (f"; {report.already_queued} were already queued)" if report.already_queued else ")")
    )
    for line in report.skipped + report.notes:
        print(line)


def check_options(args: argparse.Namespace) -> None:
    """Refuse what argparse lets through but the import cannot use, before anything is read.

    Raises:
        ValidationFailed: ``--project`` longer than a memory's project id may be,
            ``--max-file-mb`` not a positive number, ``--timeout`` negative (or NaN).
    """
    from annotated_types import MaxLen

    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.importer.discover import MAX_SESSION_BYTES

    # The limit is the record's own, so the import refuses exactly what ingest would.
    limit = next(
        m.max_length for m in NikaMeta.model_fields["project_id"].metadata if isinstance(m, MaxLen)
    )
    if len(args.project) > limit:
        raise ValidationFailed(
            f"--project is {len(args.project)} characters, at most {limit}",
            "give a shorter project id, or leave --project out (one project per session's cwd)",
        )
    mb = args.max_file_mb
    # `not (x > 0)` also refuses NaN; infinity would not convert to a byte count.
    if mb is not None and (not mb > 0 or not math.isfinite(mb)):
        raise ValidationFailed(
            f"--max-file-mb must be a positive number of MB, not {mb:g}",
            f"leave it out for the default ({MAX_SESSION_BYTES // 2**20} MB)",
        )
    if not args.timeout >= 0:
        raise ValidationFailed(
            f"--timeout must be 0 or more seconds, not {args.timeout:g}",
            f"leave it out for the default ({DEFAULT_TIMEOUT:g} s)",
        )


def import_cmd(args: argparse.Namespace) -> int:
    """Run one import in the process's environment."""
    return run_import(args, dict(os.environ))


def run_import(args: argparse.Namespace, env: dict[str, str]) -> int:
    """Run one import; ``env`` locates the CLIs' stores (``HOME``, ``CODEX_HOME``, …)."""
    from nika_tui.hooks.common import redact, worth_keeping_prompt, worth_keeping_turn
    from nika_tui.hooks.context import project_from_cwd
    from nika_tui.importer.discover import MAX_SESSION_BYTES, Policy, discover
    from nika_tui.importer.run import plan, queue, wait_ingested
    from nika_tui.services.config_store import load_tenant
    from nika_tui.services.redis_server import connect
    from nika_tui.settings import Settings

    settings = Settings.from_env(env)
    load_tenant(args.tenant, settings.roots)
    if args.batch < 1:
        raise ValidationFailed("--batch must be at least 1", "leave it out")
    check_options(args)
    max_session = (
        MAX_SESSION_BYTES if args.max_file_mb is None else int(args.max_file_mb * 1024 * 1024)
    )
    policy = Policy(
        keep_prompt=worth_keeping_prompt,
        keep_turn=worth_keeping_turn,
        # The hooks' masker; the service masks again once its own masker is in place.
        mask=redact,
        project_of=project_from_cwd,
        project=args.project,
        max_session_bytes=max_session,
    )
    units, skipped = discover(args.sources, env)
    report = ImportReport(skipped=skipped, dry_run=args.dry_run)
    r = connect(settings, start=True)
    with progress_bar(sys.stderr.isatty() and not args.json) as progress:
        planned = plan(r, args.tenant, units, policy, report, progress)
        last_id = None
        if not args.dry_run:
            last_id = queue(r, args.tenant, planned, report, args.batch, progress)
    if args.json:
        print_json({"tenant_id": args.tenant, **report.to_json()})
    else:
        print_report(report)
    if args.wait and last_id is not None:
        wait_ingested(r, last_id, args.timeout)
        if not args.json:
            print("ingested by the memory service")
    elif last_id is not None and not args.json:
        print("the memory service ingests them in the background (`nika up` if it is not running)")
    return 0
