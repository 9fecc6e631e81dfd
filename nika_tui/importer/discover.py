"""From the SOURCEs a person names to the memories to queue, with every skip explained.

A SOURCE is a path (a file, a folder) or a keyword naming a CLI's own store: ``claude``
(``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, its ``projects``), ``codex`` (``$CODEX_HOME`` or
``~/.codex``, its ``sessions``), ``gemini`` (``~/.gemini/tmp``), ``opencode``
(``$XDG_DATA_HOME/opencode``: its ``opencode.db``, else the pre-1.2 ``storage`` tree).
Skip rules, each a line in the report and nothing of
the file imported: a symlink leading outside the folder named, a file over the size limit, a
binary file (a NUL byte in its first 8 KiB), text that is not UTF-8, a malformed session.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from nika_tui.domain.memory import Layer
from nika_tui.importer.documents import (
    DOC_SUFFIXES,
    INSTRUCTION_NAMES,
    doc_sections,
    instruction_facts,
)
from nika_tui.importer.items import ImportItem, ImportSkip, Session, session_items
from nika_tui.importer.sessions import (
    jsonl_objects,
    read_claude,
    read_codex,
    read_gemini,
    read_gemini_jsonl,
    read_opencode,
    read_opencode_db,
    sniff_jsonl,
)

MAX_SESSION_BYTES = 256 * 1024 * 1024
MAX_DOC_BYTES = 2 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
OPENCODE_DB = "opencode.db"
_PRUNED_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox"})


@dataclass(frozen=True, slots=True)
class Unit:
    """One thing to read: a file, or an OpenCode session inside its storage tree."""

    path: Path
    kind: str
    """``jsonl`` (Claude Code / Codex / Gemini), ``gemini`` (a single-object JSON session),
    ``opencode`` (a session of the JSON tree), ``opencode-db``, ``instruction``, ``doc``."""
    storage: Path | None = None

    def fingerprint(self) -> str:
        """Size and mtime: an unchanged file need not be read again.

        An OpenCode database is in WAL mode, and a running OpenCode does not checkpoint after
        each session: its newest messages are in ``<db>-wal`` while the database file is
        untouched, so the WAL's size and mtime are part of the database's fingerprint.
        """
        st = self.path.stat()
        out = f"{st.st_size}:{st.st_mtime_ns}"
        if self.kind == "opencode-db":
            try:
                wal = self.path.with_name(self.path.name + "-wal").stat()
            except FileNotFoundError:
                return out
            out += f"+wal:{wal.st_size}:{wal.st_mtime_ns}"
        return out


@dataclass(frozen=True, slots=True)
class Policy:
    """How items are made (the hooks' rules, the masker, an optional fixed project)."""

    keep_prompt: Callable[[str], bool]
    keep_turn: Callable[[str], bool]
    mask: Callable[[str], str]
    project_of: Callable[[str], str]
    project: str = ""
    max_session_bytes: int = MAX_SESSION_BYTES
    max_doc_bytes: int = MAX_DOC_BYTES


def keyword_root(name: str, home_env: Mapping[str, str]) -> Path | None:
    """The store of a CLI named by keyword (under ``home_env``'s ``HOME`` / ``XDG_DATA_HOME`` /
    ``CLAUDE_CONFIG_DIR`` / ``CODEX_HOME``), or None for a path."""
    home = Path(home_env.get("HOME") or Path.home())
    data = Path(home_env.get("XDG_DATA_HOME") or home / ".local" / "share")
    roots = {
        "claude": Path(home_env.get("CLAUDE_CONFIG_DIR") or home / ".claude") / "projects",
        "codex": Path(home_env.get("CODEX_HOME") or home / ".codex") / "sessions",
        "gemini": home / ".gemini" / "tmp",
        "opencode": data / "opencode",
    }
    return roots.get(name)


def _classify(path: Path) -> str | None:
    if path.name == OPENCODE_DB or (path.name.startswith("opencode-") and path.suffix == ".db"):
        # opencode.db, or opencode-<channel>.db for a non-stable release channel.
        return "opencode-db"
    if path.name in INSTRUCTION_NAMES:
        return "instruction"
    if path.suffix == ".jsonl":
        return "jsonl"
    if path.suffix == ".json" and path.name.startswith("session-"):
        return "gemini"
    if path.suffix.lower() in DOC_SUFFIXES:
        return "doc"
    return None


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except ValueError:
        return False
    return True


def discover(sources: list[str], home_env: Mapping[str, str]) -> tuple[list[Unit], list[str]]:
    """The units the sources name, and report lines for what is skipped while listing."""
    units: list[Unit] = []
    notes: list[str] = []
    seen: set[Path] = set()

    def add(unit: Unit) -> None:
        real = unit.path.resolve()
        if real not in seen:
            seen.add(real)
            units.append(unit)

    for source in sources:
        root = keyword_root(source, home_env) if os.sep not in source else None
        target = Path(os.path.expanduser(source)) if root is None else root
        if not target.exists():
            hint = MISSING_HINTS.get(source, MISSING_PATH_HINT) if root else MISSING_PATH_HINT
            notes.append(f"skipped {source}: no such file or folder ({target}): {hint}")
            continue
        if target.is_file():
            kind = _classify(target)
            if kind is None:
                notes.append(f"skipped {target}: {NOT_IMPORTABLE}")
            else:
                add(Unit(target, kind))
            continue
        real_root = target.resolve()
        databases = sorted(p for p in target.glob("opencode*.db") if _classify(p) == "opencode-db")
        if databases:
            # OpenCode 1.2+ migrated its JSON tree into the database: read the database only.
            for db in databases:
                add(Unit(db, "opencode-db"))
            if (target / "storage").is_dir():
                notes.append(
                    f"skipped {target / 'storage'}: OpenCode's pre-1.2 files, already migrated "
                    f"into {OPENCODE_DB}"
                )
            continue
        if (target / "storage" / "session").is_dir():
            target = target / "storage"
        if (target / "session").is_dir() and (target / "message").is_dir():
            for path in sorted((target / "session").glob("*/*.json")):
                if _inside(path, real_root):
                    add(Unit(path, "opencode", storage=target))
                else:
                    notes.append(f"skipped {path}: symlink outside {target}: {SYMLINK_HINT}")
            continue
        for path, note in _walk(target, real_root):
            if note:
                notes.append(note)
                continue
            kind = _classify(path)
            if kind is not None:
                add(Unit(path, kind))
            elif root is None and not path.name.startswith("."):
                # Not reported: a hidden file (.project_root, .DS_Store) or any other file of
                # a CLI's own store is its bookkeeping, nothing the person can or should fix.
                notes.append(f"skipped {path}: {NOT_IMPORTABLE}")
    return units, notes


def sessions_in(unit: Unit) -> int:
    """How many sessions a unit holds, without reading them: an OpenCode database's top-level
    sessions (counted in it), one for a session file, none for an instruction file or document.

    A database that cannot be counted counts as one: the import itself reports why.
    """
    if unit.kind in ("instruction", "doc"):
        return 0
    if unit.kind != "opencode-db":
        return 1
    try:
        db = sqlite3.connect(f"{unit.path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT count(*) FROM session WHERE parent_id IS NULL").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return 1
    return int(row[0])


def _walk(top: Path, real_root: Path) -> Iterator[tuple[Path, str]]:
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        here = Path(dirpath)
        kept = []
        for d in sorted(dirnames):
            if d in _PRUNED_DIRS:
                continue
            if (here / d).is_symlink() and not _inside(here / d, real_root):
                yield here / d, f"skipped {here / d}: symlink outside {top}: {SYMLINK_HINT}"
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in sorted(filenames):
            path = here / name
            if path.is_symlink() and not _inside(path, real_root):
                yield path, f"skipped {path}: symlink outside {top}: {SYMLINK_HINT}"
            elif path.is_file():
                yield path, ""


# Each skip reason ends with what the person can do about it: the report is read by someone
# deciding whether to fix a file and run the import again.
SESSION_HUGE_HINT = "raise the limit with --max-file-mb to import it"
DOC_HUGE_HINT = "documents have a fixed limit: split it into smaller files to import it"
UNREADABLE_HINT = "check the file's permissions and run the import again"
# A link is followed only inside what the person named: reaching further is their choice.
SYMLINK_HINT = "name the link's target as a SOURCE to import it"
NOT_IMPORTABLE = (
    "not a session, instruction file or document: name session files (.jsonl, Gemini "
    "session-*.json, opencode.db), CLAUDE.md / AGENTS.md / GEMINI.md or documents "
    "(.md, .txt, .rst, .adoc), or the folders that hold them"
)
MISSING_PATH_HINT = "check the path and run the import again"
# A keyword's store is missing when the CLI keeps it elsewhere, or was never used here.
MISSING_HINTS = {
    "claude": "set CLAUDE_CONFIG_DIR to Claude Code's folder, or name its projects folder",
    "codex": "set CODEX_HOME to Codex's folder, or name its sessions folder",
    "gemini": "name Gemini CLI's session folder (…/tmp/<project hash>/chats)",
    "opencode": "set XDG_DATA_HOME to the folder that holds opencode/, or name opencode.db",
}
EMPTY_HINT = "nothing to import (a session with no turns yet); import it again once it has some"


def _huge(size: int, limit: int, hint: str) -> ImportSkip:
    # MiB both sides: --max-file-mb is read as MiB, so the limit prints as the person typed it.
    mib = 1024 * 1024
    return ImportSkip(f"huge file ({size / mib:.1f} MB, over {limit / mib:g} MB): {hint}")


def read_text_limit(path: Path, limit: int, huge_hint: str = SESSION_HUGE_HINT) -> None:
    """:class:`ImportSkip` when ``path`` is over ``limit`` bytes or unreadable."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise ImportSkip(f"unreadable ({exc.strerror or exc}): {UNREADABLE_HINT}") from None
    if size > limit:
        raise _huge(size, limit, huge_hint)


def read_text(path: Path, limit: int, huge_hint: str = SESSION_HUGE_HINT) -> str:
    """A file's text, or :class:`ImportSkip` (huge, binary, not UTF-8, unreadable)."""
    try:
        size = path.stat().st_size
        if size > limit:
            raise _huge(size, limit, huge_hint)
        data = path.read_bytes()
    except OSError as exc:
        raise ImportSkip(f"unreadable ({exc.strerror or exc}): {UNREADABLE_HINT}") from None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ImportSkip("binary file: not a session or a text document, nothing to import")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportSkip(
            f"not UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}): convert it to "
            "UTF-8 (e.g. iconv -f latin1 -t utf-8) and run the import again"
        ) from None


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC)


