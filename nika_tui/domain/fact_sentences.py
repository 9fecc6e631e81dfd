"""Pick out of a session message the sentences that state a fact or a decision. Pure.

An import turns a session into memories: the turns are history (episodic), and only what a
turn *states about the project* belongs in semantic memory: "the staging host is X", "we
switched to Y", "decided to …", a rule ("never run migrations from a laptop"), a config value,
a port, a host. A task request ("add a retry"), a question, thanks, an offer or the agent's
account of what it did this session ("I updated three files") is not a fact.

A sentence is kept when it is declarative (not a question, not hedged, not a request or a
first-person account) and carries a fact signal: a decision cue (:data:`~nika_tui.domain.
synthesis.DECISION` and change verbs), a rule word, or a state verb whose sentence names a
value (host, path, port, version, id, name: :func:`~nika_tui.domain.fact_parse.parse_fact`)
or a definite subject ("the webhook secret is rotated by hand"). General vocabulary only;
deterministic, offline, no clock. Measured on a held-out labelled set
(``tests/data/import_split``, ``benchmarks/import_split.py``; docs/import.md).
"""

from __future__ import annotations

import re

from nika_tui.domain.fact_parse import NAME, NUMBER, fold, parse_fact
from nika_tui.domain.judge_cues import stance
from nika_tui.domain.synthesis import DECISION

MIN_FACT_CHARS = 15
"""Shorter sentences ("Done.", "All set.") say nothing on their own."""
MAX_FACT_CHARS = 600
"""Longer "sentences" are a paste (a log, a table), not one stated fact."""

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)]|#{1,6})\s+")
# A sentence ends at . ! ? followed by a space and what can open a sentence; "e.g. x",
# "v3.12" and "api.acme.io" do not end one.
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'`(\[]?[A-Z0-9])")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.$", re.IGNORECASE)

# Words that open a request to the agent (imperative mood), or a politeness that does.
_REQUEST_OPENERS = frozenset(
    [
        "add",
        "adjust",
        "analyse",
        "analyze",
        "apply",
        "build",
        "bump",
        "change",
        "check",
        "clean",
        "clear",
        "commit",
        "compare",
        "continue",
        "convert",
        "copy",
        "create",
        "debug",
        "delete",
        "deploy",
        "describe",
        "document",
        "do",
        "draft",
        "drop",
        "edit",
        "enable",
        "disable",
        "explain",
        "extract",
        "find",
        "finish",
        "fix",
        "generate",
        "give",
        "go",
        "grep",
        "help",
        "implement",
        "improve",
        "install",
        "investigate",
        "keep",
        "list",
        "load",
        "look",
        "make",
        "merge",
        "migrate",
        "move",
        "open",
        "optimise",
        "optimize",
        "patch",
        "paste",
        "pick",
        "port",
        "print",
        "profile",
        "push",
        "put",
        "rebase",
        "refactor",
        "reload",
        "remove",
        "rename",
        "reorder",
        "replace",
        "reproduce",
        "rerun",
        "restart",
        "retry",
        "revert",
        "review",
        "rewrite",
        "run",
        "save",
        "search",
        "see",
        "send",
        "set",
        "show",
        "simplify",
        "sort",
        "split",
        "start",
        "stop",
        "summarise",
        "summarize",
        "switch",
        "take",
        "tell",
        "test",
        "tidy",
        "try",
        "turn",
        "undo",
        "update",
        "upgrade",
        "use",
        "verify",
        "wire",
        "write",
    ]
)
_POLITE = re.compile(
    r"^(?:please|pls|can you|could you|would you|will you|can we|could we|would you mind|"
    r"i want you to|i need you to|i'd like you to|i would like you to|let me know|let me|"
    r"let's (?:look|see|check|try|start|do|get|fix|add|run|make)|go ahead|now|ok|okay|so|and|"
    r"then|also|next|first|finally)\b"
)
# The agent's (or person's) account of this session: history, not a project fact.
_FIRST_PERSON = re.compile(
    r"^(?:i|i'm|i've|i'll|i'd|me|my|i am|i have|i will|we'll|we've just|you|you'll|you can|"
    r"here is|here's|here are|below is|this (?:is|was) (?:done|fixed)|done|got it|"
    r"thanks|thank you|great|good|nice|hmm|oh|ah|well|sorry)\b"
)
# An answer's opening word ("Yes, the index is rebuilt nightly"): the rest is what it states.
_INTERJECTION = re.compile(
    r"^(?:yes|no|yeah|yep|nope|ok|okay|sure|right|indeed|correct|noted|understood|agreed)\b[,:;.!]?\s*"
)
# A sentence opened by a past-tense verb has no subject: a bullet of work done ("renamed X").
_WORK_DONE = re.compile(r"^[a-z]+ed\b")
_OFFER = re.compile(
    r"\b(?:shall i|should i|want me to|would you like|do you want|let me know|if you want|"
    r"if you'd like|happy to|i can also|feel free)\b"
)
_RULE = re.compile(
    r"^(?:always|never|don't|do not|must|no more|avoid|only)\b|\b(?:must|must not|mustn't|"
    r"never|always|is not allowed|are not allowed|is forbidden|from now on|going forward|"
    r"by convention|the convention is|the rule is)\b"
)
_CHANGE = re.compile(
    r"\b(?:switched|migrated|moved|replaced|standardi[sz]ed on|went with|going with|"
    r"go with|let's use|let's keep|we use|we keep|deprecated|pinned|renamed|retired|"
    r"decommissioned|dropped support|now (?:goes|go|runs|run|uses|use|lives|live|points)|"
    r"since the|as of)\b"
)
# A verb that states how things are (present or a settled past), not what was just done.
_STATE = re.compile(
    r"\b(?:is|are|was|were|isn't|aren't|'s|'re|runs|run on|run in|lives|live in|listens|"
    r"listen on|sits|stored|kept|hosted|owned|owns|uses|talks to|talk to|points to|"
    r"goes through|go through|holds|serves|handles|reads|writes to|requires|depends on|"
    r"defaults to|expires|rotated|scheduled|rebuilt|built with|deployed to|called|named|"
    r"located|lives in|means|belongs to|happens|happen|takes|take|has|have|sets|set to|"
    r"contains|connects to|calls|returns|rejects|accepts|limits|rate-limits|caps)\b"
)
_VALUE_FAMILIES_FOR_FACTS = frozenset(
    {"location", "path", "version", "id", "email", "time", "percent", "day", "ticket", NAME}
)


