"""What ``hooks_latency.py`` runs against: a tenant seeded with a realistic set of facts through
the real ingest, one checkout per project, and each agent CLI's hook payloads as the CLI sends
them (fields from ``tests/data/{claude,codex}`` and the CLIs' hook documentation, as read by
``nika_tui/hooks/{claude,codex,gemini,opencode}.py``).
"""

from __future__ import annotations

import itertools
import random
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TENANT = "bench"

PROJECTS = ("acme-api", "billing-svc", "mobile-app", "data-pipeline", "infra", "web-portal")
COMPONENTS = (
    "sync worker", "auth gateway", "billing cron", "search indexer",
    "webhook relay", "report exporter", "session cache", "image resizer",
)  # fmt: skip
PEOPLE = ("Amira", "Bastien", "Chloé", "Dmitri", "Eun-ji", "Farid", "Greta", "Hugo")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday")
LIBS = ("httpx", "pydantic", "sqlalchemy", "celery", "redis-py", "boto3")

# (fact, question about it): one subject per (project, component, template).
TEMPLATES: tuple[tuple[str, str], ...] = (
    ("The {c} of {p} listens on port {port}.", "Which port does the {c} of {p} listen on?"),
    (
        "The {c} of {p} uses the postgres database at db-{n}.{p}.internal.",
        "Which database host does the {c} of {p} use?",
    ),
    (
        "Deploys of the {c} in {p} happen on {day} after {hh}:00 UTC.",
        "When may we deploy the {c} of {p}?",
    ),
    (
        "{who} owns the {c} of {p}; page {who} for its incidents.",
        "Who should I page when the {c} of {p} breaks?",
    ),
    (
        "In {p}, the {c} retries {k} times with exponential backoff capped at {s} s.",
        "How many times does the {c} in {p} retry, and with which backoff?",
    ),
    (
        "The {c} of {p} reads its configuration from /etc/{p}/{slug}.toml.",
        "Where does the {c} of {p} read its configuration?",
    ),
    (
        "{p} pins {lib} to {ver} in the {c} because newer releases broke it.",
        "Which {lib} version does the {c} of {p} pin?",
    ),
)


@dataclass(frozen=True)
class Fact:
    project: str
    text: str
    question: str


def facts(count: int, seed: int = 13) -> list[Fact]:
    """``count`` distinct facts across :data:`PROJECTS`, each with a question it answers."""
    rng = random.Random(seed)
    subjects = list(itertools.product(PROJECTS, COMPONENTS, range(len(TEMPLATES))))
    rng.shuffle(subjects)
    out: list[Fact] = []
    for project, component, t in subjects[:count]:
        values: dict[str, Any] = {
            "p": project,
            "c": component,
            "slug": component.replace(" ", "-"),
            "port": rng.randrange(3000, 9900),
            "n": rng.randrange(1, 9),
            "day": rng.choice(DAYS),
            "hh": rng.randrange(6, 18),
            "who": rng.choice(PEOPLE),
            "k": rng.randrange(3, 9),
            "s": rng.choice((30, 60, 120, 300)),
            "lib": rng.choice(LIBS),
            "ver": f"{rng.randrange(0, 3)}.{rng.randrange(0, 30)}.{rng.randrange(0, 9)}",
        }
        fact, question = TEMPLATES[t]
        text = fact.format(**values)
        out.append(Fact(project, text[0].upper() + text[1:], question.format(**values)))
    return out


def configure(env: dict[str, str]) -> None:
    """The tenant's config (before the service starts: it serves configured tenants only)."""
    from nika_tui.domain.tenant import AgentCli, TenantConfig
    from nika_tui.paths import roots
    from nika_tui.services.config_store import save_tenant

    save_tenant(
        TenantConfig(tenant_id=TENANT, display_name=TENANT, agent_cli=AgentCli.CLAUDE_CODE),
        roots(env),
    )


