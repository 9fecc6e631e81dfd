"""`nika judge eval FILE... [--judge offline|rules|agent-cli|http] [--cascade] [--lodo|--loao]`:
score a judge, one report per file (split); `nika judge train`: refit the offline judge.

The file format is DESIGN.md's (see :mod:`nika_tui.domain.judge_eval`). The human output is a
table; ``--json`` prints the report (``n``, ``accuracy``, ``wrong_replace_rate``,
``per_label``, ``confusion``, ``misses``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json, settings_of
from nika_tui.errors import ConfigError

MAX_MISSES_SHOWN = 20


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add ``nika judge``."""
    judge = sub.add_parser("judge", help="supersede judges: evaluate on labelled pairs")
    judge_sub = judge.add_subparsers(dest="judge_command", metavar="SUBCOMMAND")
    ev = judge_sub.add_parser("eval", help="score a judge on a labelled JSONL file")
    ev.add_argument(
        "files", nargs="+", metavar="FILE", help="labelled pairs (JSONL, DESIGN.md format)"
    )
    ev.add_argument(
        "--judge",
        choices=("offline", "rules", "agent-cli", "http"),
        default=None,
        help="judge to score (default: offline, or the tenant's judge with --tenant)",
    )
    ev.add_argument(
        "--cascade",
        action="store_true",
        help="with --judge agent-cli|http: report the offline tier, the LLM tier and the cascade",
    )
    ev.add_argument(
        "--lodo",
        action="store_true",
        help="leave-one-domain-out: retrain the offline judge without each domain of the files",
    )
    ev.add_argument(
        "--loao",
        action="store_true",
        help="leave-one-author-out: retrain the offline judge without each author of the files",
    )
    ev.add_argument(
        "--lodo-kind", choices=("lr", "gbt"), default="gbt", help="--lodo: which model to refit"
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
    tr = judge_sub.add_parser("train", help="refit the offline judge on the training split")
    tr.add_argument(
        "files",
        nargs="*",
        metavar="FILE",
        help="training files (default: every labelled split in the repo, docs/judges.md)",
    )
    tr.add_argument("--out", help="model file to write (default: the shipped model)")
    tr.add_argument(
        "--max-wrong-replace",
        type=float,
        default=None,
        help="cross-validated wrong-REPLACE target for the thresholds (default 0.0125)",
    )
    tr.add_argument(
        "--kind", choices=("lr", "gbt"), default="gbt", help="model: boosted trees or regression"
    )
    tr.add_argument(
        "--by-domain", action="store_true", help="calibrate thresholds on held-out domains"
    )
    add_json_flag(tr)
    tr.set_defaults(handler=_train)
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

        where = settings_of(args).roots
        selection = select_judge(load_tenant(args.tenant, where), where, timeout_s=args.timeout)
        return selection.judge, selection.reason
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise ConfigError(
                f"environment variable {args.api_key_env} is not set",
                f"export {args.api_key_env}=… before running, or drop --api-key-env",
            )
    name = args.judge or "offline"
    judge = judge_by_name(
        name,
        cli=args.cli,
        endpoint=args.endpoint,
        model=args.model,
        api_key=api_key,
        timeout_s=args.timeout,
        embedder=_embedder(args) if name == "offline" else None,
    )
    return judge, name


def _embedder(args: argparse.Namespace) -> Any:
    from nika_tui.services.embeddings import open_embedder

    return open_embedder(settings_of(args))


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
    from nika_tui.domain.judge_eval import parse_eval_jsonl

    splits = [(path, parse_eval_jsonl(_read(path), source=path)) for path in args.files]
    if args.lodo or args.loao:
        return _eval_lodo(args)
    judge, note = _build_judge(args)
    reports: list[tuple[str, Any]] = []
    for path, pairs in splits:
        reports += [(path, r) for r in _reports_for(args, judge, pairs)]
    if args.json:
        out = []
        for path, report in reports:
            data = report.to_dict()
            data["file"] = path
            data["selection"] = note
            out.append(data)
        print_json(out[0] if len(out) == 1 else out)
    else:
        print(
            "\n\n".join(
                render_table(report, path, note if note != report.judge else "")
                for path, report in reports
            )
        )
    return 0


def _reports_for(args: argparse.Namespace, judge: Any, pairs: list[Any]) -> list[Any]:
    """One report, or three with ``--cascade`` (offline tier, LLM tier, cascade)."""
    from nika_tui.domain.judge_eval import score

    facts = [(p.old, p.new) for p in pairs]
    if not args.cascade:
        many = getattr(judge, "judge_many", None)
        answers = many(facts) if callable(many) else [judge.judge(o, n) for o, n in facts]
        return [score(judge.name, zip(pairs, answers, strict=True))]
    if not hasattr(judge, "judge_batch"):
        raise ConfigError(
            "--cascade needs an LLM judge", "add --judge agent-cli or --judge http --endpoint URL"
        )
    from nika_tui.services.judges.cascade import CascadeJudge
    from nika_tui.services.judges.factory import offline_judge

    offline = offline_judge(_embedder(args))
    cascade = CascadeJudge(offline, judge)
    llm_answers: list[Any] = []
    for start in range(0, len(facts), cascade.max_batch):
        llm_answers += judge.judge_batch(facts[start : start + cascade.max_batch])
    return [
        score(offline.name, zip(pairs, offline.judge_many(facts), strict=True)),
        score(judge.name, zip(pairs, llm_answers, strict=True)),
        score(cascade.name, zip(pairs, cascade.judge_many(facts), strict=True)),
    ]


def _eval_lodo(args: argparse.Namespace) -> int:
    from nika_tui.domain.judge_eval import score
    from nika_tui.engine.judge_training import lodo, read_labelled

    group = "author" if args.loao else "domain"
    name = "offline-loao" if args.loao else "offline-lodo"
    files = [read_labelled(path, group) for path in args.files]
    per_domain = lodo(files, [], _embedder(args), kind=args.lodo_kind)
    reports = [(d, score(name, results)) for d, results in per_domain]
    everything = [r for _, results in per_domain for r in results]
    total = score(name, everything)
    if args.json:
        data = total.to_dict()
        data["files"] = list(args.files)
        data["authors" if args.loao else "domains"] = {
            d: {
                "n": r.n,
                "accuracy": round(r.accuracy, 4),
                "wrong_replace_rate": round(r.wrong_replace_rate, 4),
            }
            for d, r in reports
        }
        print_json(data)
        return 0
    lines = [f"leave-one-{group}-out on {', '.join(args.files)}"]
    for d, r in reports:
        lines.append(
            f"  {d:<16} n={r.n:<4} accuracy {_pct(r.accuracy)}"
            f"  wrong_replace {_pct(r.wrong_replace_rate)}"
        )
    print("\n".join(lines) + "\n\n" + render_table(total, "all domains"))
    return 0


def _train(args: argparse.Namespace) -> int:
    from nika_tui.engine.judge_training import (
        DEFAULT_TRAINING_FILES,
        train_from_files,
        write_model,
    )
    from nika_tui.services.judges.offline import default_model_path

    files = list(args.files) or list(DEFAULT_TRAINING_FILES)
    for path in files:
        _read(path)  # one clear error for a missing or non-UTF-8 file
    kwargs: dict[str, Any] = {}
    if args.max_wrong_replace is not None:
        kwargs["max_wrong_replace"] = args.max_wrong_replace
    model = train_from_files(
        files, _embedder(args), kind=args.kind, by_domain=args.by_domain, **kwargs
    )
    out = Path(args.out) if args.out else default_model_path()
    write_model(model, out)
    summary: dict[str, Any] = {"model": str(out), **model.meta}
    summary["replace_threshold"] = model.replace_threshold
    summary["keep_threshold"] = model.keep_threshold
    summary["same_time_keep_threshold"] = model.same_time_keep_threshold
    summary["correction_threshold"] = model.correction_threshold
    if args.json:
        print_json(summary)
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0
