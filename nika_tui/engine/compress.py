"""Strategy A, compression into the repo (seed 1, « Stratégie A »): the kernel becomes readable.

``nika compress --tenant T [--repo PATH]`` writes the tenant's *current* memories into readable,
versioned trees, then commits and publishes (:mod:`.publish`):

1. current memories of both layers are read with their vectors and split by sensitivity — a
   private one (:mod:`nika_tui.domain.sensitivity`) never goes to a repo marked public;
2. each tree gets its themes (:mod:`.themes`: ``knowledge/{topic}/{date}.md`` + ``.jsonl``)
   and its hierarchical digest (:mod:`nika_tui.domain.synthesis`:
   ``knowledge/digest/{date}.md`` + ``.jsonl``);
3. both trees are committed; the knowledge repo is pushed to its ``origin`` when it has one.

Nothing in the store changes here: wiping the operational store is the reset's business
(:mod:`.reset`), which runs this first and stops if it fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nika_tui.domain import protocol_replies as rep
from nika_tui.domain import protocol_requests as req
from nika_tui.domain.memory import Layer, MemoryRecord, Status
from nika_tui.domain.ports import PointFilter
from nika_tui.domain.sensitivity import RepoVisibility, why_private
from nika_tui.domain.synthesis import DigestMemory, NodeDigest, synthesise
from nika_tui.domain.tenant import DigestMode
from nika_tui.engine.context import EngineContext
from nika_tui.engine.publish import (
    commit,
    has_remote,
    knowledge_repo,
    prepare_repo,
    private_tree,
    push,
)
from nika_tui.engine.review import list_items
from nika_tui.engine.themes import Kept, cluster, render, render_jsonl, slugs, topic_paths
from nika_tui.services.digest_writer import DigestOutcome, llm_digests, select_writer
from nika_tui.services.files import atomic_write_text

SCROLL_BATCH = 512


@dataclass
class TreeResult:
    """What was written into one tree."""

    root: Path
    files: list[str] = field(default_factory=list)
    memories: int = 0
    kept: int = 0
    commit: str | None = None
    digest: DigestOutcome | None = None
    """Who wrote the digest (``llm`` / ``offline``, fallback nodes); ``None``: no digest."""

    def ingest_files(self) -> list[Path]:
        """The ``.jsonl`` files written (what a fresh store is re-ingested from)."""
        return [self.root / f for f in self.files if f.endswith(".jsonl")]


@dataclass
class CompressResult:
    """Both trees, and whether the repo was pushed."""

    repo: TreeResult
    private: TreeResult | None
    pushed: str | None = None
    private_reasons: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (``files``, ``memories`` and ``commit`` are the repo's)."""
        out: dict[str, Any] = {
            "repo": str(self.repo.root),
            "files": self.repo.files,
            "memories": self.repo.memories + (self.private.memories if self.private else 0),
            "kept": self.repo.kept + (self.private.kept if self.private else 0),
            "commit": self.repo.commit,
            "pushed": self.pushed,
            "private": None,
            "private_reasons": self.private_reasons,
            "digest": self.repo.digest.to_dict() if self.repo.digest else None,
        }
        if self.private is not None:
            out["private"] = {
                "tree": str(self.private.root),
                "files": self.private.files,
                "memories": self.private.memories,
                "commit": self.private.commit,
                "digest": self.private.digest.to_dict() if self.private.digest else None,
            }
        return out


def current_memories(ctx: EngineContext, tenant_id: str) -> list[Kept]:
    """Every current memory of both layers, with its payload and unit vector."""
    out: list[Kept] = []
    current = PointFilter(equals={"status": Status.CURRENT.value})
    for layer in Layer:
        for p in ctx.vectors.scroll(tenant_id, layer, current, SCROLL_BATCH, with_vectors=True):
            payload = dict(p.payload)
            vector = np.asarray(p.vector or [], dtype=np.float32)
            out.append(Kept(MemoryRecord.from_payload(payload), payload, vector))
    return out


