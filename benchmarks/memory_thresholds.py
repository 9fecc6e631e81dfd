"""Calibrate the memory engine's two cosine thresholds on the real embedder.

- PALACE floor (``nika_tui.engine.recall.PALACE_MIN_COSINE``): best cosine of questions whose
  answer is stored vs questions whose answer is not.
- Supersede candidate threshold (``nika_tui.engine.supersede.SUPERSEDE_MIN_COSINE``): cosine of
  (old, new) pairs about the same thing vs pairs of different facts of one project.

Run: ``.venv/bin/python benchmarks/memory_thresholds.py`` (prints JSON).
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FACTS = [
    "The staging server is staging-1.acme.internal",
    "We deploy on Thursdays",
    "Alice owns the billing service",
    "The database is Postgres 14",
    "Code review needs two approvals",
    "The web app deploys with Docker Compose",
    "The API deploys with Helm charts",
    "Use ruff for linting and formatting Python",
    "The frontend is written in React with TypeScript",
    "Le serveur de préproduction est staging-1.acme.internal",
    "On déploie le jeudi après la revue",
    "Bob prefers small pull requests under 300 lines",
    "Tickets live in Linear, project key WEB",
    "The CI runs on GitHub Actions",
    "Secrets are stored in Vault under kv/acme",
]
ANSWERABLE = [
    "where is the staging server",
    "staging host",
    "which day do we deploy",
    "when are deployments",
    "who owns billing",
    "who is responsible for the billing service",
    "what database do we use",
    "which postgres version",
    "how many approvals for code review",
    "how do we deploy",
    "how is the API deployed",
    "what linter do we use",
    "what is the frontend written in",
    "où est le serveur de préproduction",
    "quel jour déploie-t-on",
    "how big should a pull request be",
    "where are the tickets",
    "which CI do we use",
    "where are secrets kept",
    "deployment tooling",
]
UNANSWERABLE = [
    "what is the wifi password",
    "who is the CEO of the client",
    "what did we decide about the logo colour",
    "kubernetes cluster version",
    "favourite pizza topping",
    "when is the holiday party",
    "which cloud region hosts production",
    "what is the on-call rotation",
    "how much does the AWS bill cost",
    "what is the name of the designer",
    "quelle est la couleur du logo",
    "who is the product manager",
    "what is our SLA",
    "which monitoring tool do we use",
    "what is the budget for Q3",
    "do we support internet explorer",
    "what is the office address",
    "what font do we use",
    "which payment provider do we use",
    "how long are sprints",
]
SAME = [
    (
        "The staging server is staging-1.acme.internal",
        "The staging server moved to staging-2.acme.internal",
    ),
    ("We deploy on Thursdays", "We now deploy on Fridays"),
    ("The API uses Python 3.10", "The API was upgraded to Python 3.12"),
    ("Alice owns the billing service", "Bob now owns the billing service"),
    (
        "Le serveur de préproduction est staging-1.acme.internal",
        "Le serveur de préproduction a déménagé sur staging-2.acme.internal",
    ),
    ("The database is Postgres 14", "We migrated the database to Postgres 16"),
    ("Code review needs two approvals", "Code review now needs one approval"),
    (
        "The staging server is staging-1.acme.internal",
        "Staging might move to staging-3 next month, not sure",
    ),
    ("The CI runs on GitHub Actions", "CI moved to GitLab CI"),
    ("On déploie le jeudi", "Désormais on déploie le vendredi"),
    ("Tickets live in Linear", "We switched ticket tracking to Jira"),
    ("Bob prefers small pull requests", "Bob no longer minds large pull requests"),
]
DIFFERENT = [
    ("The staging server is staging-1.acme.internal", "We deploy on Thursdays"),
    ("The staging server is staging-1.acme.internal", "Alice owns the billing service"),
    ("The API uses Python 3.10", "Code review needs two approvals"),
    ("Use black for formatting", "The database is Postgres 14"),
    ("Tabs are forbidden in YAML", "Bob prefers dark mode in the IDE"),
    ("The frontend is written in React", "The backend is written in Go"),
    ("Le déploiement a lieu le jeudi", "The database is Postgres 14"),
    ("Tickets live in Linear", "Secrets are stored in Vault"),
    ("The CI runs on GitHub Actions", "Alice owns the billing service"),
    ("Code review needs two approvals", "The web app deploys with Docker Compose"),
]  # fmt: skip


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def main() -> None:
    from nika_tui.engine.recall import PALACE_MIN_COSINE
    from nika_tui.engine.supersede import SUPERSEDE_MIN_COSINE
    from nika_tui.services.embeddings import SentenceTransformerEmbedder

    e = SentenceTransformerEmbedder()
    fv = e.embed(FACTS)

    def best(q: str) -> float:
        qv = e.embed([q])[0]
        return max(_dot(qv, f) for f in fv)

    hit = sorted(best(q) for q in ANSWERABLE)
    miss = sorted(best(q) for q in UNANSWERABLE)
    same = sorted(_dot(*e.embed([a, b])) for a, b in SAME)
    diff = sorted(_dot(*e.embed([a, b])) for a, b in DIFFERENT)

    def rate(values: list[float], floor: float) -> float:
        return round(sum(v >= floor for v in values) / len(values), 3)

    report = {
        "palace": {
            "floor": PALACE_MIN_COSINE,
            "answerable_min_median": [round(hit[0], 3), round(hit[len(hit) // 2], 3)],
            "unanswerable_median_max": [round(miss[len(miss) // 2], 3), round(miss[-1], 3)],
            "answerable_kept": rate(hit, PALACE_MIN_COSINE),
            "unanswerable_dropped": round(1 - rate(miss, PALACE_MIN_COSINE), 3),
            "sweep": {
                f"{f:.2f}": {"kept": rate(hit, f), "dropped": round(1 - rate(miss, f), 3)}
                for f in (0.25, 0.30, 0.35, 0.40, 0.45)
            },
        },
        "supersede": {
            "threshold": SUPERSEDE_MIN_COSINE,
            "same_min_median": [round(same[0], 3), round(same[len(same) // 2], 3)],
            "different_median_max": [round(diff[len(diff) // 2], 3), round(diff[-1], 3)],
            "same_judged": rate(same, SUPERSEDE_MIN_COSINE),
            "different_skipped": round(1 - rate(diff, SUPERSEDE_MIN_COSINE), 3),
            "sweep": {
                f"{f:.2f}": {"judged": rate(same, f), "skipped": round(1 - rate(diff, f), 3)}
                for f in (0.35, 0.40, 0.45, 0.50, 0.55)
            },
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
