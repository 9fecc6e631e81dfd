"""Which thing each fact is about: the words only one side has, aligned. Pure.

Two facts that state the same attribute of *sibling* entities ("The cache TTL of the orders
service is 30 seconds" / "billing's cache TTL: 60 seconds") read alike as sentences and as
slots, because everything but the entity is shared; a reworded update of *one* entity
("the Postgres box" / "our primary database host") also has words on each side only.

- :func:`unshared_words` and :func:`align` give the spans whose embeddings the adapter
  compares (features ``entity_cos`` and ``swap_cos``). Measured on the nine authors' pairs,
  those cosines do **not** tell siblings from rewordings (decision 266): the authors reword
  freely around an update.
- :func:`sibling_entity` and :func:`distinct_handles` are what does (decision 264): an
  update changes the value of one thing; a sentence that *also* swaps the thing named, or
  names an identifier the other never mentions, is about another thing.
- :func:`unresolved_subject`: the old fact is about two things together and the new one
  names at most one of them (decision 536): which one changed cannot be told.

Values (numbers, versions, hosts, quantities) are what an update changes, never entity words;
names with digits in them (T3, wg0, HPLC-04) are entity words.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from nika_tui.domain.fact_parse import fold, stem
from nika_tui.domain.fact_vocabulary import STOPWORDS

_TOKEN = re.compile(r"[^\W_]+(?:['’.][^\W_]+)*", re.UNICODE)
_VALUE_LIKE = re.compile(r"^[\d.,:'’]+$|^v\d[\d.]*$|^\d+[a-z]{0,3}$")
"""Numbers, versions and short quantities ("30s", "10gb"): values, not entity words."""


def _words(text: str) -> list[str]:
    out: list[str] = []
    for token in _TOKEN.findall(text.replace("-", " ").replace("_", " ")):
        low = fold(token).replace("’", "'")
        if "'" in low:  # "billing's", "l'API": the word is the part that is not the clitic
            head, _, tail = low.partition("'")
            low = tail if len(tail) > len(head) else head
        if len(low) < 2 or low in STOPWORDS or _VALUE_LIKE.match(low) or low in _CALENDAR_WORDS:
            continue
        out.append(low)
    return out


def unshared_words(old_text: str, new_text: str) -> tuple[str, str]:
    """The words of each text that the other text lacks (by stem), in order, space-joined.

    Args:
        old_text: The old fact.
        new_text: The new fact.

    Returns:
        ``(old only, new only)``; an empty string when one side adds no word.
    """
    wo, wn = _words(old_text), _words(new_text)
    so, sn = {stem(w) for w in wo}, {stem(w) for w in wn}
    old_only = [w for w in dict.fromkeys(wo) if stem(w) not in sn]
    new_only = [w for w in dict.fromkeys(wn) if stem(w) not in so]
    return " ".join(old_only), " ".join(new_only)


_ALIGN_TOKEN = re.compile(r"[^\W_]+(?:[-_.'’/][^\W_]+)*", re.UNICODE)


_QUANTITY_OR_VERSION = re.compile(r"^v?\d[\d.,:'/-]*[a-z]{0,4}$")
"""A number, version, time, date or short quantity ("30", "v1.2", "16:00", "9am",
"2026-01-05", "30s", "720p", "2h")."""
_FRENCH_CLOCK = re.compile(r"^\d{1,2}h\d{2}$")
"""A French clock time ("10h30"; "9h" is already a short quantity)."""

_WEEKDAYS = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
    | {"lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"}
)
_MONTHS = frozenset(
    # "may" is left out: as a modal it is grammar ("clients may send"), and a swapped modal
    # must not read as a changed value.
    {"january", "february", "march", "april", "june", "july", "august", "september"}
    | {"october", "november", "december", "janvier", "fevrier", "mars", "avril", "mai"}
    | {"juin", "juillet", "aout", "septembre", "octobre", "novembre", "decembre"}
)
_CALENDAR_WORDS = (
    _WEEKDAYS | {f"{day}s" for day in _WEEKDAYS} | _MONTHS | {"noon", "midnight", "midi", "minuit"}
)
"""Days, months and named times, folded: what a schedule's update changes ("deploys on
Thursdays" → "on Fridays"), as a number is."""


def _is_value(token: str) -> bool:
    """What an update changes: numbers, versions, quantities, addresses, and the calendar
    (weekdays, months, clock times, dates). A name with digits in it (T3, wg0, HPLC-04,
    edge-rtr-par2) is a word: it names *which* thing.

    Args:
        token: A folded token of :data:`_ALIGN_TOKEN`.

    Returns:
        Whether the token is a value rather than a word.
    """
    if token in _CALENDAR_WORDS:
        return True
    if not any(ch.isdigit() for ch in token):
        return False
    return "." in token or bool(_QUANTITY_OR_VERSION.match(token) or _FRENCH_CLOCK.match(token))


