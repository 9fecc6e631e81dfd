"""Instruction-file memories: a managed block of Codex's, Gemini CLI's and OpenCode's global files.

Codex reads ``$CODEX_HOME/AGENTS.md``, Gemini CLI ``$GEMINI_CLI_HOME/.gemini/GEMINI.md`` and
OpenCode ``$OPENCODE_CONFIG_DIR/AGENTS.md`` as global instructions in every session; none has an
auto-memory directory. nika owns only the
block between :data:`BEGIN` and :data:`END` (one ``- fact`` line per memory, the same four
kinds, at most :data:`MAX_LINES`); everything outside it is the person's and is never touched.
A line inside the block that nika did not write (an edit, or one a person or the agent added) is
imported through ingest and kept; a line removed from the block stops its memory from being
written back.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from pathlib import Path

from nika_tui.automemory.common import (
    SyncReport,
    exportable,
    import_texts,
    load_manifest,
    load_shadowed,
    manifest_path,
    save_manifest,
)
from nika_tui.domain.automemory import KIND_ORDER, ManifestEntry, MemoryKind, one_line, text_hash
from nika_tui.domain.memory import Layer
from nika_tui.engine.context import EngineContext
from nika_tui.paths import ensure_private_dir
from nika_tui.services.agent_homes import agents_md, gemini_md, opencode_agents_md
from nika_tui.services.files import atomic_write_text

TARGET = "codex"
BEGIN = "<!-- nika:memory begin (kept in sync by nika; lines you add here are imported) -->"
END = "<!-- nika:memory end -->"
MAX_LINES = 100
"""Lines of the block: AGENTS.md is loaded whole into every prompt, so kept short."""
_KIND_LABEL = re.compile(r"\((" + "|".join(k.value for k in MemoryKind) + r")\)\s*")
EDIT_MIN_RATIO = 0.5
"""How alike a new line and a vanished one must be for the new one to count as its edit."""


def _split(text: str) -> tuple[str, list[str], str]:
    """(before, block lines, after); no block → the whole text is ``before``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        return text, [], ""
    block = text[start + len(BEGIN) : end].strip("\n").splitlines()
    return text[:start], block, text[end + len(END) :]


def _fact(line: str) -> str:
    """The fact of a block line, without its bullet and the ``(kind)`` label nika writes
    (kept, the label would make an edit read as another fact to the judge)."""
    return _kind_and_fact(line)[1]


def _kind_and_fact(line: str) -> tuple[MemoryKind | None, str]:
    text = line.strip().lstrip("-* ").strip()
    match = _KIND_LABEL.match(text)
    if match is None:
        return None, text
    return MemoryKind(match.group(1)), text[match.end() :].strip()


def sync_codex(
    ctx: EngineContext, tenant_id: str, project_id: str | None = None, workdir_project: str = ""
) -> SyncReport:
    """One sync pass of the managed block of the tenant's Codex ``AGENTS.md``."""
    path = agents_md(tenant_id, ctx.settings.roots)
    return sync_block(ctx, tenant_id, path, TARGET, "codex", project_id, workdir_project)


def sync_gemini(
    ctx: EngineContext, tenant_id: str, project_id: str | None = None, workdir_project: str = ""
) -> SyncReport:
    """One sync pass of the managed block of the tenant's Gemini CLI ``GEMINI.md``."""
    path = gemini_md(tenant_id, ctx.settings.roots)
    return sync_block(ctx, tenant_id, path, "gemini", "gemini-cli", project_id, workdir_project)


def sync_opencode(
    ctx: EngineContext, tenant_id: str, project_id: str | None = None, workdir_project: str = ""
) -> SyncReport:
    """One sync pass of the managed block of the tenant's OpenCode global ``AGENTS.md``."""
    path = opencode_agents_md(tenant_id, ctx.settings.roots)
    return sync_block(ctx, tenant_id, path, "opencode", "opencode", project_id, workdir_project)