def split_sentences(text: str) -> list[str]:
    """The sentences of a message: code blocks left out, each line and bullet on its own.

    Args:
        text: A session message (plain text or Markdown).

    Returns:
        The sentences, stripped, in order.
    """
    out: list[str] = []
    for raw_line in _FENCE.sub("\n", text).splitlines():
        line = _BULLET.sub("", raw_line).strip()
        if not line or line.startswith(("|", ">")):
            continue
        pending = ""
        for part in _SPLIT.split(line):
            pending = f"{pending} {part}".strip() if pending else part.strip()
            if _ABBREVIATION.search(pending):
                continue
            out.append(pending)
            pending = ""
        if pending:
            out.append(pending)
    return out


def states_fact(sentence: str) -> bool:
    """True when one sentence states a fact, rule or decision about the project.

    Args:
        sentence: One sentence of a message.

    Returns:
        Whether it belongs in semantic memory.
    """
    text = sentence.strip()
    if not MIN_FACT_CHARS <= len(text) <= MAX_FACT_CHARS or text.endswith((":", "?")):
        return False
    folded = _INTERJECTION.sub("", fold(text), count=1)
    if not folded:
        return False
    cues = stance(text)
    if cues.question or cues.hedge or cues.proposal or _OFFER.search(folded):
        return False
    decided = bool(DECISION.search(text) or _CHANGE.search(folded))
    if _FIRST_PERSON.match(folded) and not decided:
        return False
    if _WORK_DONE.match(folded) and not DECISION.search(text):
        return False
    if _is_request(folded):
        # "Use structlog, we standardised on it" states the decision behind the request.
        return bool(re.search(r"\b(?:decided|agreed|standardi[sz]ed|switched|chose)\b", folded))
    if decided or _RULE.search(folded):
        return True
    if not _STATE.search(folded):
        return False
    values = parse_fact(text).values
    if any(values.get(family) for family in _VALUE_FAMILIES_FOR_FACTS):
        return True
    if values.get(NUMBER):
        return True
    return bool(re.match(r"^(?:note that |fyi,? |yes,? )?(?:the|our)\s", folded))


def _is_request(folded: str) -> bool:
    if _POLITE.match(folded):
        rest = _POLITE.sub("", folded, count=1).lstrip(" ,")
        return not rest or _first_word(rest) in _REQUEST_OPENERS or bool(_POLITE.match(rest))
    return _first_word(folded) in _REQUEST_OPENERS


def _first_word(folded: str) -> str:
    match = re.match(r"[a-z']+", folded)
    return match.group(0) if match else ""


def fact_sentences(text: str) -> list[str]:
    """The sentences of a message that state a fact, rule or decision, verbatim, in order.

    Args:
        text: A person's prompt or an agent's answer.

    Returns:
        The sentences to keep in semantic memory (each once).
    """
    seen: set[str] = set()
    out: list[str] = []
    for sentence in split_sentences(text):
        if sentence not in seen and states_fact(sentence):
            seen.add(sentence)
            out.append(sentence)
    return out