@dataclass(frozen=True, slots=True)
class Alignment:
    """How the two sentences differ once aligned word by word."""

    word_swaps: tuple[tuple[str, str], ...]
    """Spans replaced at the same place, both sides words (no digit): "orders" → "billing",
    "Raj" → "Elena", "the Postgres box" → "our primary database host"."""
    value_edits: int
    """Differing spans made of values only (numbers, versions, addresses)."""
    word_edits: int
    """Differing spans with at least one word (swaps, insertions, deletions)."""
    ratio: float
    """Share of the two token sequences that align (difflib's ratio)."""
    stop_swaps: int = 0
    """One grammar word swapped for another at the same place ("this Saturday" → "next
    Saturday", "Down Main" → "Up Main", "Night keepers" → "Day keepers"): not counted in
    :attr:`word_edits` (a feature the model learnt without it), but the sentence did not
    keep its words."""


def align(old_text: str, new_text: str) -> Alignment:
    """Align the two sentences token by token (stopwords kept: they anchor the shape).

    Args:
        old_text: The old fact.
        new_text: The new fact.

    Returns:
        The swapped word spans, the count of value-only and word edits, the aligned share.
    """
    to = [fold(t) for t in _ALIGN_TOKEN.findall(old_text)]
    tn = [fold(t) for t in _ALIGN_TOKEN.findall(new_text)]
    matcher = difflib.SequenceMatcher(None, to, tn, autojunk=False)
    swaps: list[tuple[str, str]] = []
    value_edits = word_edits = stop_swaps = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        a = [t for t in to[i1:i2] if t not in STOPWORDS]
        b = [t for t in tn[j1:j2] if t not in STOPWORDS]
        if op == "replace" and i2 - i1 == j2 - j1 == 1 and not (a or b):
            stop_swaps += 1
        words_a = [t for t in a if not _is_value(t)]
        words_b = [t for t in b if not _is_value(t)]
        if not words_a and not words_b:
            value_edits += bool(a or b)
            continue
        word_edits += 1
        if op == "replace" and words_a and words_b:
            swaps.append((" ".join(words_a), " ".join(words_b)))
    return Alignment(tuple(swaps), value_edits, word_edits, matcher.ratio(), stop_swaps)


def one_value_changed(aligned: Alignment) -> bool:
    """The new fact is the old sentence with one value changed and every word kept ("Rate
    limit on orders: 500/min" → "… 777/min"). Two changed values are often a number naming
    the thing and its value ("Line 2 … 900 kg" → "Line 3 … 650 kg"): on the corpus such
    pairs were KEEP 25 times and REPLACE 5 (decision 592), so they are left to the model.
    """
    return aligned.word_edits == 0 and aligned.stop_swaps == 0 and aligned.value_edits == 1


_BARE_NUMBER = re.compile(r"^\d{1,5}$")
NUMBER_NAME_SPAN = 4
"""The latest token a number naming the thing may stand at ("X-ray unit in room 2"): a
number further on is the value of a list or an assignment ("ushers on channel 3")."""


