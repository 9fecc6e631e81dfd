"""The agents' native auto-memory kept in sync with the tenant's memory (docs/automemory.md).

``claude_sync`` writes Claude Code's ``MEMORY.md`` + topic files and imports what the agent or a
person wrote there; ``codex_sync`` does the same for a managed block of Codex's ``AGENTS.md``;
``runner`` is the ``automemory.sync`` RPC op and the service's debounced scheduler.
"""
