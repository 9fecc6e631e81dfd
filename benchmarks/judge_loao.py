"""Leave-one-author-out for the offline judge, with every expensive step cached.

The same fitting code as ``nika judge eval --loao`` (``engine.judge_training.lodo`` →
``domain.judge_fit.train_model``), but:

- each pair's embedder read-out (cosines, pair vector) is computed once and kept on disk
  (``~/.cache/nika-os/judge_loao/reads-*.pkl``, keyed by the pair's texts);
- each held-out author's fit (slot read-out, out-of-fold trees, final trees) is kept on disk,
  keyed by the SHA-256 of the training features and labels, so a change of the decision rules
  or of the wrong-REPLACE target re-scores in seconds, and a change of the features refits;
- ``--targets`` scores several cross-validated wrong-REPLACE targets from the same fits.

Figures match the CLI's ``--loao`` (the same folds, fits and thresholds); the CLI embeds per
file, this script per pair set, which can move a cosine in the last float bits.

Usage (from the repo root)::

    .venv/bin/python benchmarks/judge_loao.py [--targets 0.01,0.015] [--misses] [--json OUT]

Default files: the twenty-two corpus authors plus the two older in-repo sets (always trained on).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from nika_tui.domain.judge_example import Example
from nika_tui.domain.judge_features import as_read, pair_features
from nika_tui.domain.judge_fit import (
    DEFAULT_FOLDS,
    _fit_set,
    _slots_out_of_fold,
    build_model,
    fit_projection,
    fold_of,
    learns_outside,
    with_projection,
)
from nika_tui.domain.judge_model import JudgeModel, rule_verdict
from nika_tui.domain.judge_thresholds import (
    choose_correction_threshold,
    choose_same_time_threshold,
    choose_thresholds,
)
from nika_tui.domain.judge_unrelated import (
    TRAIN_MIN_COSINE,
    TRAIN_PER_PAIR,
    as_vectors,
    texts_of,
    unrelated_pairs,
)
from nika_tui.domain.verdicts import Verdict
from nika_tui.engine.judge_training import _EMPTY, UNRELATED_FILES, read_labelled
from nika_tui.engine.supersede import SUPERSEDE_MIN_COSINE

CORPUS = "tests/data/judge_corpus"
AUTHORS = (
    "train",
    "dev",
    "test",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "epsilon",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "tango",
    "romeo",
    "sierra",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "kappa",
    "lambda",
    "sigma",
)
OLDER = ("tests/data/judge_dev.jsonl", "tests/data/judge_holdout.jsonl")
# UNRELATED_FILES (pairs written about two things of one project) are always trained on, as
# about something else; never held out (every pair is KEEP).
FILES = (*(f"{CORPUS}/{a}.jsonl" for a in AUTHORS), *OLDER)
CACHE = Path.home() / ".cache" / "nika-os" / "judge_loao"


def _key(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:24]


def _pair_key(pair: Any) -> str:
    """A pair's read-out key: the texts as the judge reads them (digit groups joined)."""
    return _key(as_read(pair.old).text, as_read(pair.new).text)


