"""``MEMORY.md`` stays within both of Claude Code's caps: 200 lines and 25,000 characters."""

from __future__ import annotations

from nika_tui.domain.automemory import (
    INDEX_MAX_CHARS,
    INDEX_MAX_LINES,
    IndexEntry,
    MemoryKind,
    js_length,
    pointer_file,
    render_index,
)


def _entries(n: int, hook: str) -> list[IndexEntry]:
    return [
        IndexEntry(f"fact-{i:03d}.md", f"fact-{i:03d}", hook, MemoryKind.PROJECT, float(i))
        for i in range(n)
    ]


def test_long_hooks_are_cut_at_the_character_cap_not_the_line_cap() -> None:
    # 230 pointers of ~150 characters: ~34,000 characters in far fewer than 200 lines' worth.
    entries = _entries(230, "x" * 120)
    text, fitted = render_index(["Answer in British English"], entries)
    lines = text.splitlines()
    assert js_length(text.strip()) <= INDEX_MAX_CHARS
    assert len(lines) < INDEX_MAX_LINES  # the characters ran out first
    assert lines[0] == "Answer in British English"
    assert [pointer_file(ln) for ln in lines[1:-1]] == [e.file for e in fitted]
    assert lines[-1] == f"- ({230 - len(fitted)} more memories are not indexed)"
    # Newest first: what is left out is the oldest.
    assert fitted[0].file == "fact-229.md"
    assert min(e.newest for e in fitted) > max(e.newest for e in entries if e not in fitted)
    # Full: one more pointer would not have fitted beside the count line.
    assert js_length(text.strip()) + 150 > INDEX_MAX_CHARS


def test_characters_are_counted_as_javascript_does() -> None:
    # An emoji is two UTF-16 code units: 150 of them are 300 characters to Claude Code.
    entries = _entries(100, "🚀" * 150)
    text, _ = render_index([], entries, max_chars=5_000)
    assert js_length(text.strip()) <= 5_000
    assert len(text.strip()) < 2_800  # counted as code points, half as many would fit


def test_everything_fitting_has_no_count_line() -> None:
    text, fitted = render_index([], _entries(3, "short"))
    assert len(fitted) == 3 and "not indexed" not in text
