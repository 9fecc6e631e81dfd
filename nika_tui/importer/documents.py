"""Instruction files (CLAUDE.md, AGENTS.md, GEMINI.md) and a project's docs, as facts.

An instruction file states rules one by one: each bullet or paragraph becomes one semantic
memory, prefixed with its section heading ("Deploys: staging deploys go through …"), so that
a later edit of one rule supersedes that rule alone. A docs page becomes one memory per
section, split at paragraph ends when longer than :data:`DOC_CHUNK_CHARS`. Valid time is the
file's modification time (when that text became what the file says).
"""

from __future__ import annotations

import re

INSTRUCTION_NAMES = frozenset({"CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md"})
DOC_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".adoc"})
DOC_CHUNK_CHARS = 1500
MIN_FACT_CHARS = 12

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")


def _blocks(text: str) -> list[tuple[str, str, int]]:
    """``(heading, block, first line)``: paragraphs and bullets under their nearest heading.

    A fenced code block stays whole with the paragraph it follows.
    """
    out: list[tuple[str, str, int]] = []
    heading = ""
    current: list[str] = []
    start = 0
    in_fence = False

    def flush() -> None:
        body = "\n".join(current).strip()
        if body:
            out.append((heading, body, start))
        current.clear()

    for n, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            in_fence = not in_fence
            current.append(line)
            continue
        if in_fence:
            current.append(line)
            continue
        match = _HEADING.match(line)
        if match:
            flush()
            heading = match.group(2)
            continue
        if not line.strip():
            # "Lint:" then a blank line then the command: one rule, not two.
            if not (current and current[-1].rstrip().endswith(":")):
                flush()
            continue
        if _BULLET.match(line) and current:
            # A new bullet closes the previous one: one rule per memory.
            flush()
        if not current:
            start = n
        current.append(line)
    flush()
    return out


def instruction_facts(text: str) -> list[tuple[int, str]]:
    """``(line, fact)`` of an instruction file: one per bullet or paragraph, with its heading."""
    facts: list[tuple[int, str]] = []
    for heading, block, line in _blocks(text):
        body = _BULLET.sub("", block, count=1).strip()
        if len(body) < MIN_FACT_CHARS:
            continue
        facts.append((line, f"{heading}: {body}" if heading else body))
    return facts


def doc_sections(text: str, title: str) -> list[tuple[int, str]]:
    """``(line, section)`` of a docs page, each at most :data:`DOC_CHUNK_CHARS` long."""
    sections: list[tuple[int, str]] = []
    chunk: list[str] = []
    chunk_line = 0
    chunk_heading = ""
    size = 0

    def flush() -> None:
        nonlocal size
        if chunk:
            head = " › ".join(x for x in (title, chunk_heading) if x)
            sections.append((chunk_line, f"{head}: " + "\n".join(chunk)))
        chunk.clear()
        size = 0

    for heading, block, line in _blocks(text):
        if heading != chunk_heading or size + len(block) > DOC_CHUNK_CHARS:
            flush()
            chunk_heading = heading
            chunk_line = line
        for start in range(0, len(block), DOC_CHUNK_CHARS):
            piece = block[start : start + DOC_CHUNK_CHARS]
            if size + len(piece) > DOC_CHUNK_CHARS:
                flush()
                chunk_line = line
            chunk.append(piece)
            size += len(piece)
    flush()
    return [(line, s) for line, s in sections if len(s) >= MIN_FACT_CHARS]