def plan_unit(unit: Unit, policy: Policy) -> tuple[list[ImportItem], list[str], int]:
    """The items of one unit, notes on lines skipped inside it, and its number of sessions.

    Raises:
        ImportSkip: the unit as a whole is not imported (the reason is the report line).
    """
    source_file = str(unit.path.resolve())
    if unit.kind in ("instruction", "doc"):
        text = read_text(unit.path, policy.max_doc_bytes, DOC_HUGE_HINT)
        at = _mtime(unit.path)
        project = policy.project or policy.project_of(str(unit.path.resolve().parent))
        if unit.kind == "instruction":
            pieces, kind = instruction_facts(text), "instruction"
        else:
            pieces, kind = doc_sections(text, unit.path.stem), "doc"
        return (
            [
                ImportItem(
                    policy.mask(piece)[:8000],
                    Layer.SEMANTIC,
                    at,
                    source_file,
                    line,
                    "",
                    "import",
                    project,
                    kind,
                )
                for line, piece in pieces
            ],
            [],
            0,
        )
    if unit.kind == "opencode-db":
        read_text_limit(unit.path, policy.max_session_bytes)
        items: list[ImportItem] = []
        sessions = read_opencode_db(unit.path)
        for session in sessions:
            project = policy.project or policy.project_of(session.cwd)
            items += [
                replace(item, origin=source_file)
                for item in session_items(
                    session,
                    f"{source_file}#{session.session_id}",
                    project,
                    policy.keep_prompt,
                    policy.keep_turn,
                    policy.mask,
                )
            ]
        return items, [], len(sessions)
    session = _read_session(unit, policy)
    project = policy.project or policy.project_of(session.cwd)
    items = session_items(
        session, source_file, project, policy.keep_prompt, policy.keep_turn, policy.mask
    )
    return items, session.notes, 1


def _read_session(unit: Unit, policy: Policy) -> Session:
    if unit.kind == "opencode":
        assert unit.storage is not None
        return read_opencode(unit.storage, unit.path)
    text = read_text(unit.path, policy.max_session_bytes)
    if unit.kind == "gemini":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ImportSkip(
                f"malformed JSON ({exc.msg} at line {exc.lineno}): check the file is a "
                "complete Gemini CLI session (not a copy cut short or edited by hand)"
            ) from None
        return read_gemini(data, unit.path.stem)
    objects, notes = jsonl_objects(text)
    if not objects:
        raise ImportSkip(f"an empty session file: {EMPTY_HINT}")
    fmt = sniff_jsonl(objects)
    reader = {"claude-code": read_claude, "codex": read_codex, "gemini": read_gemini_jsonl}[fmt]
    session = reader(objects, unit.path.stem)
    session.notes.extend(notes)
    return session
