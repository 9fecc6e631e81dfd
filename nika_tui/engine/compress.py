"""Strategy A, compression into the repo (seed 1, « Stratégie A »): the kernel becomes readable.

Exports the tenant's *current* memories, grouped by theme, as Markdown files
``knowledge/{topic}/{YYYY-MM-DD}.md`` in a git repository, then commits. A later kernel can
re-ingest the repository into a fresh store and find its past by search, not accumulation.

Themes: memories are grouped by project, then clustered greedily by meaning (a memory joins the
first cluster whose leader is at cosine ≥ :data:`THEME_COSINE`, else it leads a new one); a
cluster's topic slug is ``{project}-{domain}-{leader's first words}``. Each file carries YAML
front matter with the seed's metadata: ``entity_type`` (semantic / episodic), ``scope``
(project), ``recency`` (newest valid time), ``confidence`` (share of memories in the cluster
seen in more than one session or with files/entities, a rough sourcing measure), and the ids.

Nothing in the store changes: wiping the operational store stays a separate, explicit decision.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.engine.context import EngineContext
from nika_tui.engine.ops import op
from nika_tui.errors import NikaError, ValidationFailed
from nika_tui.services.files import atomic_write_text

THEME_COSINE = 0.55
"""Cosine to a cluster's leader from which a memory shares its theme (all-MiniLM-L6-v2)."""
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class Theme:
    """One cluster of memories."""

    project: str
    leader: list[float]
    records: list[MemoryRecord] = field(default_factory=list)

    def slug(self) -> str:
        """``{project}-{domain}-{first words of the leader}``, filesystem-safe."""
        first = self.records[0]
        domain = first.meta.domain.value if first.meta.domain else "general"
        words = [w for w in _WORD.findall(first.text.lower()) if len(w) > 2][:4]
        parts = [self.project or "global", domain, *words]
        return "-".join(parts)[:80].strip("-")


def _cos(a: Sequence[float], b: Sequence[float]) -> float:
    return float(sum(x * y for x, y in zip(a, b, strict=False)))


def themes(ctx: EngineContext, tenant_id: str) -> list[Theme]:
    """Current memories of both layers, clustered by project then meaning."""
    found: list[Theme] = []
    current = PointFilter(equals={"status": Status.CURRENT.value})
    for layer in Layer:
        for p in ctx.vectors.scroll(tenant_id, layer, current, batch=512, with_vectors=True):
            rec = MemoryRecord.from_payload(dict(p.payload))
            vec = list(p.vector or [])
            home = next(
                (
                    t
                    for t in found
                    if t.project == rec.meta.project_id and _cos(t.leader, vec) >= THEME_COSINE
                ),
                None,
            )
            if home is None:
                found.append(Theme(rec.meta.project_id, vec, [rec]))
            else:
                home.records.append(rec)
    return found


def render(theme: Theme, tenant_id: str) -> str:
    """Markdown with YAML front matter for one theme."""
    recs = sorted(theme.records, key=lambda r: r.valid_from, reverse=True)
    sourced = [r for r in recs if r.meta.files or r.meta.entity_ids or r.meta.session_id]
    front: dict[str, Any] = {
        "tenant_id": tenant_id,
        "topic": theme.slug(),
        "entity_type": sorted({r.layer.value for r in recs}),
        "scope": theme.project or "global",
        "recency": recs[0].valid_from.isoformat(),
        "confidence": round(len(sourced) / len(recs), 2),
        "memories": [r.id for r in recs],
    }
    lines = ["---", yaml.safe_dump(front, sort_keys=False).strip(), "---", ""]
    lines.append(f"# {theme.slug()}")
    lines.append("")
    for r in recs:
        extra = []
        if r.meta.job_id:
            extra.append(f"job {r.meta.job_id}")
        if r.meta.files:
            extra.append("files " + ", ".join(r.meta.files))
        suffix = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"- {r.valid_from.date().isoformat()} — {r.text}{suffix} `{r.id}`")
    return "\n".join(lines) + "\n"


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "nika-os",
        "GIT_AUTHOR_EMAIL": "nika-os@localhost",
        "GIT_COMMITTER_NAME": "nika-os",
        "GIT_COMMITTER_EMAIL": "nika-os@localhost",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(repo),
    }
    try:
        out = subprocess.run(
            ["git", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
    except FileNotFoundError as exc:
        raise NikaError("git is not installed", "install git to use compression") from exc
    except subprocess.CalledProcessError as exc:
        raise NikaError(
            f"git {args[0]} failed in {repo}: {exc.stderr.strip()[:300]}",
            "check the repository (is it a valid, writable git work tree?)",
        ) from exc
    return out.stdout


def compress(ctx: EngineContext, tenant_id: str, repo: Path) -> dict[str, Any]:
    """Export current memories by theme into ``repo/knowledge`` and commit.

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        repo: A git work tree (created with ``git init`` when the directory is empty or new).

    Returns:
        Files written, memory count and the commit id (None when nothing changed).

    Raises:
        ValidationFailed: ``repo`` exists and is not a directory.
        NikaError: git failed.
    """
    ctx.tenant(tenant_id)
    if repo.exists() and not repo.is_dir():
        raise ValidationFailed(f"{repo} is not a directory", "pass a git work tree with --repo")
    repo.mkdir(parents=True, exist_ok=True)
    if not (repo / ".git").exists():
        _git(repo, "init", "-q")
    day = ctx.clock().date().isoformat()
    written: list[str] = []
    count = 0
    for theme in themes(ctx, tenant_id):
        rel = Path("knowledge") / theme.slug() / f"{day}.md"
        atomic_write_text(repo / rel, render(theme, tenant_id))
        written.append(str(rel))
        count += len(theme.records)
    if not written:
        return {"files": [], "memories": 0, "commit": None}
    _git(repo, "add", "knowledge")
    if not _git(repo, "status", "--porcelain", "knowledge").strip():
        return {"files": written, "memories": count, "commit": None}
    _git(repo, "commit", "-q", "-m", f"nika compress {tenant_id}: {count} memories, {day}")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    return {"files": written, "memories": count, "commit": commit}


@op("compress")
def _compress_op(ctx: EngineContext, body: dict[str, Any]) -> dict[str, Any]:
    tenant_id, repo = body.get("tenant_id"), body.get("repo")
    if not isinstance(tenant_id, str) or not isinstance(repo, str) or not repo:
        raise ValidationFailed("compress needs 'tenant_id' and 'repo'", "pass --tenant and --repo")
    return compress(ctx, tenant_id, Path(repo))