def _write(path: Path, data: bytes) -> None:
    """A cache file, 0600 (it holds the corpus's texts' read-outs)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def read_examples(paths: list[str]) -> tuple[list[Example], list[Example], list[Example]]:
    """Examples of every file, the group being the author, then the constructed unrelated
    pairs of each author's domains: those training adds (as ``nika judge train`` does) and
    those measured (each old fact beside its nearest unrelated new fact at supersede's floor,
    as ``benchmarks/judge_unrelated.py`` measures). Embedder read-outs cached."""
    from nika_tui.services.embeddings import open_embedder
    from nika_tui.services.judges.offline import OfflineJudge
    from nika_tui.settings import Settings

    files = [read_labelled(p, "author") for p in paths]
    domains = {p.id: d for path in paths for p, d in _domains(path)}
    CACHE.mkdir(mode=0o700, parents=True, exist_ok=True)
    store = CACHE / "reads.pkl"
    reads: dict[str, Any] = pickle.loads(store.read_bytes()) if store.exists() else {}
    embedder = open_embedder(Settings.from_env())
    author = {p.id: f.domains[p.id] for f in files for p in f.pairs}
    grouped = [(p, f"{author[p.id]}/{domains[p.id]}") for f in files for p in f.pairs]
    grouped = [(p, g) for p, g in grouped if author[p.id]]
    texts = texts_of(grouped)
    vectors = as_vectors(texts, embedder.embed(texts))
    trained = unrelated_pairs(
        grouped, vectors.__getitem__, TRAIN_PER_PAIR, TRAIN_MIN_COSINE, frozenset({Verdict.REPLACE})
    )
    measured = unrelated_pairs(grouped, vectors.__getitem__, 1, SUPERSEDE_MIN_COSINE)
    written = [p for path in UNRELATED_FILES for p, _ in _domains(path)]
    pairs = [p for f in files for p in f.pairs] + [p for p, _ in trained + measured] + written
    missing = list({_pair_key(p): p for p in pairs if _pair_key(p) not in reads}.values())
    if missing:
        probe = OfflineJudge(model=_EMPTY, embedder=embedder)
        read_out = probe.read_pairs([(p.old, p.new) for p in missing])
        for p, read in zip(missing, read_out, strict=True):
            reads[_pair_key(p)] = read
        _write(store, pickle.dumps(reads))

    def example(p: Any, group: str, counted: bool = True) -> Example:
        sim, vector = reads[_pair_key(p)]
        features = pair_features(p.old, p.new, sim)
        return Example(p.id, features, p.label, group, vector, counted)

    out = [example(p, f.domains[p.id]) for f in files for p in f.pairs]
    built = [example(p, g.split("/")[0], False) for p, g in trained]
    built += [example(p, "", False) for p in written]
    held = [example(p, g.split("/")[0], False) for p, g in measured]
    return out, built, held


def _domains(path: str) -> list[tuple[Any, str]]:
    f = read_labelled(path, "domain")
    return [(p, f.domains[p.id]) for p in f.pairs]


Oof = list[tuple[Example, dict[Verdict, float]]]


def fit_fold(train: list[Example]) -> tuple[Oof, JudgeModel]:
    """``train_model``'s fitting, keeping the out-of-fold probabilities: (oof, final model
    without thresholds)."""
    digest = hashlib.sha256(repr(_trees()).encode())
    for e in train:
        digest.update(repr((e.id, e.label.value, e.features.values, e.features.gated)).encode())
    store = CACHE / f"fold-{digest.hexdigest()[:24]}.pkl"
    if store.exists():
        cached: tuple[Oof, JudgeModel] = pickle.loads(store.read_bytes())
        return cached
    projection = fit_projection(_fit_set([e for e in train if e.vector], True))
    examples = _slots_out_of_fold(train, DEFAULT_FOLDS, True)
    oof: Oof = []
    for k in range(DEFAULT_FOLDS):
        inner = [e for e in examples if learns_outside(e.id, k, DEFAULT_FOLDS)]
        model = build_model(_fit_set(inner, True))
        oof += [
            (e, model.probabilities(e.features.values))
            for e in examples
            # Uncounted pairs too: the correction threshold reads them (decision 594).
            if fold_of(e.id, DEFAULT_FOLDS) == k
        ]
    final = build_model(_fit_set(examples, True), projection=projection)
    _write(store, pickle.dumps((oof, final)))
    return oof, final


def _trees() -> tuple[int, int, float]:
    from nika_tui.domain import judge_fit

    return judge_fit.TREE_DEPTH, judge_fit.TREE_STAGES, judge_fit.TREE_LEARNING_RATE


def _regated(cached: Example, current: Example) -> Example:
    """``cached`` (its out-of-fold slot values) with this run's gates."""
    return replace(cached, features=replace(current.features, values=cached.features.values))


