"""Claude Code's auto-memory directory of a tenant, in sync with its memory.

One pass, in this order (so that nothing a person or the agent wrote is ever lost):

1. **Import.** Every topic file nika did not write (the agent's own) or that changed since nika
   wrote it (an edit) is ingested — supersede applies — and *adopted*: the manifest maps it to
   the memory it became, with its current hash, and the file is left exactly as it is. The
   memory an edited file stood for is not exported again. Lines a person added to ``MEMORY.md``
   that are not pointers are imported once and kept at the top of the index.
2. **Remove.** A file nika wrote (hash unchanged) whose memory is no longer current is deleted.
   A file that vanished was deleted by the agent or a person: its memory is retired (as an
   agent's retirement: at once, or through the review queue when the tenant's
   ``agents.retire_needs_review`` says so) and never re-exported. A directory whose index and
   every file vanished was wiped, not edited: its memories are only not re-exported.
3. **Export.** Current memories of the four kinds not yet in the directory get a topic file,
   as many as the index has room for (200 lines, 25,000 characters), newest first.
4. **Index.** ``MEMORY.md`` is rewritten: the person's lines, then one pointer per file.

Idempotent: a second pass with nothing changed writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from nika_tui.automemory.common import (
    Exportable,
    SyncReport,
    exportable,
    import_texts,
    load_manifest,
    load_shadowed,
    manifest_path,
    project_of,
    save_manifest,
)
from nika_tui.domain.automemory import (
    INDEX_MAX_CHARS,
    INDEX_MAX_LINES,
    INDEX_NAME,
    FileState,
    IndexEntry,
    Manifest,
    ManifestEntry,
    MemoryKind,
    file_state,
    index_line,
    js_length,
    not_indexed_line,
    one_line,
    parse_topic,
    pointer_file,
    pointer_hook,
    project_dir_name,
    render_index,
    render_topic,
    slug,
    text_hash,
)
from nika_tui.engine.context import EngineContext
from nika_tui.hooks.context import project_from_cwd
from nika_tui.paths import FILE_MODE, Roots, ensure_private_dir
from nika_tui.services.agent_homes import claude_config_dir
from nika_tui.services.files import atomic_write_text

TARGET = "claude"
_NOT_INDEXED_MARK = "more memories are not indexed)"


def memory_dir(tenant_id: str, workdir: str, where: Roots | None = None) -> Path:
    """``{CLAUDE_CONFIG_DIR}/projects/{sanitised workdir}/memory`` of the tenant."""
    return claude_config_dir(tenant_id, where) / "projects" / project_dir_name(workdir) / "memory"


def _own_index_lines(text: str) -> list[str]:
    return [
        ln
        for ln in text.splitlines()
        if ln.strip() and pointer_file(ln) is None and not ln.rstrip().endswith(_NOT_INDEXED_MARK)
    ]


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)
    path.chmod(FILE_MODE)


def sync_claude(
    ctx: EngineContext, tenant_id: str, workdir: str, project_id: str | None = None
) -> SyncReport:
    """One sync pass of the tenant's Claude Code auto-memory for ``workdir`` (see module doc)."""
    directory = memory_dir(tenant_id, workdir, ctx.settings.roots)
    ensure_private_dir(directory)
    mpath = manifest_path(tenant_id, TARGET, project_dir_name(workdir), ctx.settings.roots)
    manifest = load_manifest(mpath)
    shadowed = load_shadowed(mpath)
    report = SyncReport(target=TARGET, path=str(directory))
    now = ctx.clock()

    # 1. Import what nika did not write, and edits of what it did.
    on_disk = {
        p.name: p.read_text(encoding="utf-8")
        for p in sorted(directory.glob("*.md"))
        if p.name != INDEX_NAME and p.is_file()
    }
    pending: list[tuple[str, str, MemoryKind | None, str]] = []  # (file, text, kind, project)
    # Supersede compares memories of one project only: what the agent writes here belongs to
    # the project it works in (the one its hooks record), so a correction meets the old fact.
    here = project_id or project_from_cwd(workdir)
    for name, text in on_disk.items():
        state = file_state(name, text_hash(text), manifest)
        if state is FileState.OURS:
            continue
        topic = parse_topic(text)
        body = topic.body or topic.description
        if not body.strip():
            continue
        project = here
        if state is FileState.EDITED:
            old = manifest.files[name].memory_id
            shadowed.add(old)
            report.kept_edits.append(name)
            project = project_of(ctx, tenant_id, old, project)  # supersede is per project
        pending.append((name, body, topic.kind, project))
    index_path = directory / INDEX_NAME
    index_text = index_path.read_text(encoding="utf-8") if index_path.exists() else ""
    own_lines = _own_index_lines(index_text)
    new_lines = [
        ln
        for ln in own_lines
        if text_hash(ln) not in manifest.imported_lines
        and not ln.lstrip().startswith("#")
        and ln.strip().lstrip("-* ").strip()
    ]
    hooks = _edited_pointers(index_text, on_disk, manifest) if index_text else []
    texts = [(body, kind, project) for _, body, kind, project in pending]
    texts += [(ln.strip().lstrip("-* ").strip(), None, here) for ln in new_lines]
    texts += [
        (hook, parse_topic(on_disk[name]).kind, project_of(ctx, tenant_id, old, here))
        for name, hook, old in hooks
    ]
    done = import_texts(ctx, tenant_id, texts, "claude-code", now)
    for (name, _, _, _), (memory_id, retired) in zip(pending, done, strict=False):
        manifest.files[name] = ManifestEntry(memory_id, text_hash(on_disk[name]))
        report.imported.append(memory_id)
        report.superseded += retired
    for ln, (memory_id, retired) in zip(new_lines, done[len(pending) :], strict=False):
        manifest.imported_lines.append(text_hash(ln))
        report.imported.append(memory_id)
        report.superseded += retired
    for (name, _, old), (memory_id, retired) in zip(
        hooks, done[len(pending) + len(new_lines) :], strict=False
    ):
        report.kept_edits.append(f"{INDEX_NAME}:{name}")
        report.imported.append(memory_id)
        report.superseded += retired
        if memory_id != old and old not in retired:
            shadowed.add(memory_id)  # the person's line already says it: no second file

    # 2. Remove nika's files whose memory is gone; retire the memories of deleted files.
    wiped = not index_path.exists() and not any(n in on_disk for n in manifest.files)
    for name in [n for n in manifest.files if n not in on_disk]:
        memory_id = manifest.files.pop(name).memory_id
        shadowed.add(memory_id)
        if not wiped:
            report.retired.append(_retire_deleted(ctx, tenant_id, memory_id, name))
    current = {e.record.id: e for e in exportable(ctx, tenant_id, project_id)}
    for name in list(manifest.files):
        if manifest.files[name].memory_id not in current:
            (directory / name).unlink()
            del manifest.files[name]
            report.removed.append(name)

    # A kept pointer goes with its file (a retired memory's edited pointer would dangle).
    manifest.pointer_lines = {
        n: ln for n, ln in manifest.pointer_lines.items() if n in manifest.files
    }

    # 3. Export what is not there yet, as far as the index has room.
    represented = {e.memory_id for e in manifest.files.values()}
    todo = sorted(
        (e for i, e in current.items() if i not in represented and i not in shadowed),
        key=lambda e: -e.record.valid_from.timestamp(),
    )
    entries = [
        _index_entry(
            name,
            (directory / name).read_text(encoding="utf-8"),
            e.memory_id,
            current,
            manifest.pointer_lines.get(name, ""),
        )
        for name, e in manifest.files.items()
    ]
    room = max(0, INDEX_MAX_LINES - len(own_lines) - len(entries))
    if len(todo) > room:
        room = max(0, room - 1)  # the last line says how many are left out
    # The index's character cap too (decision 420): the lines so far, the last line's reserve.
    chars = INDEX_MAX_CHARS - js_length("\n".join([*own_lines, *map(index_line, entries)]))
    chars -= js_length(not_indexed_line(len(todo) + len(entries))) + 1
    written = 0
    for item in todo[:room]:
        name = slug(item.record.text, item.record.id) + ".md"
        text = render_topic(name[:-3], item.kind, item.record.text)
        entry = _index_entry(name, text, item.record.id, current)
        chars -= js_length(index_line(entry)) + 1
        if chars < 0:
            break
        _write(directory / name, text)
        manifest.files[name] = ManifestEntry(item.record.id, text_hash(text))
        report.written.append(name)
        entries.append(entry)
        written += 1

    # 4. The index: the person's lines, then a pointer per file.
    unwritten = len(todo) - written
    index, fitted = render_index(own_lines, entries, not_written=unwritten)
    report.not_indexed = len(entries) - len(fitted) + unwritten
    if index != index_text:
        _write(index_path, index)
    manifest.index_sha256 = text_hash(index)
    save_manifest(mpath, manifest, shadowed)
    return report


