"""Retrain the offline judge from labelled files (``nika judge train``) and score it by
leave-one-domain-out (``nika judge eval --lodo``).

The training data is every labelled split in the repo (:data:`DEFAULT_TRAINING_FILES`): the
corpus authors of ``tests/data/judge_corpus/`` (the spent headlines of earlier rounds among
them; ``docs/judges.md`` says which), the two older in-repo sets, the pairs written about two
different things of one project (:data:`UNRELATED_FILES`) and pairs constructed from the
corpus the same way (:mod:`nika_tui.domain.judge_unrelated`). The untouched split the judge is
measured on lives outside the repo and is never read here. Deterministic: same files, same
model file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nika_tui.domain.judge_eval import LabelledPair, parse_eval_jsonl
from nika_tui.domain.judge_example import Example
from nika_tui.domain.judge_features import pair_features
from nika_tui.domain.judge_fit import (
    DEFAULT_KIND,
    DEFAULT_L2,
    DEFAULT_MAX_WRONG_REPLACE,
    train_model,
    with_projection,
)
from nika_tui.domain.judge_model import JudgeModel, decide_pair
from nika_tui.domain.judge_unrelated import (
    TRAIN_MIN_COSINE,
    TRAIN_PER_PAIR,
    as_vectors,
    texts_of,
    unrelated_pairs,
)
from nika_tui.domain.ports import Embedder
from nika_tui.domain.verdicts import Judgement, Verdict
from nika_tui.errors import ConfigError
from nika_tui.services.judges.offline import OfflineJudge

UNRELATED_FILES: tuple[str, ...] = (
    "tests/data/judge_corpus/juliett.jsonl",
    "tests/data/judge_corpus/yankee.jsonl",
    # The ninth round's spent unrelated headline, trained on from the tenth (decision 595).
    "tests/data/judge_corpus/zulu.jsonl",
    # The spent unrelated headline of the tenth round's first freeze (decision 595).
    "tests/data/judge_corpus/omega.jsonl",
)
"""Pairs written about two different things of one project, every one KEEP (decision 590).
They train as the constructed unrelated pairs do: the read-out's "about something else", never
counted in the thresholds or the cross-validated figures."""

DEFAULT_TRAINING_FILES: tuple[str, ...] = (
    "tests/data/judge_corpus/train.jsonl",
    "tests/data/judge_corpus/dev.jsonl",
    "tests/data/judge_corpus/test.jsonl",
    "tests/data/judge_corpus/delta.jsonl",
    "tests/data/judge_corpus/echo.jsonl",
    "tests/data/judge_corpus/foxtrot.jsonl",
    "tests/data/judge_corpus/golf.jsonl",
    "tests/data/judge_corpus/hotel.jsonl",
    "tests/data/judge_corpus/india.jsonl",
    # Spent headlines of the fourth round, trained on from the fifth (decision 535).
    "tests/data/judge_corpus/epsilon.jsonl",
    "tests/data/judge_corpus/kilo.jsonl",
    # Spent headlines of the fifth round, trained on from the sixth (decision 566).
    "tests/data/judge_corpus/lima.jsonl",
    "tests/data/judge_corpus/mike.jsonl",
    # Spent headlines of the sixth round, trained on from the seventh (decision 585).
    "tests/data/judge_corpus/november.jsonl",
    "tests/data/judge_corpus/oscar.jsonl",
    # Spent headlines of the seventh round, and tango (read by three independent readers,
    # decision 587), trained on from the eighth (decision 588).
    "tests/data/judge_corpus/papa.jsonl",
    "tests/data/judge_corpus/quebec.jsonl",
    "tests/data/judge_corpus/tango.jsonl",
    # The headline of the frozen model 7f1e50a1, before the review flood sent it back (588).
    "tests/data/judge_corpus/romeo.jsonl",
    "tests/data/judge_corpus/sierra.jsonl",
    # The headline of the frozen model ae8a67f3, never shipped (decision 588), trained on from
    # the ninth round (decision 590).
    "tests/data/judge_corpus/uniform.jsonl",
    "tests/data/judge_corpus/victor.jsonl",
    # The ninth round's spent headline, trained on from the tenth (decision 595).
    "tests/data/judge_corpus/whiskey.jsonl",
    "tests/data/judge_corpus/xray.jsonl",
    # The spent headline of the tenth round's first freeze 9dc4c4fb (decision 595).
    "tests/data/judge_corpus/kappa.jsonl",
    "tests/data/judge_corpus/lambda.jsonl",
    "tests/data/judge_corpus/sigma.jsonl",
    "tests/data/judge_dev.jsonl",
    "tests/data/judge_holdout.jsonl",
    *UNRELATED_FILES,
)


@dataclass(frozen=True, slots=True)
class LabelledFile:
    """Pairs of one file with each pair's group (its ``domain`` field by default, or its
    ``author``; empty when the line has none)."""

    path: str
    pairs: list[LabelledPair]
    domains: dict[str, str]
    sha256: str


def read_labelled(path: str, group_field: str = "domain") -> LabelledFile:
    """Read a labelled JSONL file (DESIGN.md format, optional ``domain`` / ``author`` per line).

    Args:
        path: The file.
        group_field: The field that groups pairs for leave-one-group-out (``domain`` or
            ``author``).

    Raises:
        ConfigError: The file cannot be read.
        EvalFileError: Invalid lines.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})", "check the path") from None
    text = raw.decode("utf-8", errors="replace")
    pairs = parse_eval_jsonl(text, source=path)
    domains: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            data = json.loads(line)
            domains[str(data.get("id"))] = str(data.get(group_field) or "")
    return LabelledFile(path, pairs, domains, hashlib.sha256(raw).hexdigest())


