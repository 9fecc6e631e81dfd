"""Claude Code's native auto-memory, as data: kinds, topic files, the index, the sync plan.

Layout (read from the real ``claude`` 2.1.197's system prompt, docs/automemory.md):
``{CLAUDE_CONFIG_DIR}/projects/{cwd with every non-alphanumeric character as '-'}/memory/``
holds ``MEMORY.md`` (an index, one ``- [Title](file.md) — hook`` line per memory, the first
200 lines loaded into every session) and one topic file per memory::

    ---
    name: <short-kebab-case-slug>
    description: <one line>
    metadata:
      type: user | feedback | project | reference
    ---
    <the fact>

Pure: no I/O, no clock. The adapter (``nika_tui.automemory``) reads and writes the files.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from nika_tui.domain.envelope import ActionType, Intent, Trigger
from nika_tui.domain.memory import MemoryRecord

INDEX_NAME = "MEMORY.md"
INDEX_MAX_LINES = 200
"""Claude Code loads only the first 200 lines of ``MEMORY.md``."""
INDEX_MAX_CHARS = 25_000
"""…and only its first 25,000 characters (``Zce=25000`` in ``claude`` 2.1.197, counted as a
JavaScript string's length, i.e. UTF-16 code units, on the trimmed text; decision 420)."""
KIND_TAG_PREFIX = "automemory:"
"""Entity id that pins a memory's kind (set on memories imported from auto-memory)."""

_URL = re.compile(r"https?://\S+")
_POINTER = re.compile(r"^\s*-\s*\[(?P<title>[^\]]*)\]\((?P<file>[^)\s]+\.md)\)")
_SLUG_CHARS = re.compile(r"[^a-z0-9]+")


class MemoryKind(StrEnum):
    """The four types Claude Code sorts its auto-memory into."""

    USER = "user"
    FEEDBACK = "feedback"
    PROJECT = "project"
    REFERENCE = "reference"


KIND_ORDER: tuple[MemoryKind, ...] = (
    MemoryKind.FEEDBACK,
    MemoryKind.USER,
    MemoryKind.PROJECT,
    MemoryKind.REFERENCE,
)
"""Index order when not everything fits: how to work first, then who, what, where."""

_DERIVABLE = {ActionType.CODE, ActionType.DEBUG}
"""Action types whose facts the code or ``git log`` already records (the seed: never saved)."""


def classify(record: MemoryRecord) -> MemoryKind | None:
    """The auto-memory kind of a memory, or None when it does not belong there.

    First match wins: an ``automemory:<kind>`` entity id; a URL in the text → reference;
    said by a person (trigger ``user``) as a fix or a review → feedback; said by a person
    outside any project → user; in a project and not code/debug work → project. Anything
    else (code-derivable work, machine-made records) stays out.
    """
    for entity in record.meta.entity_ids:
        if entity.startswith(KIND_TAG_PREFIX):
            try:
                return MemoryKind(entity[len(KIND_TAG_PREFIX) :])
            except ValueError:
                pass
    meta = record.meta
    if _URL.search(record.text):
        return MemoryKind.REFERENCE
    by_person = meta.trigger is Trigger.USER
    if by_person and (meta.intent is Intent.FIX or meta.action_type is ActionType.REVIEW):
        return MemoryKind.FEEDBACK
    if by_person and not meta.project_id:
        return MemoryKind.USER
    if meta.project_id and meta.action_type not in _DERIVABLE:
        return MemoryKind.PROJECT
    return None


PROJECT_DIR_MAX = 200
"""Longer directory names are cut here and suffixed with a hash (``rtt`` in claude 2.1.197)."""


def js_string_hash(text: str) -> int:
    """Claude Code's ``h = (h << 5) - h + code unit``, in 32-bit signed arithmetic."""
    h = 0
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def project_dir_name(workdir: str) -> str:
    """Claude Code's directory name for a project root (``$E`` in claude 2.1.197, decision 422).

    Every UTF-16 code unit that is not an ASCII letter or digit becomes ``-`` (so an emoji,
    two units, gives ``--``); a name longer than 200 is cut there and suffixed with ``-`` and
    the base-36 absolute value of :func:`js_string_hash` of the whole path.
    """
    units = workdir.encode("utf-16-le")
    name = "".join(
        chr(u) if u < 128 and chr(u).isalnum() else "-"
        for u in (int.from_bytes(units[i : i + 2], "little") for i in range(0, len(units), 2))
    )
    if len(name) <= PROJECT_DIR_MAX:
        return name
    return f"{name[:PROJECT_DIR_MAX]}-{_base36(abs(js_string_hash(workdir)))}"


def text_hash(text: str) -> str:
    """SHA-256 of a file's text (the manifest's change detector)."""
    return hashlib.sha256(text.encode()).hexdigest()


def one_line(text: str, limit: int = 150) -> str:
    """The first line of ``text``, whitespace folded, cut at ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def slug(text: str, memory_id: str) -> str:
    """A kebab-case file stem, unique by the memory id's first 8 characters."""
    words = _SLUG_CHARS.sub("-", text.lower()).strip("-").split("-")
    stem = "-".join(w for w in words[:6] if w)[:48].strip("-") or "memory"
    return f"{stem}-{memory_id[:8]}"


@dataclass(frozen=True, slots=True)
class TopicFile:
    """One parsed topic file."""

    name: str
    description: str
    kind: MemoryKind | None
    body: str


def render_topic(name: str, kind: MemoryKind, text: str) -> str:
    """A topic file in Claude Code's format."""
    return (
        f"---\nname: {name}\ndescription: {one_line(text)}\n"
        f"metadata:\n  type: {kind.value}\n---\n\n{text.strip()}\n"
    )


def parse_topic(text: str) -> TopicFile:
    """Parse a topic file; a file without frontmatter is all body (a person may write one)."""
    name = description = ""
    kind: MemoryKind | None = None
    body = text
    lines = text.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            for raw in lines[1:end]:
                key, _, value = raw.strip().partition(":")
                value = value.strip().strip("'\"")
                if key == "name":
                    name = value
                elif key == "description":
                    description = value
                elif key == "type" and value in {k.value for k in MemoryKind}:
                    kind = MemoryKind(value)
            body = "\n".join(lines[end + 1 :])
    return TopicFile(name=name, description=description, kind=kind, body=body.strip())


def pointer_file(line: str) -> str | None:
    """The topic file an index line points to, or None for any other line."""
    match = _POINTER.match(line)
    return match.group("file") if match else None


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One pointer of the index."""

    file: str
    title: str
    hook: str
    kind: MemoryKind
    newest: float
    """Sort key within a kind (valid time as a timestamp; larger first)."""
    line: str = ""
    """A person's own wording of this pointer, kept verbatim instead of the drawn one."""


def js_length(text: str) -> int:
    """Length as Claude Code (JavaScript) counts it: UTF-16 code units, so an emoji is 2."""
    return len(text.encode("utf-16-le")) // 2


def index_line(entry: IndexEntry) -> str:
    """The index's pointer line for one entry (a person's edit of it, when there is one)."""
    return entry.line or f"- [{entry.title}]({entry.file}) — {entry.hook}"


def pointer_hook(line: str) -> str:
    """The hook of a pointer line: what follows the link and its dash, if anything."""
    match = _POINTER.match(line)
    rest = line[match.end() :] if match else ""
    return rest.strip().lstrip("—–-:").strip()


def not_indexed_line(left: int) -> str:
    """The index's last line when ``left`` memories are not indexed."""
    return f"- ({left} more memories are not indexed)"


def render_index(
    own_lines: Sequence[str],
    entries: Sequence[IndexEntry],
    max_lines: int = INDEX_MAX_LINES,
    not_written: int = 0,
    max_chars: int = INDEX_MAX_CHARS,
) -> tuple[str, list[IndexEntry]]:
    """``MEMORY.md``: the person's own lines kept first, then pointers, within ``max_lines``
    lines and ``max_chars`` characters (Claude Code cuts the index at whichever comes first).

    Returns the text and the entries that fit. When some do not (or ``not_written`` memories
    got no file for want of room), the last line says how many are left out.
    """
    lines = [ln for ln in own_lines if ln.strip()][:max_lines]
    ordered = sorted(entries, key=lambda e: (KIND_ORDER.index(e.kind), -e.newest, e.file))
    pointers = [index_line(e) for e in ordered]
    # Each line costs its length plus the newline that joins it to the previous one.
    used = js_length("\n".join(lines))
    every = used + sum(js_length(p) + 1 for p in pointers)
    if not not_written and len(lines) + len(pointers) <= max_lines and every <= max_chars:
        return "\n".join(lines + pointers) + "\n", list(ordered)
    # Something is left out: keep room for the line that says so (its count at its widest).
    reserve = js_length(not_indexed_line(len(ordered) + not_written)) + 1
    fitted: list[IndexEntry] = []
    for entry, pointer in zip(ordered, pointers, strict=True):
        cost = js_length(pointer) + 1
        if len(lines) + 2 > max_lines or used + cost + reserve > max_chars:
            break
        lines.append(pointer)
        used += cost
        fitted.append(entry)
    left = len(ordered) - len(fitted) + not_written
    if len(lines) < max_lines and used + reserve <= max_chars:
        lines.append(not_indexed_line(left))
    return "\n".join(lines) + "\n", fitted


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """A file nika wrote or adopted: which memory it stands for and its text's hash then."""

    memory_id: str
    sha256: str


@dataclass
class Manifest:
    """What nika last wrote in one auto-memory directory (``files``: name → entry)."""

    files: dict[str, ManifestEntry] = field(default_factory=dict)
    index_sha256: str = ""
    imported_lines: list[str] = field(default_factory=list)
    """Hashes of the person's own index lines already imported."""
    pointer_lines: dict[str, str] = field(default_factory=dict)
    """File → a person's edit of its pointer line, kept verbatim while the file stays."""

    def to_json(self) -> dict[str, object]:
        """JSON-ready dict."""
        return {
            "schema_version": 1,
            "files": {
                k: {"memory_id": v.memory_id, "sha256": v.sha256} for k, v in self.files.items()
            },
            "index_sha256": self.index_sha256,
            "imported_lines": list(self.imported_lines),
            "pointer_lines": dict(self.pointer_lines),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Manifest:
        """Parse :meth:`to_json`'s output (unknown shapes give an empty manifest)."""
        files_raw = raw.get("files")
        files: dict[str, ManifestEntry] = {}
        if isinstance(files_raw, dict):
            for name, entry in files_raw.items():
                if isinstance(entry, dict):
                    files[str(name)] = ManifestEntry(
                        str(entry.get("memory_id", "")), str(entry.get("sha256", ""))
                    )
        lines = raw.get("imported_lines")
        pointers = raw.get("pointer_lines")
        return cls(
            files=files,
            index_sha256=str(raw.get("index_sha256", "")),
            imported_lines=[str(x) for x in lines] if isinstance(lines, list) else [],
            pointer_lines=(
                {str(k): str(v) for k, v in pointers.items()} if isinstance(pointers, dict) else {}
            ),
        )


class FileState(StrEnum):
    """How a topic file on disk stands against the manifest."""

    OURS = "ours"  # written by nika, untouched since
    EDITED = "edited"  # written by nika, changed since (agent or person)
    NEW = "new"  # not written by nika (the agent's own or a person's)


def file_state(name: str, on_disk_sha: str, manifest: Manifest) -> FileState:
    """Compare one file with the manifest."""
    entry = manifest.files.get(name)
    if entry is None:
        return FileState.NEW
    return FileState.OURS if entry.sha256 == on_disk_sha else FileState.EDITED