def _retire_deleted(ctx: EngineContext, tenant_id: str, memory_id: str, name: str) -> str:
    """Retire the memory of a topic file the agent (or a person) deleted; its id, or
    ``review:{item}`` when the retirement waits for a person."""
    from nika_tui.engine.agent_ops import agent_retire
    from nika_tui.errors import ValidationFailed

    try:
        done = agent_retire(
            ctx,
            tenant_id,
            memory_id,
            f"{name} deleted from Claude Code's auto-memory",
            "claude-code",
        )
    except ValidationFailed:
        return memory_id  # gone from the store already: nothing left to retire
    return f"review:{done.review_id}" if done.status == "review" else memory_id


def _edited_pointers(
    index_text: str, on_disk: Mapping[str, str], manifest: Manifest
) -> list[tuple[str, str, str]]:
    """Pointer lines a person edited since the last pass: kept (``manifest.pointer_lines``)
    and, when the hook changed, ``(file, new hook, memory id)`` to import (decision 424).

    Only when the index changed since nika wrote it, and only for files unchanged since (the
    line nika drew for them is then exactly what it would draw now).
    """
    if text_hash(index_text) == manifest.index_sha256:
        return []
    hooks: list[tuple[str, str, str]] = []
    for raw in index_text.splitlines():
        line, name = raw.rstrip(), pointer_file(raw)
        if name is None or name not in manifest.files or name not in on_disk:
            continue
        entry = manifest.files[name]
        if file_state(name, text_hash(on_disk[name]), manifest) is not FileState.OURS:
            continue
        drawn = index_line(_index_entry(name, on_disk[name], entry.memory_id, {}))
        if line in (drawn, manifest.pointer_lines.get(name)):
            continue
        manifest.pointer_lines[name] = line
        hook = pointer_hook(line)
        if hook and hook != pointer_hook(drawn):
            hooks.append((name, hook, entry.memory_id))
    return hooks


def _index_entry(
    name: str,
    text: str,
    memory_id: str,
    current: Mapping[str, Exportable],
    line: str = "",
) -> IndexEntry:
    topic = parse_topic(text)
    known = current.get(memory_id)
    kind = topic.kind or (known.kind if known else MemoryKind.PROJECT)
    hook = topic.description or one_line(topic.body)
    newest = known.record.valid_from.timestamp() if known else float("inf")
    return IndexEntry(
        file=name,
        title=one_line(topic.name or name[:-3], 60),
        hook=one_line(hook, 120),
        kind=kind,
        newest=newest,
        line=line,
    )