def examples_of(judge: OfflineJudge, files: Sequence[LabelledFile]) -> list[Example]:
    """Turn labelled files into training examples (one embedder batch per file)."""
    out: list[Example] = []
    for f in files:
        read = judge.read_pairs([(p.old, p.new) for p in f.pairs])
        out += [
            Example(
                p.id, pair_features(p.old, p.new, sim), p.label, f.domains.get(p.id, ""), vector
            )
            for p, (sim, vector) in zip(f.pairs, read, strict=True)
        ]
    return out


def unrelated_examples(
    judge: OfflineJudge, files: Sequence[LabelledFile], embedder: Embedder | None
) -> list[Example]:
    """Constructed unrelated pairs of each file's domains, labelled KEEP and not counted
    (:mod:`nika_tui.domain.judge_unrelated`); none without an embedder."""
    if embedder is None:
        return []
    grouped = [(p, f"{f.path}/{f.domains.get(p.id, '')}") for f in files for p in f.pairs]
    grouped = [(p, g) for p, g in grouped if not g.endswith("/")]
    texts = texts_of(grouped)
    vectors = as_vectors(texts, embedder.embed(texts))
    built = unrelated_pairs(
        grouped, vectors.__getitem__, TRAIN_PER_PAIR, TRAIN_MIN_COSINE, _ASSERTED_UPDATES
    )
    read = judge.read_pairs([(p.old, p.new) for p, _ in built])
    return [
        Example(
            p.id,
            pair_features(p.old, p.new, sim),
            p.label,
            g.rsplit("/", 1)[1],
            vector,
            counted=False,
        )
        for (p, g), (sim, vector) in zip(built, read, strict=True)
    ]


def training_examples(
    judge: OfflineJudge, files: Sequence[LabelledFile], embedder: Embedder | None
) -> list[Example]:
    """Every example ``files`` give a fit: their labelled pairs, the unrelated pairs
    constructed from them, and the pairs of :data:`UNRELATED_FILES` among them (uncounted)."""
    labelled = [f for f in files if f.path not in UNRELATED_FILES]
    written = [f for f in files if f.path in UNRELATED_FILES]
    examples = examples_of(judge, labelled) + unrelated_examples(judge, labelled, embedder)
    return examples + [replace(e, counted=False) for e in examples_of(judge, written)]


