"""Precision and recall of the importer's "goes to semantic" split on labelled session turns.

Each labelled turn (``tests/data/import_split/*.jsonl``: ``text`` and the ``semantic``
sentences a person picked, by hand, before the extractor existed) is run through
:func:`nika_tui.domain.fact_sentences.fact_sentences`. A picked sentence is a true positive when
it is one of the labelled sentences (whitespace-insensitive). Reported per sentence (precision,
recall) and per turn (does the turn send anything to semantic), for the held-out set; the tuning
set is reported apart, and only the held-out numbers go in the docs.

``independent.jsonl`` (70 turns, 56 semantic sentences) was written by a separate session that
never saw the code, after the extractor was frozen, and scored once: it is the reported number.

Run: ``.venv/bin/python benchmarks/import_split.py [holdout|tuning|independent|both]`` (default
both: all three); writes ``benchmarks/results/import_split.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from nika_tui.domain.fact_sentences import fact_sentences

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "import_split"
RESULTS = Path(__file__).resolve().parent / "results" / "import_split.json"


def _norm(text: str) -> str:
    return " ".join(text.split())


def score(name: str) -> dict[str, Any]:
    """Precision / recall of one labelled set, with the misses and the false picks."""
    rows = [json.loads(line) for line in (DATA / f"{name}.jsonl").read_text().splitlines()]
    tp = fp = fn = 0
    turn_tp = turn_fp = turn_fn = 0
    errors: list[dict[str, Any]] = []
    for row in rows:
        expected = {_norm(s) for s in row["semantic"]}
        picked = {_norm(s) for s in fact_sentences(row["text"])}
        tp += len(picked & expected)
        fp += len(picked - expected)
        fn += len(expected - picked)
        turn_tp += bool(picked) and bool(expected)
        turn_fp += bool(picked) and not expected
        turn_fn += not picked and bool(expected)
        if picked != expected:
            errors.append(
                {
                    "id": row["id"],
                    "false_picks": sorted(picked - expected),
                    "missed": sorted(expected - picked),
                }
            )
    return {
        "set": name,
        "turns": len(rows),
        "labelled_sentences": tp + fn,
        "picked_sentences": tp + fp,
        "sentence_precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "sentence_recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "turn_precision": round(turn_tp / (turn_tp + turn_fp), 3) if turn_tp + turn_fp else None,
        "turn_recall": round(turn_tp / (turn_tp + turn_fn), 3) if turn_tp + turn_fn else None,
        "errors": errors,
    }


def main(argv: list[str]) -> None:
    """Score the sets named on the command line and write the results file."""
    which = argv[0] if argv else "both"
    names = ["tuning", "holdout", "independent"] if which == "both" else [which]
    results = {name: score(name) for name in names}
    for name, r in results.items():
        print(
            f"{name}: {r['turns']} turns, {r['labelled_sentences']} labelled sentences; "
            f"sentence precision {r['sentence_precision']} recall {r['sentence_recall']}; "
            f"turn precision {r['turn_precision']} recall {r['turn_recall']}"
        )
    if which == "both":
        RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
