"""`nika judge eval FILE [--judge rules|agent-cli|http] [--json]`: score a judge.

The file format is DESIGN.md's (see :mod:`nika_tui.domain.judge_eval`). The human output is a
table; ``--json`` prints the report (``n``, ``accuracy``, ``wrong_replace_rate``,
``per_label``, ``confusion``, ``misses``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json
from nika_tui.errors import ConfigError

MAX_MISSES_SHOWN = 20


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika judge``."""
    judge = sub.add_parser("judge", help="supersede judges: evaluate on labelled pairs")
    judge_sub = judge.add_subparsers(dest="judge_command", metavar="SUBCOMMAND")
    ev = judge_sub.add_parser("eval", help="score a judge on a labelled JSONL file")
    ev.add_argument("file", metavar="FILE", help="labelled pairs (JSONL, DESIGN.md format)")
    ev.add_argument(
        "--judge",
        choices=("rules", "agent-cli", "http"),
        default=None,
        help="judge to score (default: rules, or the tenant's judge with --tenant)",
    )
    ev.add_argument("--tenant", help="use this tenant's judge (privacy mode applies)")
    ev.add_argument("--cli", choices=("claude", "codex"), help="agent-cli: which CLI to run")
    ev.add_argument("--endpoint", help="http: OpenAI-compatible base URL")
    ev.add_argument("--model", help="agent-cli / http: model name")
    ev.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="http: name of the environment variable holding the API key (never the key)",
    )
    ev.add_argument("--timeout", type=float, help="seconds per judgement (model judges)")
    add_json_flag(ev)
    ev.set_defaults(handler=_eval)
    judge.set_defaults(handler=_usage(judge))


def _usage(parser: argparse.ArgumentParser) -> Any:
    def handler(args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    return handler


def _read(path: str) -> str:
    file = Path(path)
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file", "give the path of a labelled JSONL file"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read ({exc.strerror})", "check its permissions"
        ) from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 (byte {exc.start})", "save the file as UTF-8"
        ) from None


def _build_judge(args: argparse.Namespace) -> tuple[Any, str]:
    from nika_tui.services.judges.factory import judge_by_name, select_judge

    if args.tenant and args.judge is None:
        from nika_tui.services.config_store import load_tenant

        selection = select_judge(load_tenant(args.tenant), timeout_s=args.timeout)
        return selection.judge, selection.reason
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ConfigError(
                f"environment variable {args.api_key_env} is not set",
                f"export {args.api_key_env}=… before running, or drop --api-key-env",
            )
    name = args.judge or "rules"
    judge = judge_by_name(
        name,
        cli=args.cli,
        endpoint=args.endpoint,
        model=args.model,
        api_key=api_key,
        timeout_s=args.timeout,
    )
    return judge, name


def _pct(value: float) -> str:
    return f"{value * 100:6.1f}%"


def render_table(report: Any, source: str, note: str = "") -> str:
    """The human-readable report.

    Args:
        report: An :class:`~nika_tui.domain.judge_eval.EvalReport`.
        source: The file evaluated.
        note: Why this judge was chosen (shown when it differs from its name).

    Returns:
        Text for stdout.
    """
    from nika_tui.domain.judge_eval import LABELS

    lines = [f"judge {report.judge} on {source}" + (f" ({note})" if note else "")]
    lines.append(f"  pairs               {report.n}")
    lines.append(f"  accuracy           {_pct(report.accuracy)}")
    lines.append(
        f"  wrong_replace_rate {_pct(report.wrong_replace_rate)}  ({report.wrong_replace} pairs)"
    )
    lines.append("")
    lines.append(f"  {'label':<10} {'precision':>9} {'recall':>8} {'support':>8} {'predicted':>9}")
    for label in LABELS:
        s = report.per_label[label]
        lines.append(
            f"  {label.value:<10} {_pct(s.precision):>9} {_pct(s.recall):>8}"
            f" {s.support:>8} {s.predicted:>9}"
        )
    lines.append("")
    lines.append("  confusion (rows: label, columns: verdict)")
    lines.append("  " + " " * 10 + "".join(f" {v.value:>10}" for v in LABELS))
    for label in LABELS:
        row = report.confusion[label]
        lines.append(f"  {label.value:<10}" + "".join(f" {row[v]:>10}" for v in LABELS))
    if report.misses:
        lines.append("")
        lines.append(f"  misses ({len(report.misses)}):")
        for miss in report.misses[:MAX_MISSES_SHOWN]:
            lines.append(
                f"    {miss.id}: {miss.label.value} judged {miss.verdict.value} — {miss.reason}"
            )
        if len(report.misses) > MAX_MISSES_SHOWN:
            lines.append(f"    … {len(report.misses) - MAX_MISSES_SHOWN} more (use --json)")
    return "\n".join(lines)


def _eval(args: argparse.Namespace) -> int:
    from nika_tui.domain.judge_eval import evaluate, parse_eval_jsonl

    pairs = parse_eval_jsonl(_read(args.file), source=args.file)
    judge, note = _build_judge(args)
    report = evaluate(judge, pairs)
    if args.json:
        data = report.to_dict()
        data["file"] = args.file
        data["selection"] = note
        print_json(data)
    else:
        print(render_table(report, args.file, note if note != report.judge else ""))
    return 0
