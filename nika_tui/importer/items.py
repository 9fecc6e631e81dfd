"""What an import produces: messages read from a session, and the memories made of them.

A session's turns are history: each prompt a person typed and each turn's closing agent
message → episodic memory. The sentences of a turn (prompt or answer) that state a fact, rule
or decision → semantic memory, one memory each. Instruction files and docs → semantic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from nika_tui.domain.fact_sentences import fact_sentences
from nika_tui.domain.memory import MAX_TEXT_CHARS, Layer

MAX_TURN_CHARS = 4000
"""Longest episodic turn kept (the hooks' own bound)."""

# Text that a CLI injects as a "user" message but no person typed.
_INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<system-reminder>",
    "caveat: the messages below were generated",
    "# agents.md instructions",
    "<session_context>",  # Gemini CLI 0.61's opening message: date, OS, workspace
)


class ImportSkip(Exception):
    """One source file or line that is not imported; the message is the report's reason."""


@dataclass(frozen=True, slots=True)
class Message:
    """One user or assistant message of a session."""

    role: str
    """``user`` or ``assistant``."""
    text: str
    at: datetime
    line: int
    """1-based line of a JSONL file, or position in a JSON file's message list."""


@dataclass(slots=True)
class Session:
    """A parsed session file."""

    agent: str
    session_id: str
    cwd: str
    messages: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Lines skipped inside an otherwise good file (a torn last line)."""


@dataclass(frozen=True, slots=True)
class ImportItem:
    """One memory to queue, with where it came from."""

    text: str
    layer: Layer
    at: datetime
    source_file: str
    line: int
    session_id: str
    agent: str
    project_id: str
    kind: str
    """``prompt``, ``turn`` (episodic), ``fact`` (a sentence of either), ``instruction`` or
    ``doc``."""
    origin: str = ""
    """The file on disk when ``source_file`` names a part of it (an OpenCode database's
    session: ``<db>#<session id>``); the ledger tracks files on disk."""

    @property
    def ledger_file(self) -> str:
        """The file on disk this item was read from."""
        return self.origin or self.source_file

    @property
    def source(self) -> str:
        """``file:line``, the NIKA_META ``source``."""
        return f"{self.source_file}:{self.line}"

    def key(self, tenant_id: str) -> str:
        """Idempotency key: the same item of the same file always maps to one point."""
        raw = "\x1f".join(
            ("import", tenant_id, self.source_file, str(self.line), self.layer.value, self.text)
        )
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def is_injected(text: str) -> bool:
    """True for text a CLI put in a user message (environment, instructions, commands)."""
    head = text.lstrip()[:60].casefold()
    return any(head.startswith(p) for p in _INJECTED_PREFIXES)


def session_items(
    session: Session,
    source_file: str,
    project_id: str,
    keep_prompt: Callable[[str], bool],
    keep_turn: Callable[[str], bool],
    mask: Callable[[str], str],
) -> list[ImportItem]:
    """A session's turns (episodic) and the facts and decisions stated in them (semantic).

    Episodic: each prompt a person typed (worth keeping: not a slash command or an
    acknowledgement) unless it only states facts, and each turn's closing agent message.
    Semantic: only the sentences of those prompts and of every agent message that state a
    fact, rule or decision (:func:`~nika_tui.domain.fact_sentences.fact_sentences`), each
    with its message's line and time; a task request, a question or the agent's account of
    its work stays episodic.
    """
    out: list[ImportItem] = []
    pending: Message | None = None

    def add(msg: Message, layer: Layer, kind: str, text: str | None = None) -> None:
        out.append(_item(session, msg, layer, kind, source_file, project_id, mask, text))

    def close_turn() -> None:
        if pending is not None and keep_turn(pending.text):
            add(pending, Layer.EPISODIC, "turn")

    for msg in sorted(session.messages, key=lambda m: (m.at, m.line)):
        if msg.role == "user":
            close_turn()
            pending = None
            if not is_injected(msg.text) and keep_prompt(msg.text):
                facts = fact_sentences(msg.text)
                # A prompt that only states facts is all in semantic memory; kept twice, the
                # same text would come back twice from one recall.
                if _words(" ".join(facts)) != _words(msg.text):
                    add(msg, Layer.EPISODIC, "prompt")
                for sentence in facts:
                    add(msg, Layer.SEMANTIC, "fact", sentence)
        elif msg.role == "assistant" and msg.text.strip():
            pending = msg
            for sentence in fact_sentences(msg.text):
                add(msg, Layer.SEMANTIC, "fact", sentence)
    close_turn()
    return out


def _words(text: str) -> list[str]:
    return text.split()


def _item(
    session: Session,
    msg: Message,
    layer: Layer,
    kind: str,
    source_file: str,
    project_id: str,
    mask: Callable[[str], str],
    text: str | None = None,
) -> ImportItem:
    limit = MAX_TURN_CHARS if layer is Layer.EPISODIC else MAX_TEXT_CHARS
    return ImportItem(
        text=mask((msg.text if text is None else text).strip())[:limit],
        layer=layer,
        at=msg.at,
        source_file=source_file,
        line=msg.line,
        session_id=session.session_id,
        agent=session.agent,
        project_id=project_id,
        kind=kind,
    )


def by_time(items: Iterable[ImportItem]) -> list[ImportItem]:
    """Items in valid-time order, so supersede sees an older fact before a newer one."""
    return sorted(items, key=lambda i: (i.at, i.source_file, i.line, i.layer.value))


def texts(items: Sequence[ImportItem]) -> list[str]:
    """The items' texts (for the benchmark's embedder reference)."""
    return [i.text for i in items]
