"""Agent transcripts: context fill and a digest (files, tools, decisions, tasks) from the tail.

Two formats, told apart by their lines:

- **Claude Code** JSONL (``~/.claude/projects/<cwd>/<session>.jsonl``): the last main-chain
  ``assistant`` line's ``message.usage``; tokens in context = ``input_tokens`` +
  ``cache_creation_input_tokens`` + ``cache_read_input_tokens``; window 200k, 1M for
  ``[1m]`` models. A ``compact_boundary`` after it means the context was just compacted.
- **Codex** rollout (``$CODEX_HOME/sessions/…/rollout-*.jsonl``): the last ``token_count``
  event; tokens = ``last_token_usage.total_tokens`` over ``info.model_context_window`` (what
  Codex itself shows).

Transcripts grow to many megabytes and are being appended to while we read: only the tail is
read (widened until a usage line is found), a torn last line is skipped, unreadable lines too.

Modules: :mod:`.read` (``read_fill``, ``read_digest``), one per format (:mod:`.claude`,
:mod:`.codex`) and what they share (:mod:`.common`: the result types, the tail reader).
"""
