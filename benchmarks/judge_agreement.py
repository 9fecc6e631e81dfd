"""How well independent readers agree with an author's labels (decision 587).

Two readers labelled all 300 pairs of ``tango.jsonl`` (shuffled, renamed ids, no domain,
label or phenomenon), from ``reader-brief.md`` only, while the author's file was kept
encrypted outside the repo. A third read 60 of them, 15 with the two timestamps swapped: by the
brief's backdated convention those become KEEP, so a reader who looked the labels up instead of
reading would answer the author's REPLACE. The readers' answers are in
``tango.readers.jsonl``.

Usage (from the repo root)::

    .venv/bin/python benchmarks/judge_agreement.py
"""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path("tests/data/judge_corpus")


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def main() -> int:
    gold = {str(r["id"]): str(r["label"]) for r in _rows(CORPUS / "tango.jsonl")}
    readers = _rows(CORPUS / "tango.readers.jsonl")
    for name in ("reader_a", "reader_b"):
        same = sum(r[name] == gold[str(r["id"])] for r in readers)
        print(f"{name}: agrees with the author on {same} of {len(readers)}")
    both = sum(r["reader_a"] == r["reader_b"] for r in readers)
    print(f"reader_a and reader_b agree on {both} of {len(readers)}")
    third = [r for r in readers if "reader_c" in r]
    plain = [r for r in third if not r["reader_c_timestamps_swapped"]]
    swapped = [r for r in third if r["reader_c_timestamps_swapped"]]
    same = sum(r["reader_c"] == gold[str(r["id"])] for r in plain)
    print(f"reader_c: agrees with the author on {same} of {len(plain)} unchanged pairs")
    keep = sum(r["reader_c"] == "KEEP" for r in swapped)
    print(f"reader_c: KEEP on {keep} of {len(swapped)} REPLACE pairs shown with swapped timestamps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
