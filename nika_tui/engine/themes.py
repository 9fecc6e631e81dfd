"""Themes (strategy A, step 3): current memories clustered by meaning into topic files.

Deterministic: memories are taken in (valid time, id) order within each project, and each joins
the first cluster whose leader is at cosine ≥ :data:`THEME_COSINE` (else it leads a new one);
there is no random choice, so the same store always gives the same themes (the "seed" of the
clustering is this order). Duplicates are folded before clustering: the same normalised text, or
cosine ≥ :data:`DUPLICATE_COSINE` with the same distinguishing tokens (numbers, paths, hosts), in
the same project and layer. The newest (valid time) stays; the others' ids are listed under it.

Each theme is written as ``knowledge/{topic}/{date}.md`` (YAML front matter ``entity_type``,
``scope``, ``recency``, ``confidence``, the source memory ids) and a machine-readable twin
``knowledge/{topic}/{date}.jsonl`` (one stored payload a line, plus ``condenses``) that a fresh
store is re-ingested from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from nika_tui.domain.memory import MemoryRecord

THEME_COSINE = 0.55
"""Cosine to a cluster's leader from which a memory shares its theme (all-MiniLM-L6-v2)."""
DUPLICATE_COSINE = 0.97
"""Cosine from which two memories with the same distinguishing tokens are one fact."""
_WORD = re.compile(r"[a-z0-9]+")
_MARKED = re.compile(r"[^\s,;()]*[0-9./:_@-][^\s,;()]*")


@dataclass
class Kept:
    """One memory kept by compression, and the ids of the duplicates folded into it."""

    record: MemoryRecord
    payload: dict[str, Any]
    vector: np.ndarray
    condenses: list[str] = field(default_factory=list)


@dataclass
class Theme:
    """One cluster of memories of one project."""

    project: str
    leader: np.ndarray
    members: list[Kept] = field(default_factory=list)

    def base_slug(self) -> str:
        """``{project}-{domain}-{first words of the leader}``, filesystem-safe."""
        first = self.members[0].record
        domain = first.meta.domain.value if first.meta.domain else "general"
        words = [w for w in _WORD.findall(first.text.lower()) if len(w) > 2][:4]
        slug = "-".join([self.project or "global", domain, *words])[:80].strip("-")
        return re.sub(r"[^a-z0-9-]", "-", slug.lower()) or "theme"


