"""``nika context PATH``: the context fill of one Claude Code or Codex transcript."""

from __future__ import annotations

import argparse
from typing import Any

from nika_tui.cli.common import add_json_flag, print_json


def _handle(args: argparse.Namespace) -> int:
    from nika_tui.domain.context_fill import COMPACTION_THRESHOLD_PERCENT
    from nika_tui.services.transcripts.read import read_fill

    fill = read_fill(args.path, model=args.model)
    if args.json:
        print_json({"path": str(args.path), **fill.to_json()})
        return 0
    flag = (
        "  (at or past the 61% compaction threshold)"
        if (fill.fill_percent >= COMPACTION_THRESHOLD_PERCENT)
        else ""
    )
    state = "  (just compacted)" if fill.compacted else ""
    print(
        f"{fill.format.value}: {fill.fill_percent:.1f}% of {fill.window:,} tokens "
        f"({fill.tokens:,} in context){flag}{state}"
    )
    return 0


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """``nika context PATH [--model M] [--json]``."""
    parser = sub.add_parser(
        "context",
        help="context fill of an agent transcript (Claude Code .jsonl or Codex rollout)",
        description="Report how full an agent's context window is, from its transcript file: "
        "fill_percent, tokens, window and format.",
    )
    parser.add_argument("path", help="transcript file (.jsonl)")
    parser.add_argument(
        "--model", default=None, help="the agent's model, e.g. 'claude-sonnet-4-5[1m]' (1M window)"
    )
    add_json_flag(parser)
    parser.set_defaults(handler=_handle)
