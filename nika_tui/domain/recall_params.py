"""Recall's tunable parameters, the ranking they drive, and the quality metric that tunes them.

Pure: the engine's recall and the tuner both rank with :func:`rank_candidates`, so what the
tuner measures for a parameter set is what recall serves with it. Defaults reproduce recall as
it was before tuning existed (RRF order, cosine floor 0.40, limit × 2 candidates, no recency).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

SEED_MAX = 2**32 - 1
"""Largest seed: Optuna's TPE sampler seeds numpy, which takes 0 … 2³² − 1 only."""


def seed_problem(seed: int) -> str | None:
    """Why ``seed`` cannot seed a tuning, or None when it can."""
    if 0 <= seed <= SEED_MAX:
        return None
    return f"--seed must be a whole number from 0 to {SEED_MAX}, got {seed}"


DEFAULT_PALACE_FLOOR = 0.40
"""= ``engine.recall.PALACE_MIN_COSINE`` (chosen in docs/memory.md); a test keeps them equal."""
EVAL_K = 5
"""Recall@k of the metric: the default recall limit."""


@dataclass(frozen=True, slots=True)
class RecallParams:
    """One tenant's recall parameters (the tuner's search space, docs/tuning.md)."""

    palace_floor: float = DEFAULT_PALACE_FLOOR
    """Dense cosine below which a hit is not relevant (PALACE when none is left)."""
    dense_weight: float = 0.0
    """0: rank by the fused (dense + BM25 RRF) score; 1: by the dense cosine; between: a blend."""
    recency_weight: float = 0.0
    """w of ``1 + w·exp(-age/τ)`` applied to the score."""
    recency_tau_days: float = 30.0
    """τ of the recency boost, in days."""
    depth_factor: int = 2
    """Candidates fetched per wanted hit before the floor drops the irrelevant ones."""
    hnsw_ef: int = 0
    """HNSW search breadth of the dense side (0: the store's default). Only shards with an
    HNSW index (built when idle past a size) are affected; smaller ones are searched exactly."""

    def to_fields(self) -> dict[str, str]:
        """Redis hash fields."""
        return {k: repr(v) for k, v in asdict(self).items()}

    @classmethod
    def from_fields(cls, raw: Mapping[str, object]) -> RecallParams:
        """Parse :meth:`to_fields` (missing or unreadable fields keep their default)."""

        def value(name: str, default: float) -> float:
            try:
                parsed = float(str(raw.get(name, default)))
            except ValueError:
                return default
            return parsed if math.isfinite(parsed) else default

        d = cls()
        return cls(
            palace_floor=value("palace_floor", d.palace_floor),
            dense_weight=value("dense_weight", d.dense_weight),
            recency_weight=value("recency_weight", d.recency_weight),
            recency_tau_days=value("recency_tau_days", d.recency_tau_days),
            depth_factor=int(value("depth_factor", d.depth_factor)),
            hnsw_ef=int(value("hnsw_ef", d.hnsw_ef)),
        ).clamped()

    def clamped(self) -> RecallParams:
        """Within the ranges recall accepts."""
        return RecallParams(
            palace_floor=min(0.95, max(0.0, self.palace_floor)),
            dense_weight=min(1.0, max(0.0, self.dense_weight)),
            recency_weight=min(5.0, max(0.0, self.recency_weight)),
            recency_tau_days=min(3650.0, max(0.1, self.recency_tau_days)),
            depth_factor=min(8, max(1, int(self.depth_factor))),
            hnsw_ef=0 if self.hnsw_ef <= 0 else min(4096, max(4, int(self.hnsw_ef))),
        )


@dataclass(frozen=True, slots=True)
class Candidate:
    """A hit before ranking: its fused score (store order), dense cosine and valid time."""

    id: str
    fused: float
    cosine: float
    valid_from_s: float


def rank_candidates(
    cands: Sequence[Candidate], params: RecallParams, limit: int, now_s: float
) -> list[tuple[Candidate, float]]:
    """(candidate, score) of the hits recall returns, best first.

    ``cands`` are in the store's fused order; the first ``limit × depth_factor`` are kept, those
    under the floor dropped, the rest scored ``((1-w)·fused/max fused + w·cosine) × recency``.
    """
    pool = [c for c in cands[: limit * params.depth_factor] if c.cosine >= params.palace_floor]
    if not pool:
        return []
    top = max(c.fused for c in pool) or 1.0
    w = params.dense_weight
    scored = []
    for c in pool:
        score = (1.0 - w) * c.fused / top + w * c.cosine
        if params.recency_weight > 0:
            age = max(0.0, (now_s - c.valid_from_s) / 86400.0)
            score *= 1.0 + params.recency_weight * math.exp(-age / params.recency_tau_days)
        scored.append((c, score))
    scored.sort(key=lambda cs: (-cs[1], -cs[0].cosine))
    return scored[:limit]


@dataclass(frozen=True, slots=True)
class Judged:
    """One labelled query: ids marked useful / not useful, or the expectation of no memory."""

    query: str
    useful: frozenset[str] = frozenset()
    not_useful: frozenset[str] = frozenset()
    expect_none: bool = False
    project_id: str = ""

    @property
    def answerable(self) -> bool:
        """A query with a known useful memory."""
        return bool(self.useful)


def query_score(label: Judged, returned: Sequence[str], k: int = EVAL_K) -> float:
    """One query's quality in [0, 1]: recall@k, abstention, or avoiding what was not useful."""
    top = list(returned[:k])
    if label.expect_none:
        return 1.0 if not top else 0.0
    if label.useful:
        return len(label.useful.intersection(top)) / min(len(label.useful), k)
    if label.not_useful:
        return 1.0 - len(label.not_useful.intersection(top)) / len(label.not_useful)
    return 1.0


def bootstrap_sd(diffs: Sequence[float], seed: int, rounds: int = 1000) -> float:
    """Standard deviation of the mean of ``diffs`` over bootstrap resamples (seeded)."""
    n = len(diffs)
    if n < 2:
        return float("inf")
    rng = random.Random(seed)
    means = [sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(rounds)]
    mu = sum(means) / rounds
    return math.sqrt(sum((m - mu) ** 2 for m in means) / (rounds - 1))


@dataclass(frozen=True, slots=True)
class Decision:
    """The seed's rule applied to one tuning: adopt only past twice the noise."""

    baseline: float
    best: float
    gain: float
    noise_sd: float
    adopt: bool


def decide(baseline: Sequence[float], best: Sequence[float], seed: int) -> Decision:
    """Paired per-query scores of the parameters in force and of the best found.

    The noise is the bootstrap standard deviation of the mean paired difference; the best is
    adopted only when its gain is more than twice that (« on optimise jusqu'au niveau où le
    gain mesuré dépasse 2× l'écart-type du bruit »).
    """
    n = len(baseline)
    diffs = [b - a for a, b in zip(baseline, best, strict=True)]
    gain = sum(diffs) / n if n else 0.0
    sd = bootstrap_sd(diffs, seed)
    return Decision(
        baseline=sum(baseline) / n if n else 0.0,
        best=sum(best) / n if n else 0.0,
        gain=gain,
        noise_sd=sd,
        adopt=gain > 0 and gain > 2 * sd,
    )