def seed(env: dict[str, str], items: list[Fact]) -> dict[str, Any]:
    """Remember ``items`` through the running service (the real ingest: embedding, supersede,
    flush); returns what was stored and how fast."""
    from nika_tui.domain.envelope import NikaMeta
    from nika_tui.domain.requests import RememberRequest
    from nika_tui.services.memory_client import MemoryClient
    from nika_tui.settings import Settings

    client = MemoryClient.open(Settings.from_env(env))
    start = time.perf_counter()
    now = datetime.now(UTC)
    keys = []
    for i, item in enumerate(items):
        at = now - timedelta(minutes=len(items) - i)  # spread over the last hours
        meta = NikaMeta(timestamp=at, project_id=item.project, agent_type="claude-code")
        keys.append(client.remember(RememberRequest(tenant_id=TENANT, text=item.text, meta=meta)))
    statuses: dict[str, int] = {}
    for key in keys:
        outcome = client.wait_ingested(TENANT, key, timeout=900)
        status = str(outcome.get("status", "?"))
        statuses[status] = statuses.get(status, 0) + 1
    seconds = time.perf_counter() - start
    return {
        "facts_sent": len(items),
        "projects": len({i.project for i in items}),
        "outcomes": statuses,
        "ingest_s": round(seconds, 1),
        "facts_per_s": round(len(items) / seconds, 1),
    }


def checkouts(tmp: Path) -> dict[str, Path]:
    """One git checkout per project (the hooks name the project after the git root)."""
    out = {}
    for project in PROJECTS:
        path = tmp / "work" / project
        (path / ".git").mkdir(parents=True)
        out[project] = path
    return out


def transcripts(tmp: Path) -> dict[str, Path]:
    """Each CLI's transcript as its hooks name it (Gemini CLI's session file does not exist
    yet at a new session's first events; OpenCode sends none)."""
    claude = tmp / "claude" / "session.jsonl"
    codex = tmp / "codex" / "rollout-2026-12-04T10-00-00-bench.jsonl"
    for path, sample in (
        (claude, "claude/transcript_session.jsonl"),
        (codex, "codex/rollout_0171.jsonl"),
    ):
        path.parent.mkdir(parents=True)
        shutil.copy(DATA / sample, path)
    return {"claude": claude, "codex": codex, "gemini": tmp / "gemini" / "chats" / "session.json"}


CASES: tuple[tuple[str, str], ...] = (
    ("claude", "SessionStart"),
    ("claude", "UserPromptSubmit"),
    ("codex", "SessionStart"),
    ("codex", "UserPromptSubmit"),
    ("gemini", "SessionStart"),
    ("gemini", "BeforeAgent"),
    ("opencode", "UserPromptSubmit"),
)
"""The events that do work before the agent goes on (a recall or the digest it waits for).
OpenCode's ``UserPromptSubmit`` is a session's first prompt: the opening digest and the recall."""


def payload(
    cli: str, event: str, session: str, cwd: Path, question: str, paths: dict[str, Path]
) -> dict[str, Any]:
    """The payload ``cli`` sends for ``event`` (fields as the real CLI sends them)."""
    now = datetime.now(UTC).isoformat()
    if cli == "opencode":  # nika_tui/assets/opencode_plugin.js, chat.message
        return {"session_id": session, "cwd": str(cwd), "prompt": question}
    body: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(paths[cli]),
        "cwd": str(cwd),
        "hook_event_name": event,
    }
    if cli == "claude":
        body["permission_mode"] = "default"
        if event == "SessionStart":
            body.update(source="startup", model="claude-sonnet-4-5-20250929")
    elif cli == "codex":
        body.update(model="gpt-5-codex", permission_mode="default")
        if event == "SessionStart":
            body["source"] = "startup"
        else:
            body["turn_id"] = "1"
    else:  # gemini
        body["timestamp"] = now
        if event == "SessionStart":
            body["source"] = "startup"
    if event != "SessionStart":
        body["prompt"] = question
    return body