def _digest_memory(k: Kept) -> DigestMemory:
    r = k.record
    return DigestMemory(
        r.id,
        r.text,
        r.valid_from,
        r.meta.project_id,
        r.meta.job_id,
        r.meta.task_id,
        k.vector.tolist(),
    )


def render_digest(
    digests: list[NodeDigest], tenant_id: str, day: str, outcome: DigestOutcome | None = None
) -> str:
    """The digest as Markdown: one section per node, each line with its memory ids.

    With an LLM ``outcome``, the header says who wrote it and which nodes fell back to the
    offline digest (and why); each node says ``written by``.
    """
    lines = [f"# Digest of {tenant_id}, {day}", ""]
    llm = set(outcome.llm_nodes) if outcome else set()
    if outcome is not None:
        lines += [f"Digest: {outcome.mode} ({outcome.reason})", ""]
        if outcome.fallbacks:
            lines.append("Fell back to the offline digest:")
            lines += [f"- `{node}`: {why}" for node, why in sorted(outcome.fallbacks.items())]
            lines.append("")
    for d in digests:
        title = f" — {d.title}" if d.title else ""
        lines += [f"## {d.level} `{d.node_id}`{title}", "", f"{d.memory_count} memories", ""]
        if outcome is not None and outcome.mode == "llm":
            lines += [f"written by: {'llm' if d.node_id in llm else 'offline'}", ""]
        for name, section in (("Decided", d.decided), ("Current", d.current), ("Open", d.open)):
            if not section:
                continue
            lines.append(f"### {name}")
            for line in section:
                ids = f" `{', '.join(line.ids)}`" if line.ids else ""
                lines.append(f"- {line.text}{ids}")
            lines.append("")
    return "\n".join(lines) + "\n"


def digest_rows(digests: list[NodeDigest], outcome: DigestOutcome | None = None) -> str:
    """The digest as JSONL (one node a line), re-ingested as one condensed memory per node.

    With an ``outcome`` (``compress.digest: llm``), ``written_by`` is ``llm`` for a node the
    LLM wrote, else ``offline``, and ``fallback`` holds the reason when the LLM's answer for
    the node was rejected.
    """
    rows = []
    llm = set(outcome.llm_nodes) if outcome else set()
    fallbacks = outcome.fallbacks if outcome else {}
    for d in digests:
        row: dict[str, Any] = {}
        if outcome is not None:
            row = {"written_by": "llm" if d.node_id in llm else "offline"}
            row["fallback"] = fallbacks.get(d.node_id)
        rows.append(
            json.dumps(
                {
                    **row,
                    "node_id": d.node_id,
                    "level": d.level,
                    "title": d.title,
                    "status": d.status,
                    "scope": d.scope,
                    "memory_count": d.memory_count,
                    "decided": [{"text": x.text, "ids": list(x.ids)} for x in d.decided],
                    "current": [{"text": x.text, "ids": list(x.ids)} for x in d.current],
                    "open": [{"text": x.text, "ids": list(x.ids)} for x in d.open],
                },
                sort_keys=True,
            )
        )
    return "\n".join(rows) + ("\n" if rows else "")


