"""``tune.recall``: search recall's parameters on a tenant's labels; adopt only past 2× noise.

1. The relevance set (``relevance.py``) is embedded once and each query's candidates fetched
   once from the store, as deep as any trial may look (``limit × 8``, with vectors).
2. A seeded TPE study (Optuna) searches :class:`RecallParams`; the parameters in force are the
   first trial, so a tie keeps them. Each trial ranks the cached candidates with the same
   :func:`rank_candidates` recall uses and scores every query (recall@5, abstention); every trial
   is appended to ``{data}/tenants/{t}/tuning/optimisation.jsonl`` (0600) with its parameters,
   metric, a bootstrap noise estimate and the seed.
3. The best trial is compared with the parameters in force query by query; the gain must exceed
   twice the bootstrap standard deviation of the paired difference (the seed's rule). Then,
   as ``auto_actions.tune`` allows: autonomous → adopted; escalate → a ``tune.adopt``
   confirmation holding the parameters; off → logged only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.recall_params import (
    EVAL_K,
    Candidate,
    Judged,
    RecallParams,
    bootstrap_sd,
    decide,
    query_score,
    rank_candidates,
    seed_problem,
)
from nika_tui.domain.tenant import AutoMode
from nika_tui.engine.context import EngineContext
from nika_tui.errors import ValidationFailed
from nika_tui.services.confirmation_queue import pending_confirmation, queue_confirmation
from nika_tui.services.recall_params import (
    adopt_params,
    last_tuning,
    read_params,
    record_tuning,
)
from nika_tui.services.relevance_log import append_jsonl, tuning_dir
from nika_tui.tuning.relevance import load_set

log = logging.getLogger("nika.tuning")

MIN_QUERIES = 8
"""Fewer labelled queries than this cannot tell a gain from noise: tuning refuses."""
MAX_DEPTH = 8
"""Deepest candidate fetch of any trial (``depth_factor`` ≤ this)."""
DEFAULT_TRIALS = 40
TUNE_CONFIRMATION = "tune.adopt"


EF_CHOICES = (0, 64, 128, 256, 512)
"""HNSW ``ef`` values a study picks from (0: the store's default, 100 in Qdrant). A grid, not
a range: each value costs one fetch of every query's candidates (``ef`` changes what the store
returns, not only their order), cached before the trials. None is below ``EVAL_K × MAX_DEPTH``
(40): Qdrant searches with ``max(ef, limit)``, so a smaller ef would be measured here at 40
(the tuner's fetch) but served at recall's smaller limit — not what was measured."""


def fetch_candidates(
    ctx: EngineContext,
    tenant_id: str,
    judged: Sequence[Judged],
    k: int = EVAL_K,
    hnsw_ef: int = 0,
    vectors: Sequence[Sequence[float]] | None = None,
) -> list[list[Candidate]]:
    """Each labelled query's candidates, in fused order, as deep as any trial looks."""
    if vectors is None:
        vectors = ctx.embedder.embed([j.query for j in judged])
    out: list[list[Candidate]] = []
    for label, vector in zip(judged, vectors, strict=True):
        equals = {"status": Status.CURRENT.value}
        if label.project_id:
            equals["project_id"] = label.project_id
        cands: list[Candidate] = []
        for layer in Layer:
            for p in ctx.vectors.search_hybrid(
                tenant_id,
                layer,
                vector,
                label.query,
                flt=PointFilter(equals=equals),
                limit=k * MAX_DEPTH,
                with_vectors=True,
                hnsw_ef=hnsw_ef or None,
            ):
                cosine = float(sum(a * b for a, b in zip(vector, p.vector or [], strict=False)))
                valid = str(p.payload.get("valid_from", ""))
                cands.append(Candidate(p.id, p.score, cosine, _ts(valid)))
        cands.sort(key=lambda c: -c.fused)
        out.append(cands)
    return out


def _ts(iso: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return 0.0


def scores(
    judged: Sequence[Judged], cands: Sequence[Sequence[Candidate]], p: RecallParams, now_s: float
) -> list[float]:
    """Per-query quality of parameters ``p`` on the cached candidates."""
    return [
        query_score(label, [c.id for c, _ in rank_candidates(cs, p, EVAL_K, now_s)])
        for label, cs in zip(judged, cands, strict=True)
    ]


def tune(
    ctx: EngineContext,
    tenant_id: str,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    judged: Sequence[Judged] | None = None,
) -> dict[str, Any]:
    """Run one tuning of the tenant's recall (see the module docstring); return its summary.

    Raises:
        ValidationFailed: fewer than :data:`MIN_QUERIES` labelled queries, or ``trials`` < 1.
    """
    import optuna

    if trials < 1:
        raise ValidationFailed(f"--trials must be at least 1, got {trials}", "e.g. --trials 40")
    config = ctx.tenant(tenant_id)
    labels = list(judged) if judged is not None else load_set(tenant_id, ctx.settings.roots)
    if len(labels) < MIN_QUERIES:
        raise ValidationFailed(
            f"tenant {tenant_id} has {len(labels)} labelled queries; tuning needs {MIN_QUERIES}",
            "mark recall results with `nika memory feedback --tenant "
            f"{tenant_id} --query Q --useful ID` (or --not-useful ID, or --none)",
        )
    now = ctx.clock()
    now_s = now.timestamp()
    current, _ = read_params(ctx.redis, tenant_id)
    vectors = ctx.embedder.embed([j.query for j in labels])
    choices = sorted({*EF_CHOICES, current.hnsw_ef})
    by_ef = {ef: fetch_candidates(ctx, tenant_id, labels, hnsw_ef=ef, vectors=vectors)
             for ef in choices}  # fmt: skip
    log_path = tuning_dir(tenant_id, ctx.settings.roots) / "optimisation.jsonl"
    run = f"{now.isoformat()}#{seed}"

    def objective(trial: optuna.Trial) -> float:
        p = RecallParams(
            palace_floor=trial.suggest_float("palace_floor", 0.20, 0.60, step=0.02),
            dense_weight=trial.suggest_float("dense_weight", 0.0, 1.0, step=0.1),
            recency_weight=trial.suggest_float("recency_weight", 0.0, 1.0, step=0.1),
            recency_tau_days=trial.suggest_float("recency_tau_days", 1.0, 180.0, log=True),
            depth_factor=trial.suggest_int("depth_factor", 1, 4),
            hnsw_ef=int(trial.suggest_categorical("hnsw_ef", choices)),
        )
        per_query = scores(labels, by_ef[p.hnsw_ef], p, now_s)
        metric = sum(per_query) / len(per_query)
        trial.set_user_attr("scores", per_query)
        sd = bootstrap_sd(per_query, seed + trial.number, rounds=200)
        append_jsonl(
            log_path,
            {"event": "trial", "run": run, "at": now.isoformat(), "trial": trial.number,
             "params": asdict(p), "metric": metric, "noise_sd": sd, "seed": seed,
             "n_queries": len(labels), "sampler": "optuna.TPESampler"},
        )  # fmt: skip
        return metric

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed))
    # The parameters in force first: a tie keeps them. Recency τ is outside the grid's steps
    # only when adopted earlier; the study accepts any value within the bounds.
    study.enqueue_trial({**asdict(current), "palace_floor": round(current.palace_floor, 2)})
    study.optimize(objective, n_trials=trials)
    best_trial = study.best_trial
    # Rounded: the step grid's floats carry binary noise (0.42000000000000004) into the log.
    best = RecallParams(**{k: round(v, 4) for k, v in best_trial.params.items()}).clamped()
    baseline_scores = scores(labels, by_ef[current.hnsw_ef], current, now_s)
    decision = decide(baseline_scores, list(best_trial.user_attrs["scores"]), seed)
    mode = config.auto_actions.tune
    action = "kept"
    if decision.adopt and best != current:
        action = _apply(
            ctx, tenant_id, best, decision.gain, decision.noise_sd, mode, now.isoformat()
        )
    summary: dict[str, Any] = {
        "tenant_id": tenant_id, "run": run, "at": now.isoformat(), "trials": trials, "seed": seed,
        "n_queries": len(labels), "current": asdict(current), "best": asdict(best),
        "baseline_metric": decision.baseline, "best_metric": decision.best,
        "gain": decision.gain, "noise_sd": decision.noise_sd,
        "past_2x_noise": decision.adopt, "mode": mode.value, "action": action,
    }  # fmt: skip
    append_jsonl(log_path, {"event": "decision", **summary})
    record_tuning(ctx.redis, tenant_id, summary)
    return summary


