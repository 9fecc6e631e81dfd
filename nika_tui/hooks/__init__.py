"""Agent hooks: short processes Claude Code and Codex run at lifecycle events.

``nika hook claude EVENT`` / ``nika hook codex EVENT`` read one JSON payload on stdin (Codex's
``notify`` program gets it as its last argument instead) and:

- SessionStart → recall for the tenant/project (+ the handoff packet after a compaction),
  printed as ``hookSpecificOutput.additionalContext``, bounded and labelled as data;
- UserPromptSubmit / Stop → what is worth keeping goes onto the ingest stream with a full
  NIKA_META envelope;
- PreCompact → the handoff packet, ingested in the episodic layer;
- every event → fill reading, kernel state, a ``hook.fired`` record.

A hook must never block or break the agent: :func:`.dispatch.run_hook` never raises, answers
within a time budget (Redis sockets time out after 1 s, an alarm bounds the whole run), and on
any failure logs one line to ``{data}/logs/hooks.log`` and prints nothing. Through the hook
server it answers first and captures after (:mod:`.dispatch`): the agent waits for the recall
only. Subagent events
(``agent_id`` in the payload) are skipped. This package imports no torch, textual or qdrant.

Modules: :mod:`.dispatch` (one run), :mod:`.context` (what handlers share), one handler per agent
CLI (:mod:`.claude`, :mod:`.codex`, :mod:`.gemini`, :mod:`.opencode`) and the steps they share
(:mod:`.common`, :mod:`.inject`, :mod:`.handoff`, ...).
"""
