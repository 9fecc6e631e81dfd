"""``nika import``: what the user already has, into a tenant's memory.

Readers per source (:mod:`.sessions` for Claude Code, Codex, Gemini CLI and OpenCode sessions,
:mod:`.documents` for instruction files and docs folders), discovery with the skip rules
(:mod:`.discover`), the items and their keys (:mod:`.items`), the resumable ledger and the
queueing onto the normal ingest stream (:mod:`.run`).

A writer like the hooks: no engine, no torch, no qdrant here.
"""