_ASSERTED_UPDATES = frozenset({Verdict.REPLACE})
"""Constructed pairs take their new fact from REPLACE pairs: asserted updates, the wording
that retires a fact when the slot is the same."""


def train_from_files(
    paths: Sequence[str],
    embedder: Embedder | None,
    l2: float = DEFAULT_L2,
    max_wrong_replace: float = DEFAULT_MAX_WRONG_REPLACE,
    kind: str = DEFAULT_KIND,
    by_domain: bool = False,
) -> JudgeModel:
    """Fit the offline judge on ``paths`` (see :func:`nika_tui.domain.judge_fit.train_model`).

    Args:
        paths: Labelled JSONL files.
        embedder: The embedder (the shipped model is trained with all-MiniLM-L6-v2).
        l2: L2 strength.
        max_wrong_replace: Cross-validated wrong-REPLACE target.

    Returns:
        The model, its ``meta`` naming the files and their SHA-256.
    """
    files = [read_labelled(p) for p in paths]
    probe = OfflineJudge(model=_EMPTY, embedder=embedder)
    examples = training_examples(probe, files, embedder)
    meta: dict[str, object] = {
        "training_files": {f.path: f.sha256 for f in files},
        "embedder": embedder.name if embedder is not None else None,
    }
    return train_model(
        examples,
        l2=l2,
        max_wrong_replace=max_wrong_replace,
        meta=meta,
        kind=kind,
        by_domain=by_domain,
    )


def write_model(model: JudgeModel, path: Path) -> None:
    """Write the model JSON (stable key order, so a retrain diffs cleanly)."""
    path.write_text(json.dumps(model.to_dict(), indent=1, sort_keys=True) + "\n", "utf-8")


def lodo(
    eval_files: Sequence[LabelledFile],
    extra_training: Sequence[LabelledFile],
    embedder: Embedder | None,
    l2: float = DEFAULT_L2,
    max_wrong_replace: float = DEFAULT_MAX_WRONG_REPLACE,
    kind: str = DEFAULT_KIND,
) -> list[tuple[str, list[tuple[LabelledPair, Judgement]]]]:
    """Leave-one-group-out (domain or author, as the files were read): for each group of
    ``eval_files``, train on every other pair of ``eval_files`` plus ``extra_training`` (same
    thresholds procedure), judge that group. Pairs without a group (the older in-repo sets)
    are always trained on, never held out.

    Returns:
        ``(group, [(pair, judgement)…])`` per group, groups sorted.
    """
    probe = OfflineJudge(model=_EMPTY, embedder=embedder)
    labelled = [(p, f.domains.get(p.id, "")) for f in eval_files for p in f.pairs]
    examples = examples_of(probe, eval_files)
    # Constructed unrelated pairs train as in ``train_from_files``; the held-out group's own
    # are left out with it.
    built = unrelated_examples(probe, eval_files, embedder)
    extra = training_examples(probe, extra_training, embedder)
    by_id = {e.id: e for e in examples}
    out: list[tuple[str, list[tuple[LabelledPair, Judgement]]]] = []
    for domain in sorted({d for _, d in labelled if d}):
        train = [e for e in examples + built if e.group != domain] + extra
        model = train_model(train, l2=l2, max_wrong_replace=max_wrong_replace, kind=kind)
        held_out = [by_id[pair.id] for pair, d in labelled if d == domain]
        if model.projection is not None:
            held_out = with_projection(held_out, model.projection)
        features = {e.id: e.features for e in held_out}
        results = []
        for pair, d in labelled:
            if d != domain:
                continue
            decision = decide_pair(model, features[pair.id])
            results.append((pair, Judgement(decision.verdict, decision.reason, "offline-lodo")))
        out.append((domain, results))
    return out


_EMPTY = JudgeModel((), (), (), (), (), 1.0, 1.0)
"""A placeholder model for feature extraction only (never asked to decide)."""