def _apply(
    ctx: EngineContext,
    tenant_id: str,
    best: RecallParams,
    gain: float,
    sd: float,
    mode: AutoMode,
    at: str,
) -> str:
    """Adopt, ask, or only log, as the tenant's mode says; return what was done."""
    if mode is AutoMode.AUTONOMOUS:
        adopt_params(ctx.redis, tenant_id, best, at)
        ctx.bus(tenant_id).append("tune.adopted", {"params": asdict(best)}, now=ctx.clock())
        return "adopted"
    if mode is AutoMode.ESCALATE:
        if pending_confirmation(ctx.redis, tenant_id, TUNE_CONFIRMATION) is None:
            import json

            queue_confirmation(
                ctx.redis,
                tenant_id,
                TUNE_CONFIRMATION,
                "adopt tuned recall parameters",
                json.dumps({"params": asdict(best), "gain": gain, "noise_sd": sd}),
                ctx.clock(),
            )
        return "confirmation"
    return "off"


def tune_recall_op(ctx: EngineContext, r: req.TuneRecallRequest) -> rep.TuneRecallReply:
    # `is None`, not `or`: 0 trials is a mistake to refuse, not a request for the default.
    trials = DEFAULT_TRIALS if r.trials is None else r.trials
    problem = seed_problem(r.seed or 0)
    if problem is not None:  # numpy would refuse it deep in Optuna, as a traceback
        raise ValidationFailed(problem, "e.g. --seed 7")
    report = tune(ctx, r.tenant_id, trials=trials, seed=r.seed or 0)
    return rep.TuneRecallReply(report)


def tune_adopt_op(ctx: EngineContext, r: req.TuneAdoptRequest) -> rep.TuneAdoptReply:
    """A person approved a ``tune.adopt`` confirmation: put its parameters in force."""
    import json

    tenant_id = r.tenant_id
    ctx.tenant(tenant_id)
    try:
        detail = json.loads(r.detail or "")
        params = RecallParams(**detail["params"]).clamped()
    except (ValueError, KeyError, TypeError) as exc:
        raise ValidationFailed(
            "the confirmation holds no readable parameters", "reject it and tune again"
        ) from exc
    adopt_params(ctx.redis, tenant_id, params, ctx.clock().isoformat())
    ctx.bus(tenant_id).append("tune.adopted", {"params": asdict(params)}, now=ctx.clock())
    # The dashboard shows the last tuning's outcome: once its set is approved, no longer
    # "confirmation" (waiting). Only the tuning that asked: an older set approved later
    # leaves a newer tuning's line as it is (decision 480).
    last = last_tuning(ctx.redis, tenant_id)
    if last and last.get("action") == "confirmation" and last.get("best") == asdict(params):
        record_tuning(ctx.redis, tenant_id, {**last, "action": "approved"})
    return rep.TuneAdoptReply(asdict(params))