class _Fixed:
    """A stand-in with fixed probabilities, for ``choose_thresholds``."""

    def __init__(self, probs: dict[Verdict, float]) -> None:
        self._probs = probs

    def probabilities(self, values: object) -> dict[Verdict, float]:
        return self._probs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", default=list(FILES))
    parser.add_argument("--targets", default="0.01", help="wrong-REPLACE targets, comma-separated")
    parser.add_argument("--misses", action="store_true", help="print the missed REPLACE pairs")
    parser.add_argument("--json", help="write the per-author figures here")
    parser.add_argument("--trees", help="depth,stages,learning rate (an experiment)")
    parser.add_argument(
        "--no-unrelated",
        action="store_true",
        help="train without the unrelated pairs (constructed and written)",
    )
    parser.add_argument("--hold", help="hold out only these authors (comma-separated)")
    args = parser.parse_args()
    if args.trees:
        from nika_tui.domain import judge_fit

        depth, stages, rate = args.trees.split(",")
        judge_fit.TREE_DEPTH, judge_fit.TREE_STAGES = int(depth), int(stages)
        judge_fit.TREE_LEARNING_RATE = float(rate)
    examples, built, measured = read_examples(args.files)
    if args.no_unrelated:
        built = []
    by_id = {e.id: e for e in examples}
    authors = sorted({e.group for e in examples if e.group})
    if args.hold:
        authors = [a for a in authors if a in args.hold.split(",")]
    targets = [float(t) for t in args.targets.split(",")]
    results: dict[float, list[tuple[Example, Verdict, str]]] = {t: [] for t in targets}
    unrelated: dict[float, list[tuple[Example, Verdict]]] = {t: [] for t in targets}
    for author in authors:
        train = [e for e in examples + built if e.group != author]
        oof, final = fit_fold(train)
        # The fit is cached by the features' values; the gates are read from this run's
        # features, so a change of the decision rules needs no refit.
        pairs = [(_Fixed(p), _regated(e, by_id[e.id])) for e, p in oof if e.counted]
        others = [(_Fixed(p), e) for e, p in oof if not e.counted]
        held = with_projection([e for e in examples if e.group == author], final.projection)  # type: ignore[arg-type]
        crossed = with_projection([e for e in measured if e.group == author], final.projection)  # type: ignore[arg-type]
        for target in targets:
            t_r, t_k = choose_thresholds(pairs, target)  # type: ignore[arg-type]
            t_same = choose_same_time_threshold(pairs, t_r, t_k)  # type: ignore[arg-type]
            t_corr = choose_correction_threshold(pairs, others, (t_r, t_k, t_same))  # type: ignore[arg-type]
            model = replace(final, replace_threshold=t_r, keep_threshold=t_k)
            for e in held:
                p = model.probabilities(e.features.values)
                verdict, why, _ = rule_verdict(
                    e.features, p[Verdict.REPLACE], p[Verdict.KEEP], t_r, t_k, 0.0, t_same, t_corr
                )
                results[target].append((e, verdict, f"{why} r={p[Verdict.REPLACE]:.2f}"))
            for e in crossed:
                p = model.probabilities(e.features.values)
                verdict = rule_verdict(
                    e.features, p[Verdict.REPLACE], p[Verdict.KEEP], t_r, t_k, 0.0, t_same, t_corr
                )[0]
                unrelated[target].append((e, verdict))
            print(f"{author}: target {target} thresholds {t_r} / {t_k}", file=sys.stderr)
    report: dict[str, Any] = {}
    for target, rows in results.items():
        print(f"\n== wrong-REPLACE target {target}")
        per: dict[str, Any] = {}
        for author in [*authors, "ALL"]:
            mine = [r for r in rows if author in ("ALL", r[0].group)]
            n = len(mine)
            ok = sum(v is e.label for e, v, _ in mine)
            wrong = sum(v is Verdict.REPLACE and e.label is not Verdict.REPLACE for e, v, _ in mine)
            rep = [r for r in mine if r[0].label is Verdict.REPLACE]
            recall = sum(v is Verdict.REPLACE for _, v, _ in rep) / max(1, len(rep))
            per[author] = {"n": n, "accuracy": ok / n, "wrong_replace": wrong, "recall": recall}
            print(
                f"{author:<10} n={n:<5} acc {100 * ok / n:5.1f}%  wrongR {100 * wrong / n:4.2f}%"
                f" ({wrong})  R-recall {100 * recall:5.1f}%"
            )
        said = Counter(v.value for _, v in unrelated[target])
        n_crossed = max(1, len(unrelated[target]))
        print(
            f"unrelated candidates: n={len(unrelated[target])}  REPLACE"
            f" {100 * said['REPLACE'] / n_crossed:4.1f}%  UNCERTAIN"
            f" {100 * said['UNCERTAIN'] / n_crossed:4.1f}%"
        )
        per["unrelated"] = {"n": len(unrelated[target]), **said}
        confusion = Counter((e.label.value, v.value) for e, v, _ in rows)
        print("confusion", dict(sorted(confusion.items())))
        paths = Counter(
            (v.value, why.split()[0]) for e, v, why in rows if e.label is Verdict.REPLACE
        )
        print("REPLACE pairs by path", dict(sorted(paths.items())))
        report[str(target)] = per
        if args.misses:
            for e, v, why in rows:
                if v is not e.label:
                    print(f"  {e.label.value}->{v.value} [{why}] {e.id}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