def write_tree(
    ctx: EngineContext,
    tenant_id: str,
    root: Path,
    items: list[Kept],
    day: str,
    *,
    private: bool = False,
) -> TreeResult:
    """Themes and digest of ``items`` into ``root`` (files replaced atomically).

    ``private``: the tree holds private memories (an LLM digest only through a loopback
    endpoint, :func:`~nika_tui.services.digest_writer.select_writer`).
    """
    result = TreeResult(root, memories=len(items))
    themes = cluster(items)
    for theme, slug in zip(themes, slugs(themes), strict=True):
        md, jsonl = topic_paths(slug, day)
        atomic_write_text(root / md, render(theme, slug, tenant_id))
        atomic_write_text(root / jsonl, render_jsonl(theme))
        result.files += [str(md), str(jsonl)]
        result.kept += len(theme.members)
    if items:
        ids = {k.record.id for k in items}
        pairs = [(i.id, i.old_id, i.new_id) for i in list_items(ctx.redis, tenant_id)]
        digests = synthesise(
            [_digest_memory(k) for k in items],
            ctx.hierarchy_nodes(tenant_id),
            [p for p in pairs if p[1] in ids or p[2] in ids],
            ctx.clock(),
        )
        config = ctx.tenant(tenant_id)
        judge, why = select_writer(
            config,
            ctx.settings.roots,
            ctx.secrets_env,
            private=private,
            path=ctx.child_env.get("PATH"),
        )
        if judge is None:
            result.digest = DigestOutcome("offline", why)
        else:
            digests, result.digest = llm_digests(judge, digests, why)
        # The default (offline by setting) writes the same files as before the setting existed.
        asked = config.compress.digest is DigestMode.LLM
        shown = result.digest if asked else None
        base = Path("knowledge") / "digest"
        atomic_write_text(root / base / f"{day}.md", render_digest(digests, tenant_id, day, shown))
        atomic_write_text(root / base / f"{day}.jsonl", digest_rows(digests, shown))
        result.files += [str(base / f"{day}.md"), str(base / f"{day}.jsonl")]
    return result


def compress(
    ctx: EngineContext, tenant_id: str, repo: Path | None = None, *, publish: bool = True
) -> CompressResult:
    """Write the tenant's current memories into the knowledge trees, commit and push.

    Args:
        ctx: Engine context.
        tenant_id: The tenant.
        repo: The knowledge repo's work tree (default: the tenant's ``knowledge_repo``).
        publish: Push the repo to its ``origin`` when it has one.

    Returns:
        What was written, committed and pushed.

    Raises:
        ValidationFailed: no repo, or ``repo`` is not a git work tree.
        PublishFailed: git refused the commit or the push.
    """
    config = ctx.tenant(tenant_id)
    where, url = knowledge_repo(config, repo, ctx.settings.roots)
    root = prepare_repo(where, url, ctx.child_env)
    day = ctx.clock().date().isoformat()
    items = current_memories(ctx, tenant_id)
    public = config.knowledge_repo_visibility is RepoVisibility.PUBLIC
    shareable: list[Kept] = items
    private: list[Kept] = []
    reasons: dict[str, int] = {}
    if public:
        shareable, private = [], []
        for k in items:
            why = why_private(k.payload)
            (private if why else shareable).append(k)
            if why:
                reasons[why] = reasons.get(why, 0) + 1
    out = CompressResult(write_tree(ctx, tenant_id, root, shareable, day), None, None, reasons)
    message = f"nika compress {tenant_id}: {len(items)} memories, {day}"
    out.repo.commit = commit(root, out.repo.files, message, ctx.child_env)
    if public and (private or private_has_files(tenant_id, ctx)):
        tree = private_tree(tenant_id, ctx.settings.roots, ctx.child_env)
        out.private = write_tree(ctx, tenant_id, tree, private, day, private=True)
        out.private.commit = commit(tree, out.private.files, message + " (private)", ctx.child_env)
    if publish and has_remote(root, child_env=ctx.child_env):
        out.pushed = push(root, child_env=ctx.child_env)
    return out


def private_has_files(tenant_id: str, ctx: EngineContext) -> bool:
    """True when the private tree already exists (so a run with no private memory updates it)."""
    return (ctx.settings.roots.tenant_data_dir(tenant_id) / "knowledge-private" / ".git").exists()


def compress_op(ctx: EngineContext, r: req.CompressRequest) -> rep.CompressReply:
    return rep.CompressReply(compress(ctx, r.tenant_id, Path(r.repo) if r.repo else None).to_dict())
