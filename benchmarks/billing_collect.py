"""Billing's cost inside a hook: reading a transcript's new usage lines into the billing log.

Builds a Claude Code transcript of ``--mb`` megabytes (the sample session's lines repeated with
distinct message ids) in a temp data dir, then measures, in one run:

- the floor: reading the same bytes and ``json.loads`` of every line, nothing else;
- billing the whole session met for the first time (1 MiB per hook run, several runs);
- a run with no new lines, and a run with one new line (cursor fsync included).

Reported as ratios to the floor. Prints JSON.

    .venv/bin/python benchmarks/billing_collect.py [--mb 5]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "tests" / "data" / "claude" / "transcript_session.jsonl"


def build(path: Path, megabytes: float) -> int:
    lines = SAMPLE.read_text().splitlines()
    n = 0
    with open(path, "w") as fh:
        while fh.tell() < megabytes * 1_000_000:
            for line in lines:
                rec = json.loads(line)
                if rec.get("type") == "assistant":
                    rec["message"]["id"] = f"m{n}"
                    n += 1
                fh.write(json.dumps(rec) + "\n")
    return n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=5.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["NIKA_OS_DATA_DIR"] = str(Path(tmp) / "data")
        from nika_tui.billing.collect import collect_transcript

        path = Path(tmp) / "session.jsonl"
        messages = build(path, args.mb)
        t = time.perf_counter()
        with open(path, "rb") as fh:
            parsed = sum(1 for raw in fh if json.loads(raw))
        floor = time.perf_counter() - t
        now = datetime.now(UTC)
        runs: list[float] = []
        billed = 0
        while True:
            t = time.perf_counter()
            got = collect_transcript("bench", path, {}, now, None)
            runs.append(time.perf_counter() - t)
            billed += len(got)
            if not got:
                break
        idle = runs[-1]
        with open(path, "a") as fh:
            rec = {"type": "assistant", "message": {"id": "last", "model": "m",
                   "usage": {"input_tokens": 1, "output_tokens": 1}}}  # fmt: skip
            fh.write(json.dumps(rec) + "\n")
        t = time.perf_counter()
        collect_transcript("bench", path, {}, now, None)
        one = time.perf_counter() - t
    first = sum(runs[:-1])
    print(json.dumps({
        "transcript_mb": args.mb, "lines": parsed, "messages": messages, "billed": billed,
        "floor_read_parse_s": round(floor, 4),
        "first_meeting_total_s": round(first, 4), "first_meeting_runs": len(runs) - 1,
        "first_meeting_max_run_s": round(max(runs[:-1]), 4),
        "ratio_first_meeting_to_floor": round(first / floor, 2),
        "no_new_lines_ms": round(idle * 1000, 2), "one_new_line_ms": round(one * 1000, 2),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
