"""Did an agent use a recalled memory? Evidence from what it wrote next (pure).

A recall hit shown to an agent for a prompt is a *positive* relevance label when the agent's
next reply carries what only that memory told it: words of the memory that were not in the
prompt. Its absence is no evidence (the agent may have needed nothing), so nothing here makes
a negative label.

The rule: the memory's distinctive tokens are its tokens of 3+ characters that are not stop
words and not in the prompt. The hit was used when the reply contains one distinctive token
that looks like an identifier or a value (a digit or an inner ``. _ - / :`` — an address, a
version, a path, a ticket), or at least two distinctive words making 40% of them. A generic
reply ("done, tests pass") carries neither.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:\-]*[A-Za-z0-9]|[A-Za-z0-9]")
_VALUE = re.compile(r"\d|[A-Za-z0-9][._/:\-][A-Za-z0-9]")
_STOP_WORDS = """the and for are was were but not you your with this that from have has had into
over than then them they their there what when where which who will would should could can may
might must all any some our out its it's also just very more most much such only been being
does did doing use used using about after before again here how why now new old last next week
day days today yesterday tomorrow one two three le la les des une est pour dans sur pas que qui
avec"""
_STOP = frozenset(_STOP_WORDS.split())
MIN_SHARE = 0.4
"""Share of the distinctive words a reply must repeat when it repeats no value."""


def tokens(text: str) -> set[str]:
    """Lower-cased tokens of 3+ characters (values such as ``10.0.9.30`` kept whole)."""
    out = set()
    for tok in _TOKEN.findall(text.lower()):
        tok = tok.strip("._/:-")
        if len(tok) >= 3 and tok not in _STOP:
            out.add(tok)
    return out


def used(memory: str, prompt: str, reply: str) -> bool:
    """True when ``reply`` carries what ``memory`` told the agent and ``prompt`` did not."""
    distinctive = tokens(memory) - tokens(prompt)
    if not distinctive:
        return False
    said = tokens(reply)
    shared = distinctive & said
    if any(_VALUE.search(t) for t in shared):
        return True
    words = [t for t in shared if not _VALUE.search(t)]
    return len(words) >= 2 and len(shared) >= MIN_SHARE * len(distinctive)
