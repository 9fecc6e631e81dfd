"""Unrelated candidates judged REPLACE: how often the offline judge retires a fact for a new
one about something else of the same project.

Supersede asks the judge about every stored memory of the tenant whose cosine with the new
one is at least ``SUPERSEDE_MIN_COSINE`` (0.40). Most of those are about other things. This
crosses each labelled file's pairs within a domain: the old fact of one pair beside the
nearest new fact (by cosine, at least 0.40) of another pair whose subject shares no words
with it (``nika_tui.domain.judge_unrelated``). Every such pair should be KEEP; a REPLACE
loses a true fact and an UNCERTAIN asks a person for nothing.

Counts only on files the judge was not trained on (it says so when a file is in the model's
``training_files``). Usage (from the repo root)::

    .venv/bin/python benchmarks/judge_unrelated.py [FILE...] [--written FILE...] [--model PATH]
        [--show N] [--json OUT]

``--written`` files hold pairs an author wrote about two different things of one project
(every one KEEP); they are judged as they are.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from nika_tui.domain.judge_eval import LabelledPair
from nika_tui.domain.judge_unrelated import as_vectors, texts_of, unrelated_pairs
from nika_tui.domain.ports import Embedder
from nika_tui.domain.verdicts import Verdict
from nika_tui.engine.judge_training import LabelledFile, read_labelled
from nika_tui.engine.supersede import SUPERSEDE_MIN_COSINE
from nika_tui.services.embeddings import open_embedder
from nika_tui.services.judges.offline import OfflineJudge, load_model
from nika_tui.settings import Settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="labelled JSONL files (with a domain field)")
    parser.add_argument(
        "--written",
        nargs="*",
        default=[],
        help="files of pairs written about two things of one project (all KEEP): judged as is",
    )
    parser.add_argument("--model", help="model file (default: the shipped one)")
    parser.add_argument("--show", type=int, default=0, help="print N sampled REPLACEs")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    model = load_model(Path(args.model) if args.model else None)
    trained = model.meta.get("training_files")
    files = [read_labelled(path) for path in args.files]
    written = [read_labelled(path) for path in args.written]
    for f in files + written:
        if isinstance(trained, dict) and f.path in trained:
            print(f"note: {f.path} was trained on; its figure is not held out", file=sys.stderr)
    grouped = [(p, f"{f.path}/{f.domains[p.id]}") for f in files for p in f.pairs]
    grouped = [(p, g) for p, g in grouped if not g.endswith("/")]
    embedder = open_embedder(Settings.from_env())
    texts = texts_of(grouped)
    vectors = as_vectors(texts, embedder.embed(texts))
    crossed = unrelated_pairs(grouped, vectors.__getitem__, 1, SUPERSEDE_MIN_COSINE)
    judge = OfflineJudge(model=model, embedder=embedder)
    figures = {
        "crossed": _judged(judge, [p for p, _ in crossed], len(grouped), args.show),
        "written": _judged(judge, _candidates(embedder, written), 0, args.show),
    }
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", "utf-8")
    return 0


def _candidates(embedder: Embedder, files: list[LabelledFile]) -> list[LabelledPair]:
    """The written pairs supersede would judge: cosine at least ``SUPERSEDE_MIN_COSINE``."""
    pairs = [p for f in files for p in f.pairs]
    if not pairs:
        return []
    olds = embedder.embed([p.old.text for p in pairs])
    news = embedder.embed([p.new.text for p in pairs])
    kept = [
        p
        for p, u, v in zip(pairs, olds, news, strict=True)
        if sum(a * b for a, b in zip(u, v, strict=True)) >= SUPERSEDE_MIN_COSINE
    ]
    print(f"written: {len(kept)} of {len(pairs)} pairs reach supersede's cosine floor")
    return kept


def _judged(
    judge: OfflineJudge, pairs: list[LabelledPair], source: int, show: int
) -> dict[str, object]:
    """Judge ``pairs`` (all meant KEEP) and print the figures."""
    if not pairs:
        return {}
    judged = judge.judge_many([(p.old, p.new) for p in pairs])
    said = Counter(j.verdict.value for j in judged)
    n = len(pairs)
    figures: dict[str, object] = {
        "pairs": source,
        "unrelated_candidates": n,
        "replace": said[Verdict.REPLACE.value],
        "uncertain": said[Verdict.UNCERTAIN.value],
        "keep": said[Verdict.KEEP.value],
        "replace_rate": round(said[Verdict.REPLACE.value] / n, 4) if n else None,
        "uncertain_rate": round(said[Verdict.UNCERTAIN.value] / n, 4) if n else None,
    }
    where = f"crossed from {source} pairs" if source else "written"
    print(
        f"{n} unrelated candidates ({where}): REPLACE"
        f" {said[Verdict.REPLACE.value]} ({100 * said[Verdict.REPLACE.value] / n:.1f} %),"
        f" UNCERTAIN {said[Verdict.UNCERTAIN.value]}"
        f" ({100 * said[Verdict.UNCERTAIN.value] / n:.1f} %), KEEP {said[Verdict.KEEP.value]}"
    )
    replaced = [(p, j) for p, j in zip(pairs, judged, strict=True) if j.verdict is Verdict.REPLACE]
    for p, j in random.Random(1).sample(replaced, min(show, len(replaced))):
        print(f"- {p.old.text} || {p.new.text} | {j.reason}")
    return figures


if __name__ == "__main__":
    raise SystemExit(main())
