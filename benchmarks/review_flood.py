"""Review flood: unrelated facts that share subjects, through the real ingest path.

A stream of facts where each one is about the same *attribute* of a different service,
environment or person ("the cache TTL of orders is 60 s", "billing's cache TTL: 45 s", "in
staging the payments API listens on 8081", "Priya's on-call week is …"), written in varied
sentence shapes (English and French), none of them an update of another. Every fact goes
through :func:`nika_tui.engine.ingest.ingest_batch` on the real stores (embedded Redis, Qdrant
Edge in a temp dir, all-MiniLM-L6-v2), so the candidate search and the tenant's judge run as in
the service. Nothing should be retired and nothing needs a person: the report is the fraction
of facts that sent at least one pair to review (bar: ≤ 5 %), the review requests per fact, and
the wrong REPLACEs (a fact retired by an unrelated one).

A second, smaller stream mixes in true updates (the same service's attribute changing later),
to show the judge still retires those: ``true_updates_retired``.

Usage (from the repo root)::

    .venv/bin/python benchmarks/review_flood.py [--facts 150] [--judge offline|rules]
        [--seed 7,11,13]

``--facts 1200`` is the largest stream of distinct slots (6 attributes × 100 services, the
port and replica facts per environment); the issue's 3,000-fact run needs more attributes.
The default 150 runs in 1–3 min on 2 busy cores; one stream turns on a handful of facts (at
150, one fact is 0.7 %), so ``--seed 7,11,13`` reports three streams and their total.
Results: ``benchmarks/results/review_flood_{judge}.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SERVICES = [
    "orders", "billing", "payments", "search", "catalog", "auth", "notifications", "reports",
    "inventory", "shipping", "checkout", "profiles", "gateway", "ledger", "pricing", "media",
    "analytics", "scheduler", "mailer", "exports",
]  # fmt: skip
SERVICES = [
    f"{area}-{base}" if area else base
    for area in ("", "edge", "core", "eu", "us")
    for base in SERVICES
]
ENVS = ["production", "staging", "qa", "the sandbox"]
PEOPLE = ["Priya", "Marco", "Chen", "Sofia", "Ines", "Tomasz", "Ana", "Lukas", "Amara", "Joel"]

# Each attribute: (value generator, sentence shapes). {s} service, {e} env, {v} value.
ATTRIBUTES: list[tuple[Any, list[str]]] = [
    (
        lambda r: f"{r.choice([15, 30, 45, 60, 90, 120, 300])} seconds",
        [
            "The cache TTL of the {s} service is {v}.",
            "{s}'s cache TTL: {v}",
            "For {s}, cached entries expire after {v}.",
            "Le TTL du cache du service {s} est de {v}.",
        ],
    ),
    (
        lambda r: str(r.choice([8080, 8081, 9000, 9090, 3000, 5000, 7001])),
        [
            "In {e}, the {s} API listens on port {v}.",
            "{s} ({e}) port: {v}",
            "The {s} service is exposed on {v} in {e}.",
            "En {e}, l'API {s} écoute sur le port {v}.",
        ],
    ),
    (
        lambda r: f"{r.choice([2, 3, 4, 6, 8, 12])} replicas",
        [
            "The {s} deployment runs {v} in {e}.",
            "{s} is scaled to {v} in {e}.",
            "We keep {v} of {s} in {e}.",
        ],
    ),
    (
        lambda r: r.choice(PEOPLE),
        [
            "{v} owns the {s} service.",
            "The owner of {s} is {v}.",
            "Questions about {s} go to {v}, who owns it.",
            "C'est {v} qui est responsable du service {s}.",
        ],
    ),
    (
        lambda r: f"{r.choice([100, 200, 500, 1000, 2000])} requests per minute",
        [
            "The {s} API is rate-limited to {v}.",
            "Rate limit on {s}: {v}.",
            "Clients of {s} may send at most {v}.",
        ],
    ),
    (
        lambda r: f"v{r.randint(1, 4)}.{r.randint(0, 12)}",
        [
            "The {s} client library is at {v}.",
            "{s} ships its SDK as {v}.",
            "La bibliothèque cliente de {s} est en {v}.",
        ],
    ),
]


def facts(n: int, seed: int) -> list[tuple[str, datetime, str]]:
    """``n`` unrelated facts: (text, valid time, slot key). No two share a slot."""
    rng = random.Random(seed)
    # Each (attribute, service, env) is one slot; one fact per slot keeps them unrelated.
    # Attributes whose sentences name no environment use one slot per service.
    slots = [
        (a, s, e)
        for a, (_, shapes) in enumerate(ATTRIBUTES)
        for s in SERVICES
        for e in (ENVS if all("{e}" in x for x in shapes) else ENVS[:1])
    ]
    rng.shuffle(slots)
    out = []
    for i, (a, s, e) in enumerate(slots[:n]):
        gen, shapes = ATTRIBUTES[a]
        text = rng.choice(shapes).format(s=s, e=e, v=gen(rng))
        out.append((text, T0 + timedelta(hours=i), f"{a}/{s}/{e}"))
    return out


def main(n: int, judge: str, seed: int) -> dict[str, Any]:
    """Ingest the stream, then a few true updates; return the report."""
    with tempfile.TemporaryDirectory(prefix="nika-flood-") as tmp:
        root = Path(tmp)
        os.environ["NIKA_OS_CONFIG_DIR"] = str(root / "config")
        os.environ["NIKA_OS_DATA_DIR"] = str(root / "data")
        import redis

        from nika_tui.domain.envelope import NikaMeta
        from nika_tui.domain.requests import RememberRequest
        from nika_tui.domain.tenant import JudgeConfig, JudgeKind, Privacy, TenantConfig
        from nika_tui.engine.context import EngineContext
        from nika_tui.engine.ingest import IngestOutcome, ingest_batch
        from nika_tui.services.config_store import save_tenant
        from nika_tui.services.embeddings import open_embedder
        from nika_tui.services.redis_server import ensure_embedded, stop_embedded
        from nika_tui.services.vectors.edge import EdgeVectorStore
        from nika_tui.settings import Settings

        save_tenant(
            TenantConfig(
                tenant_id="flood",
                display_name="Flood",
                privacy=Privacy.LOCAL,
                judge=JudgeConfig(kind=JudgeKind(judge)),
            )
        )
        url = ensure_embedded()
        store = EdgeVectorStore(root / "qdrant", 384, flush_writes=False)
        settings = Settings.from_env()
        embedder = open_embedder(settings)
        ctx = EngineContext(
            settings=settings,
            redis=redis.Redis.from_url(url),
            vectors=store,
            embedder=embedder,
        )
        try:
            stream = facts(n, seed)
            reviewed_facts = reviews = retired = judged = 0
            started = time.perf_counter()
            for start in range(0, len(stream), 32):
                chunk = stream[start : start + 32]
                reqs = [
                    RememberRequest(
                        tenant_id="flood",
                        text=text,
                        meta=NikaMeta(timestamp=when, project_id="platform"),
                    )
                    for text, when, _ in chunk
                ]
                for outcome in ingest_batch(ctx, reqs):
                    assert isinstance(outcome, IngestOutcome), outcome
                    reviewed_facts += bool(outcome.reviews)
                    reviews += len(outcome.reviews)
                    retired += len(outcome.retired)
                    judged += len(outcome.retired) + len(outcome.reviews) + len(outcome.kept)
            elapsed = time.perf_counter() - started
            # True updates: the same slot, later, another value: these should be retired.
            rng = random.Random(seed + 1)
            updates = rng.sample(stream, min(20, len(stream)))
            later = stream[-1][1] + timedelta(days=30)
            update_reqs = []
            for text, _, _ in updates:
                words = text.rstrip(".").split()
                # Replace the value-bearing token with a new one, keep the sentence shape.
                digits = [i for i, w in enumerate(words) if any(c.isdigit() for c in w)]
                if not digits:
                    continue
                i = digits[-1]
                words[i] = "".join("7" if c.isdigit() else c for c in words[i])
                if words[i] in text.split():
                    continue
                update_reqs.append(
                    RememberRequest(
                        tenant_id="flood",
                        text=" ".join(words) + ".",
                        meta=NikaMeta(timestamp=later, project_id="platform"),
                    )
                )
            true_retired = sum(
                bool(o.retired)
                for o in ingest_batch(ctx, update_reqs)
                if isinstance(o, IngestOutcome)
            )
        finally:
            store.close()
            stop_embedded()
    n_facts = len(stream)
    return {
        "judge": judge,
        "facts": n_facts,
        "judged_pairs": judged,
        "facts_sent_to_review": reviewed_facts,
        "review_fraction": round(reviewed_facts / n_facts, 4),
        "review_requests_per_fact": round(reviews / n_facts, 3),
        "wrong_replaces": retired,
        "bar_review_fraction": 0.05,
        "true_updates": len(update_reqs),
        "true_updates_retired": true_retired,
        "ingest_seconds": round(elapsed, 1),
    }


def _total(reports: list[dict[str, Any]], seeds: list[int]) -> dict[str, Any]:
    """Several streams' reports summed: one 150-fact stream turns on a handful of facts."""
    summed = ("facts", "judged_pairs", "facts_sent_to_review", "wrong_replaces", "true_updates")
    total: dict[str, Any] = {"judge": reports[0]["judge"], "seeds": seeds}
    for key in (*summed, "true_updates_retired", "ingest_seconds"):
        total[key] = round(sum(r[key] for r in reports), 1)
    total["review_fraction"] = round(total["facts_sent_to_review"] / total["facts"], 4)
    total["review_requests_per_fact"] = round(
        sum(r["review_requests_per_fact"] * r["facts"] for r in reports) / total["facts"], 3
    )
    total["bar_review_fraction"] = reports[0]["bar_review_fraction"]
    total["per_seed"] = reports
    return total


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=150)
    parser.add_argument("--judge", choices=("offline", "rules"), default="offline")
    parser.add_argument(
        "--seed", default="7", help="stream seed, or several comma-separated: each and the total"
    )
    args = parser.parse_args()
    seeds = [int(s) for s in args.seed.split(",")]
    reports = [main(args.facts, args.judge, seed) for seed in seeds]
    report = reports[0] if len(reports) == 1 else _total(reports, seeds)
    out = Path(__file__).parent / "results" / f"review_flood_{args.judge}.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
