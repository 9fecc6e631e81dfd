"""No module in ``nika_tui/`` over 400 lines without a written reason (issue #12, STYLE.md §1).

A module that grows past the limit fails here until it is split or its reason is written
below; a reason left for a module that shrank back fails too, so the list stays true.
"""

from __future__ import annotations

from pathlib import Path

LIMIT = 400
PACKAGE = Path(__file__).resolve().parents[1] / "nika_tui"

# path (relative to nika_tui/) -> why it is one module
REASONS: dict[str, str] = {
    "domain/answers.py": "the wizard's answer schema: one pydantic model tree whose "
    "cross-field validators must see every section",
    "domain/fact_parse.py": "one deterministic parser (subject, slot, value, cues) whose "
    "stages share private token helpers",
    "domain/judge_cues.py": "the offline judge's stance vocabulary: EN + FR cue lists, one "
    "phrase a line as ruff formats them, and the one reader that compiles them",
    "engine/purge.py": "plan / apply / restore of one purge journal, kept together so a "
    "crash between steps is handled in one place",
    "services/vectors/client.py": "the qdrant-client adapter of the VectorStore port: one "
    "class whose every method translates the same client errors (its generation routing is "
    "already in client_generations.py)",
    "services/tmux_sessions.py": "the one adapter over libtmux; every method translates "
    "the same tmux errors",
    "dashboard/model.py": "the dashboard port and its views, one Protocol with the frozen "
    "dataclasses it returns",
    "engine/server/pipeline.py": "the ingest state machine (read-ahead, group commit, "
    "acknowledge): its states share the batch being embedded and the uncommitted entries",
    "engine/worker.py": "one worker's leases: acquire, renew, hand off, drain and release "
    "share the lease table and must agree on who holds a tenant at every step",
    "dashboard/parse.py": "the decoders of every Redis record the dashboard reads, "
    "tested as one table",
}


def _sizes() -> dict[str, int]:
    return {
        str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }


def test_no_module_over_the_limit_without_a_reason() -> None:
    over = {name: n for name, n in _sizes().items() if n > LIMIT and name not in REASONS}
    assert over == {}, f"split these modules or write why in REASONS: {over}"


def test_every_reason_is_still_needed() -> None:
    sizes = _sizes()
    stale = [name for name in REASONS if sizes.get(name, 0) <= LIMIT]
    assert stale == [], f"these modules are back under {LIMIT} lines; drop their reason: {stale}"