def _vanished_projects(
    ctx: EngineContext, tenant_id: str, memory_ids: list[str]
) -> list[tuple[str, str]]:
    """(text, project) of the memories whose lines left the block in this pass."""
    points = ctx.vectors.retrieve(tenant_id, Layer.SEMANTIC, memory_ids) if memory_ids else []
    return [
        (str(p.payload.get("text") or ""), str(p.payload.get("project_id") or "")) for p in points
    ]


def _project_of_edit(fact: str, vanished: list[tuple[str, str]], default: str) -> str:
    """The project of the vanished memory ``fact`` most likely edits, else ``default``."""
    best, best_ratio = default, EDIT_MIN_RATIO
    for text, project in vanished:
        ratio = SequenceMatcher(None, text, fact).ratio()
        if ratio >= best_ratio:
            best, best_ratio = project, ratio
    return best


def sync_block(
    ctx: EngineContext,
    tenant_id: str,
    path: Path,
    target: str,
    agent: str,
    project_id: str | None = None,
    workdir_project: str = "",
) -> SyncReport:
    """One sync pass of the managed block of one instruction file (see the module docstring).

    A line nika did not write is imported into ``project_id``, else into the project of the
    line it edits (a line of nika's that vanished in the same pass and reads alike), else into
    ``workdir_project``: supersede compares memories of one project only.
    """
    mpath = manifest_path(tenant_id, target, project_id or "all", ctx.settings.roots)
    manifest = load_manifest(mpath)
    shadowed = load_shadowed(mpath)
    report = SyncReport(target=target, path=str(path))
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    before, block, after = _split(text)

    # Lines are keyed by their hash: nika's are in the manifest, any other line is new.
    lines = {text_hash(ln.strip()): ln for ln in block if _fact(ln) and not ln.startswith("#")}
    new = [(h, ln) for h, ln in lines.items() if h not in manifest.files]
    gone = [e.memory_id for h, e in manifest.files.items() if h not in lines]
    vanished = [] if project_id or not new else _vanished_projects(ctx, tenant_id, gone)
    items: list[tuple[str, MemoryKind | None, str]] = []
    for _, ln in new:
        kind, fact = _kind_and_fact(ln)
        items.append((fact, kind, project_id or _project_of_edit(fact, vanished, workdir_project)))
    done = import_texts(ctx, tenant_id, items, agent, ctx.clock())
    for (h, _), (memory_id, retired) in zip(new, done, strict=False):
        manifest.files[h] = ManifestEntry(memory_id, h)
        report.imported.append(memory_id)
        report.superseded += retired
    for h in [h for h in manifest.files if h not in lines]:  # removed from the block
        shadowed.add(manifest.files.pop(h).memory_id)
        report.removed.append(h[:12])

    current = {e.record.id: e for e in exportable(ctx, tenant_id, project_id)}
    for h in [h for h, e in manifest.files.items() if e.memory_id not in current]:
        manifest.files.pop(h)  # retired: its line goes
    kept = {e.memory_id: lines[h] for h, e in manifest.files.items()}
    ordered = sorted(
        (e for i, e in current.items() if i not in shadowed),
        key=lambda e: (KIND_ORDER.index(e.kind), -e.record.valid_from.timestamp()),
    )[:MAX_LINES]
    out_lines: list[str] = []
    manifest.files = {}
    for item in ordered:
        line = (
            kept.get(item.record.id) or f"- ({item.kind.value}) {one_line(item.record.text, 300)}"
        )
        if item.record.id not in kept:
            report.written.append(item.record.id)
        manifest.files[text_hash(line.strip())] = ManifestEntry(item.record.id, text_hash(line))
        out_lines.append(line)
    report.not_indexed = max(0, len(current) - len(shadowed & set(current)) - len(ordered))
    body = "\n".join(out_lines)
    if not before and not after:
        before = "# Instructions\n\n"
    new_text = f"{before}{BEGIN}\n## Memory (current facts of this tenant)\n{body}\n{END}{after}"
    if not new_text.endswith("\n"):
        new_text += "\n"
    if new_text != text:
        ensure_private_dir(path.parent)
        atomic_write_text(path, new_text)
    manifest.index_sha256 = text_hash(new_text)
    save_manifest(mpath, manifest, shadowed)
    return report