def numbered_sibling(old_text: str, new_text: str) -> bool:
    """The same attribute of another numbered thing: "Line 2 baler bale weight is 900 kg" /
    "Line 3 baler bale weight is 650 kg", "Silo 4 holds 80,000 L" / "Silo 5 holds 80,000 L".

    Only the number after a word changes at the start of the sentence, before any value;
    the words around it are the same, and both sentences go on to state a value. A number
    that is the value itself ("React 17" → "React 18", "channel 3" → "channel 4") has no
    value after it or stands later. On the corpus: 25 pairs, all KEEP (decision 592).

    Args:
        old_text: The old fact.
        new_text: The new fact.

    Returns:
        Whether the two facts name two numbered things.
    """
    to = [fold(t) for t in _ALIGN_TOKEN.findall(old_text)]
    tn = [fold(t) for t in _ALIGN_TOKEN.findall(new_text)]
    matcher = difflib.SequenceMatcher(None, to, tn, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "replace" or i2 - i1 != 1 or j2 - j1 != 1:
            continue
        if not (_BARE_NUMBER.match(to[i1]) and _BARE_NUMBER.match(tn[j1])):
            continue
        if not (0 < i1 <= NUMBER_NAME_SPAN and 0 < j1 <= NUMBER_NAME_SPAN):
            continue
        name, after = to[i1 - 1], to[i2] if i2 < len(to) else ""
        if name != tn[j1 - 1] or name in STOPWORDS or _is_value(name):
            continue
        if not after or j2 >= len(tn) or after != tn[j2] or _is_value(after):
            continue
        if any(_is_value(t) for t in to[:i1] + tn[:j1]):
            continue
        if any(_is_value(t) for t in to[i2:]) and any(_is_value(t) for t in tn[j2:]):
            return True
    return False


SIBLING_MIN_ALIGNED = 0.6
"""Share of the two sentences that must align for a swapped word to count as another entity
rather than a reworded subject (on the nine authors' pairs, at 0.6: 66 KEEP, 4 UNCERTAIN,
2 REPLACE; at 0.5: 85 / 7 / 15)."""


def sibling_entity(aligned: Alignment) -> bool:
    """The same attribute of another entity: a value changes *and* so does the thing named.

    The sentences align and a word span is swapped besides the value ("Thermostat T3 … 32 °C"
    / "Thermostat T4 … 35 °C"; "We keep 8 replicas of core-billing" / "… 4 replicas of
    us-gateway"). An update changes the value of one thing; two independent changes at the
    same places of one sentence name two things.

    Args:
        aligned: :func:`align` of the two texts.

    Returns:
        Whether the new fact is about a sibling of the old one's entity.
    """
    return bool(aligned.value_edits and aligned.word_swaps) and (
        aligned.ratio >= SIBLING_MIN_ALIGNED
    )


_HANDLE_PART = re.compile(r"[-_]")
_POSSESSIVE = re.compile(r"['’]s$")
_NOT_A_HANDLE = re.compile(r"[./@']")
"""Hosts, paths, addresses and clitics are values or grammar, not names of a thing."""


def _tokens(text: str) -> list[str]:
    # "edge-payments's cache TTL": the name is edge-payments.
    return [_POSSESSIVE.sub("", fold(t)) for t in _ALIGN_TOKEN.findall(text)]


def _is_mixed(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _handles(tokens: list[str]) -> set[str]:
    """Identifiers that name a thing: hyphenated or alphanumeric names ("edge-catalog", "T3",
    "hplc-04"), not values (hosts, versions, quantities)."""
    return {
        t
        for t in tokens
        if not _is_value(t)
        and not _NOT_A_HANDLE.search(t)
        and (
            _HANDLE_PART.search(t) or (any(c.isdigit() for c in t) and any(c.isalpha() for c in t))
        )
    }


def _mentions(tokens: list[str]) -> set[str]:
    """Every token glued (``autograder``) and every part's stem (``edge``, ``rtr``, ``fra1``)."""
    out: set[str] = set()
    for t in tokens:
        out.add(_HANDLE_PART.sub("", t))
        out |= {stem(p) for p in re.split(r"[-_./]", t) if p}
    return out


def _mentioned(handle: str, mentions: set[str]) -> bool:
    parts = [stem(p) for p in _HANDLE_PART.split(handle) if p]
    return _HANDLE_PART.sub("", handle) in mentions or all(p in mentions for p in parts)


def distinct_handles(old_text: str, new_text: str) -> bool:
    """Each fact names a thing by an identifier the other never mentions, and each states a
    value ("edge-media is scaled to 3 replicas" / "We keep 6 replicas of edge-catalog").

    "Mentions" is loose on purpose: "auto-grader" / "Autograder", "edge-rtr-fra1" / "fra1",
    "listing-import" / "listing imports" are one name written two ways.

    Args:
        old_text: The old fact.
        new_text: The new fact.

    Returns:
        Whether the two facts name two different things.
    """
    to, tn = _tokens(old_text), _tokens(new_text)
    # Both state a value of their thing. Without values the identifier is often the value
    # itself ("served from gpu-node-2" / "… gpu-node-5"): 43 of the authors' REPLACEs.
    if not (any(_is_value(t) for t in to) and any(_is_value(t) for t in tn)):
        return False
    mo, mn = _mentions(to), _mentions(tn)
    only_old = [h for h in _handles(to) if not _mentioned(h, mn)]
    only_new = [h for h in _handles(tn) if not _mentioned(h, mo)]
    return bool(only_old and only_new)


_COLLECTIVE = re.compile(
    r"\b(?:both|tous deux|toutes deux|tous les deux|toutes les deux)\b"
    # "toutes les deux semaines" is a period, not two things.
    r"(?! (?:semaines|mois|jours|ans|heures))"
)
_CONJUNCTION = re.compile(r"^(?:and|et|&)$")
_ARTICLE = frozenset({"the", "le", "la", "les", "l", "des", "du", "de", "our", "nos", "notre"})


def unresolved_subject(old_text: str, new_text: str) -> bool:
    """The old fact states one value for two named things together ("Stores 118 and 181 both
    close at 22:00") and the new one speaks of the thing in the singular, naming at most one
    of them ("The store now closes at 23:00"): which one changed cannot be told (the spec's
    unresolvable subject, UNCERTAIN; decision 536).

    Args:
        old_text: The old fact.
        new_text: The new fact.

    Returns:
        Whether the new fact's subject cannot be resolved to one of the old fact's things.
    """
    fo, fn = fold(old_text), fold(new_text)
    if not _COLLECTIVE.search(fo) or _COLLECTIVE.search(fn):
        return False
    tokens = _tokens(old_text)
    members: list[str] = []
    for i, token in enumerate(tokens):
        if _CONJUNCTION.match(token) and 0 < i < len(tokens) - 1:
            after = [t for t in tokens[i + 1 :] if t not in _ARTICLE][:1]
            members = [tokens[i - 1], *after]
            break
    if len(members) < 2:
        return False
    mentions = _mentions(_tokens(new_text))
    return sum(_mentioned(m, mentions) for m in members) < 2