def _text_key(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def _marks(text: str) -> frozenset[str]:
    return frozenset(m.strip(".").lower() for m in _MARKED.findall(text))


class _Rows:
    """A matrix that grows by doubling (one matrix-vector product per lookup)."""

    def __init__(self, dims: int) -> None:
        self.data = np.zeros((16, dims), dtype=np.float32)
        self.n = 0

    def add(self, vector: np.ndarray) -> None:
        if self.n == len(self.data):
            self.data = np.concatenate([self.data, np.zeros_like(self.data)])
        self.data[self.n] = vector
        self.n += 1

    def sims(self, vector: np.ndarray) -> np.ndarray:
        out: np.ndarray = self.data[: self.n] @ vector
        return out


def fold_duplicates(items: Sequence[Kept]) -> list[Kept]:
    """Fold duplicates (see the module docstring); the newest of each set stays.

    Called on one theme's members (duplicates share a theme: they are far above its cosine).
    """
    newest_first = sorted(items, key=lambda k: (k.record.valid_from, k.record.id), reverse=True)
    kept: list[Kept] = []
    by_key: dict[tuple[str, str, str], Kept] = {}
    rows: _Rows | None = None
    for item in newest_first:
        rec = item.record
        key = (rec.layer.value, rec.meta.project_id, _text_key(rec.text))
        twin = by_key.get(key)
        if twin is None and rows is not None and rows.n:
            marks = _marks(rec.text)
            for j in np.flatnonzero(rows.sims(item.vector) >= DUPLICATE_COSINE):
                k = kept[int(j)]
                same_scope = (k.record.layer, k.record.meta.project_id) == (
                    rec.layer,
                    rec.meta.project_id,
                )
                if same_scope and _marks(k.record.text) == marks:
                    twin = k
                    break
        if twin is None:
            kept.append(item)
            by_key[key] = item
            if rows is None:
                rows = _Rows(len(item.vector))
            rows.add(item.vector)
        else:
            twin.condenses.append(rec.id)
            twin.condenses.extend(item.condenses)
    return kept


def cluster(items: Iterable[Kept]) -> list[Theme]:
    """Group by project, then greedily by meaning, in (valid time, id) order; then fold each
    theme's duplicates (:func:`fold_duplicates`)."""
    themes: list[Theme] = []
    leaders: dict[str, tuple[list[Theme], _Rows]] = {}
    for item in sorted(items, key=lambda k: (k.record.valid_from, k.record.id)):
        project = item.record.meta.project_id
        if project not in leaders:
            leaders[project] = ([], _Rows(len(item.vector)))
        found, rows = leaders[project]
        home = None
        if rows.n:
            hits = np.flatnonzero(rows.sims(item.vector) >= THEME_COSINE)
            home = found[int(hits[0])] if len(hits) else None
        if home is None:
            home = Theme(project, item.vector, [])
            found.append(home)
            rows.add(item.vector)
            themes.append(home)
        home.members.append(item)
    for theme in themes:
        theme.members = fold_duplicates(theme.members)
    return themes


def slugs(themes: Sequence[Theme]) -> list[str]:
    """One unique slug per theme (a repeated base slug gets ``-2``, ``-3``… in order)."""
    used: dict[str, int] = {}
    out: list[str] = []
    for theme in themes:
        base = theme.base_slug()
        used[base] = used.get(base, 0) + 1
        out.append(base if used[base] == 1 else f"{base}-{used[base]}")
    return out


def render(theme: Theme, slug: str, tenant_id: str) -> str:
    """Markdown with YAML front matter for one theme."""
    members = sorted(theme.members, key=lambda k: (k.record.valid_from, k.record.id), reverse=True)
    recs = [k.record for k in members]
    sourced = [r for r in recs if r.meta.files or r.meta.entity_ids or r.meta.session_id]
    front: dict[str, Any] = {
        "tenant_id": tenant_id,
        "topic": slug,
        "entity_type": sorted({r.layer.value for r in recs}),
        "scope": theme.project or "global",
        "recency": recs[0].valid_from.isoformat(),
        "confidence": round(len(sourced) / len(recs), 2),
        "memories": [r.id for r in recs],
        "condenses": sorted({i for k in members for i in k.condenses}),
    }
    lines = ["---", yaml.safe_dump(front, sort_keys=False).strip(), "---", "", f"# {slug}", ""]
    for k in members:
        r = k.record
        extra = [f"job {r.meta.job_id}"] if r.meta.job_id else []
        if r.meta.files:
            extra.append("files " + ", ".join(r.meta.files))
        if k.condenses:
            extra.append(f"{len(k.condenses)} duplicate(s) folded")
        suffix = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"- {r.valid_from.date().isoformat()} — {r.text}{suffix} `{r.id}`")
    return "\n".join(lines) + "\n"


def render_jsonl(theme: Theme) -> str:
    """The re-ingestable twin: one stored payload a line, with ``condenses``."""
    rows = []
    for k in sorted(theme.members, key=lambda k: (k.record.valid_from, k.record.id)):
        rows.append(json.dumps({**k.payload, "condenses": sorted(k.condenses)}, sort_keys=True))
    return "\n".join(rows) + "\n"


def topic_paths(slug: str, day: str) -> tuple[Path, Path]:
    """``knowledge/{slug}/{day}.md`` and ``.jsonl`` (relative to a tree's root)."""
    base = Path("knowledge") / slug
    return base / f"{day}.md", base / f"{day}.jsonl"
