"""Turn one short fact (English or French) into what the rules judge compares.

A fact becomes: typed values (ids, locations, paths, versions, numbers, days, times, names,
statuses), content stems (the words that say *what* the fact is about), and flags (hedged,
negated, change cue, additive cue) plus the values the fact explicitly retires ("from X to",
"instead of X", "no longer X", "plus de X"). Everything is general vocabulary and regular
expressions: no lookup of particular facts. Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from nika_tui.domain.fact_vocabulary import (
    ADDITIVE_PHRASES,
    CHANGE_PHRASES,
    ENVIRONMENTS,
    HEDGE_PHRASES,
    NEGATION_WORDS,
    NUMBER_WORDS,
    STATUSES,
    STOPWORDS,
    WEEKDAYS,
)

# Value families: two facts conflict on a family when each holds a value the other lacks.
TICKET = "ticket"  # JOB-12, #381: work items, the entity a fact is about
ID = "id"  # prod-eu-1, flake8, S3: identifiers used as values
LOCATION = "location"  # URLs, hosts, IPs: one family so a host → URL move still conflicts
PATH = "path"  # /etc/app.yaml, release/*, acme/ui-kit
CHANNEL = "channel"  # #deploys
EMAIL = "email"
VERSION = "version"  # 3.12, v2, "Node 18"
NUMBER = "number"  # 8080, two, 30
PERCENT = "percent"
TIME = "time"  # 09:30
DAY = "day"  # weekday, EN or FR, canonical English
NAME = "name"  # capitalised words inside a sentence: people, products, teams
STATUS = "status"  # done, blocked, in review, en cours…

_URL = re.compile(r"\bhttps?://[^\s,;]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b")
_HASH_NUM = re.compile(r"(?<![\w#])#\d+\b")
_CHANNEL = re.compile(r"(?<![\w#])#[a-zA-Z][\w-]*")
_PATH = re.compile(r"(?<![\w@])(?:~?/[\w.*-]+(?:/[\w.*-]+)*/?|[\w.-]+(?:/[\w.*-]+)+/?)")
_HOST = re.compile(r"\b[a-zA-Z0-9][\w-]*(?:\.[\w-]+)*\.[a-zA-Z][\w-]*\b")
_TIME = re.compile(r"\b(\d{1,2})[:h](\d{2})\b")
_PERCENT = re.compile(r"\b(\d+(?:[.,]\d+)?)\s?%")
_VERSION = re.compile(r"\bv?(\d+(?:\.\d+)+)\b|\bv(\d+)\b")
_MIXED_ID = re.compile(r"\b(?=[\w-]*\d)(?=[\w-]*[a-zA-Z])[a-zA-Z0-9][\w-]*\b")
_COMPOUND_ID = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+(?![\w-])", re.IGNORECASE)
_NUMBER = re.compile(r"\b\d+\b")
_PERMISSION = re.compile(r"\bmay(?=(?:\s+[\w-]+){1,3}\s+(?:at most|at least|up to|no more than)\b)")
"""A "may" that grants a bound ("clients may send at most 500 requests", "each splice may lose
at most 0.1 dB") states a limit, not a doubt: it is not a hedge."""
_MONTH_MAY = re.compile(
    # "route 22 may go back …" is the modal after a number: the day needs a date's company.
    r"\b\d{1,2}(?:st|nd|rd|th)?\s+may\b(?=\s*(?:$|[\d,.;:)–-]|(?:at|and|to|from|in|on|until"
    r"|through|for|is|was|the)\b))|\bmay\s+\d{1,4}\b"
    r"|\b(?:in|of|from|until|till|since|by|mid|early|late|before|after|end of)[\s-]+may\b"
)
"""May the month ("18 May", "May 2025", "until mid-May") is a date, not a hedge (decision
592)."""
TOO_AS_INTENSIFIER = re.compile(
    r"\btoo (?:many|much|few|little|slow|fast|expensive|costly|big|small|high|low|late|early"
    r"|long|short|hot|cold|old|heavy|loud|weak|tight|complex|hard|\w+(?:y|ive|ous|ful|ble))\b"
)
""""polar too slow", "too many returns": "too" before an adjective says how much, it adds
nothing (decision 592)."""
_WORD = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿ0-9][\wÀ-ÖØ-öø-ÿ-]*")
_SENTENCE_BREAK = re.compile(r"[.!?;]\s")

_Norm = Callable[[re.Match[str]], str]

_FILE_SUFFIXES = ("yaml", "yml", "json", "toml", "py", "md", "txt", "cfg", "ini", "conf", "env")


@dataclass(frozen=True, slots=True)
class ParsedFact:
    """What the rules judge sees of one fact."""

    text: str
    values: Mapping[str, frozenset[str]]
    """Read-only: a parse is cached and shared (:func:`parse_fact`)."""
    content: frozenset[str]
    """Stems of the words that name the subject (values, cues and stopwords removed)."""
    environments: frozenset[str]
    mentions: frozenset[str]
    """Every normalised token and value, for "does the other fact mention X" checks."""
    retired_mentions: frozenset[str]
    """Single tokens this fact marks as outgoing ("from X to", "instead of X", "plus de X")."""
    retired_clause: frozenset[str]
    """Words of a "no longer …" / "ne … plus" clause: outgoing only where they name a value."""
    hedged: bool
    negated: bool
    change_cue: bool
    additive: bool
    sentence_initial: frozenset[str] = field(default_factory=frozenset)
    """Lower-cased capitalised words that open a sentence (maybe names, maybe not)."""


# "1,142" and "10 800" are one number each. A lead of 0 ("0,045 €") is a decimal comma, and
# a group followed by a decimal part ("1,142.5") is left alone.
_DIGIT_GROUPS = re.compile(
    r"(?<![\d.,])([1-9]\d{0,2})((?:,\d{3})+|(?:[ \u00a0\u202f]\d{3})+)(?![\d]|[.,]\d)"
)


def join_digit_groups(text: str) -> str:
    """Write grouped thousands as one number: "1,142 open issues" → "1142 open issues".

    Read as they are, the groups are two numbers and a list ("1" and "142"), so "1,142" and
    "1,315" share a value and look like a partial list change (decision 587).
    """
    return _DIGIT_GROUPS.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), text)


def fold(text: str) -> str:
    """Lower-case, strip accents, unify apostrophes: the form cue lists are written in."""
    text = text.replace("’", "'").replace("`", "'")
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def stem(word: str) -> str:
    """Crude, language-agnostic stem: plural stripped, first five letters kept.

    Five letters join deploy/deploys/deployment/déploiement and keep server/service apart.
    """
    word = fold(word)
    if "-" in word or "_" in word:
        return word  # a compound name (acme-ci-cache, max_connections) is one token, whole
    if len(word) > 3 and word[-1] in "sx" and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


@functools.lru_cache(maxsize=64)
def _phrase_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled alternation of ``phrases`` as whole words, longest first.

    Built once per cue list: a regex per phrase per call was ~2 ms of the rules judge's
    ~2.3 ms per fact (hundreds of ``re.escape`` and pattern-cache lookups), measured on the
    memory service's ingest loop. Longest first, so "no longer" wins over "longer" at one spot.
    """
    ordered = sorted(set(phrases), key=lambda p: (-len(p), p))
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, ordered)) + r")(?![\w-])")


def _has_phrase(folded: str, phrases: tuple[str, ...]) -> bool:
    return bool(phrases) and _phrase_pattern(phrases).search(folded) is not None


def _strip_phrases(folded: str, phrases: tuple[str, ...]) -> str:
    return _phrase_pattern(phrases).sub(" ", folded) if phrases else folded


class _Collector:
    """Accumulates typed values while blanking their spans out of the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.values: dict[str, set[str]] = {}

    def take(self, pattern: re.Pattern[str], family: str, norm: _Norm | None = None) -> None:
        """Record every match of ``pattern`` as a ``family`` value and blank it out."""

        def repl(match: re.Match[str]) -> str:
            raw = match.group(0)
            value = norm(match) if norm else raw.lower().rstrip(".")
            if value:
                self.values.setdefault(family, set()).add(value)
            return " " * len(raw)

        self.text = pattern.sub(repl, self.text)


def _norm_time(match: re.Match[str]) -> str:
    return f"{int(match.group(1)):02d}:{match.group(2)}"


def _norm_percent(match: re.Match[str]) -> str:
    return match.group(1).replace(",", ".")


def _norm_version(match: re.Match[str]) -> str:
    return (match.group(1) or match.group(2) or "").lower()


def _norm_url(match: re.Match[str]) -> str:
    return match.group(0).lower().rstrip("./")


def _norm_host(match: re.Match[str]) -> str:
    raw = match.group(0).lower().rstrip(".")
    if raw.rsplit(".", 1)[-1] in _FILE_SUFFIXES:
        return ""  # a file name (app.yaml), not a host: leave it to the word pass
    return raw


def _extract_values(text: str) -> tuple[str, dict[str, set[str]]]:
    c = _Collector(text)
    c.take(_URL, LOCATION, _norm_url)
    c.take(_EMAIL, EMAIL)
    c.take(_IP, LOCATION)
    c.take(_TICKET, TICKET, lambda m: m.group(0).upper())
    c.take(_HASH_NUM, TICKET)
    c.take(_CHANNEL, CHANNEL)
    c.take(_PATH, PATH)
    c.take(_HOST, LOCATION, _norm_host)
    c.take(_TIME, TIME, _norm_time)
    c.take(_PERCENT, PERCENT, _norm_percent)
    c.take(_VERSION, VERSION, _norm_version)
    c.take(_MIXED_ID, ID)
    # Lower-case compounds (acme-ci-cache, web-prod, max_connections) name things: values.
    c.take(_COMPOUND_ID, ID)
    return c.text, c.values


def mask_values(text: str) -> str:
    """The fact with its values blanked: what it is *about*, not what it says the value is.

    Typed values (hosts, versions, numbers, ids, paths…) and capitalised names inside a
    sentence are removed, so "orders listens on 8080" and "orders listens on 9090" read the
    same; the embedder compares the slots, not the values.

    Args:
        text: A fact.

    Returns:
        The masked text, whitespace collapsed (the original text when nothing is left).
    """
    rest = text
    # Lower-case compounds without digits (orders-svc) name the subject more often than the
    # value: they stay, as words. Everything else the value extractor takes is blanked.
    for pattern in (_URL, _EMAIL, _IP, _TICKET, _HASH_NUM, _PATH, _HOST, _TIME, _PERCENT):
        rest = pattern.sub(lambda m: " " * len(m.group(0)), rest)
    rest = _VERSION.sub(lambda m: " " * len(m.group(0)), rest)
    rest = _MIXED_ID.sub(lambda m: " " * len(m.group(0)), rest)
    rest = rest.replace("-", " ").replace("_", " ")
    firsts = _first_word_offsets(rest, _sentence_starts(rest))
    kept: list[str] = []
    for match in _WORD.finditer(rest):
        word = match.group(0)
        if _NUMBER.fullmatch(word) or (_is_capitalised(word) and match.start() not in firsts):
            continue
        kept.append(word)
    masked = " ".join(kept)
    return masked or text


def _sentence_starts(text: str) -> set[int]:
    starts = {0}
    for match in _SENTENCE_BREAK.finditer(text):
        starts.add(match.end())
    return starts


def _first_word_offsets(text: str, starts: set[int]) -> set[int]:
    """Offset of the first word after each sentence start."""
    firsts: set[int] = set()
    for start in starts:
        match = _WORD.search(text, start)
        if match:
            firsts.add(match.start())
    return firsts


def _is_capitalised(word: str) -> bool:
    return word[:1].isupper() and any(ch.islower() for ch in word)


def _is_acronym(word: str) -> bool:
    return len(word) >= 2 and word.isupper() and word.isalpha()


def _retired_mentions(text: str) -> tuple[set[str], set[str]]:
    """Tokens a fact marks as outgoing: "from X to", "instead of X"; and "no longer …" words."""
    folded = fold(text)
    out: set[str] = set()
    clause: set[str] = set()
    token = r"([#/\w.:-]+)"
    # "de X vers Y" / "de X à Y" needs the accent: folded, "à" (to) and "a" (has) look alike.
    accented = text.casefold().replace("’", "'")
    for m in re.finditer(rf"\bde {token}(?: [\w.-]+)? (?:vers|à)(?!\w)", accented):
        out.add(fold(m.group(1)).strip(".:"))
    for pattern in (
        rf"\bfrom {token}(?: [\w.-]+)? (?:to|into)\b",
        rf"\binstead of {token}",
        rf"\breplaced {token}",
        rf"\b(?:took|taking|takes|take) over (?:[\w-]+ ){{0,3}}from {token}",
        rf"\bau lieu de {token}",
        rf"\ba la place de {token}",
        rf"(?:^|[.;:!?] )plus de {token}",
    ):
        out.update(m.group(1).strip(".:") for m in re.finditer(pattern, folded))
    for pattern in (
        r"\bno longer ([^.;:!?]*)",
        r"\bn'\w+ plus ([^.;:!?]*)",
        r"\bne \w+ plus ([^.;:!?]*)",
    ):
        for m in re.finditer(pattern, folded):
            clause.update(w.strip(".:,") for w in m.group(1).split())

    def keep(words: set[str]) -> set[str]:
        return {w.strip("-") for w in words if w.strip("-") and w not in STOPWORDS}

    return keep(out), keep(clause)


_STATUS_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])"), canonical)
    for phrase, canonical in sorted(STATUSES.items(), key=lambda kv: -len(kv[0]))
)
"""Status phrases (longest first), compiled once."""

_CUE_WORDS: frozenset[str] = frozenset(
    w for p in (*CHANGE_PHRASES, *HEDGE_PHRASES, *ADDITIVE_PHRASES) for w in p.split()
)


PARSE_CACHE_SIZE = 4096
"""Parsed facts kept: supersede judges a new fact against up to 8 candidates, and a current
memory against every later fact of its project, so the same texts are parsed over and over
(a parse is ~0.2-0.4 ms; in a batch of restatements it was a third of the ingest CPU)."""


_SINCE = re.compile(r"(?:\bsince|\bdepuis|\bdes|\bstarting|\bas of|\ba partir de|\blast)\s*$")
_ON = re.compile(r"\bon\s*$")
_LAST = re.compile(r"^\s*(?:dernier|passe)\b")
_PART_OF_DAYS = re.compile(r"^\s*(?:mornings|afternoons|evenings|nights)\b")


def _when_it_changed(
    day: str, before: str, after: str, change_cue: bool, values: Mapping[str, set[str]]
) -> bool:
    """A weekday that dates the change, not a value of the slot: "since Monday", "depuis
    lundi", "lundi dernier", or "… moved to 10.0.9.30 on Monday" (one day, a change cue and
    another value). "on Fridays" (a recurring day) and "moved to Monday" stay values."""
    head, tail = fold(before), fold(after)
    if _SINCE.search(head) or _LAST.match(tail):
        return True
    recurring = day not in WEEKDAYS or bool(_PART_OF_DAYS.match(tail))
    other_value = any(v for family, v in values.items() if family != DAY)
    return bool(_ON.search(head)) and change_cue and not recurring and other_value


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def parse_fact(text: str) -> ParsedFact:
    """Parse one fact into values, content stems and flags.

    Args:
        text: The fact as a person or an agent wrote it (English or French).

    Returns:
        The parsed fact; never raises on odd input (an empty text gives empty sets).
    """
    folded_full = fold(text)
    doubt = _MONTH_MAY.sub("", _PERMISSION.sub("", folded_full))
    hedged = "?" in text or _has_phrase(doubt, HEDGE_PHRASES)
    change_cue = _has_phrase(folded_full, CHANGE_PHRASES)
    additive = _has_phrase(TOO_AS_INTENSIFIER.sub("", folded_full), ADDITIVE_PHRASES)
    retired, retired_clause = _retired_mentions(text)

    rest, raw_values = _extract_values(text)
    values: dict[str, set[str]] = {k: set(v) for k, v in raw_values.items()}

    # Statuses and weekdays are found on the folded remainder (multi-word, accent-free).
    folded_rest = fold(rest)
    aligned = len(folded_rest) == len(rest)  # folding kept offsets: blank spans in both
    for pattern, canonical in _STATUS_PATTERNS:
        for m in list(pattern.finditer(folded_rest)):
            values.setdefault(STATUS, set()).add(canonical)
            blank = " " * (m.end() - m.start())
            folded_rest = folded_rest[: m.start()] + blank + folded_rest[m.end() :]
            if aligned:
                rest = rest[: m.start()] + blank + rest[m.end() :]

    # Negation is read after hedges and change phrases are removed: "not sure" is a hedge,
    # "no longer" is a change, neither is a plain negation.
    neg_scan = _strip_phrases(folded_rest, (*HEDGE_PHRASES, *CHANGE_PHRASES))
    neg_tokens = set(re.findall(r"[\w']+", neg_scan.replace("n't", " not")))
    negated = bool(neg_tokens & NEGATION_WORDS) or (
        ("ne" in neg_tokens or any(t.startswith("n'") for t in neg_tokens)) and "plus" in neg_tokens
    )

    firsts = _first_word_offsets(rest, _sentence_starts(rest))
    content: set[str] = set()
    environments: set[str] = set()
    mentions: set[str] = set()
    sentence_initial: set[str] = set()
    name_run: list[str] = []
    previous_was_name = False
    cue_words = _CUE_WORDS

    def flush_name() -> None:
        if name_run:
            values.setdefault(NAME, set()).add(" ".join(name_run).lower())
            name_run.clear()

    for match in _WORD.finditer(rest):
        word = match.group(0).strip("-_")
        if not word:
            continue
        # French elision: l'API, qu'on, s'appelle → the word after the apostrophe.
        if "'" in word:
            word = word.split("'")[-1]
        low = fold(word)
        mentions.add(low)
        is_first = match.start() in firsts
        if low in WEEKDAYS or (low.endswith("s") and low[:-1] in WEEKDAYS):
            flush_name()
            previous_was_name = False
            if not _when_it_changed(
                low, rest[: match.start()], rest[match.end() :], change_cue, values
            ):
                values.setdefault(DAY, set()).add(WEEKDAYS.get(low, WEEKDAYS.get(low[:-1], low)))
            continue
        if (_is_capitalised(word) and not is_first) or (previous_was_name and _is_acronym(word)):
            name_run.append(word)
            previous_was_name = True
            continue
        if name_run and word.isdigit():
            # "Node 18", "PostgreSQL 16": a bare number right after a name is its version.
            flush_name()
            values.setdefault(VERSION, set()).add(word)
            previous_was_name = False
            continue
        flush_name()
        previous_was_name = False
        if is_first and _is_capitalised(word):
            sentence_initial.add(low)
        if low in NUMBER_WORDS:
            values.setdefault(NUMBER, set()).add(NUMBER_WORDS[low])
            continue
        if _NUMBER.fullmatch(low):
            values.setdefault(NUMBER, set()).add(str(int(low)))
            continue
        if low in ENVIRONMENTS:
            environments.add(ENVIRONMENTS[low])
        if low in STOPWORDS or low in cue_words or low in NEGATION_WORDS or len(low) < 2:
            continue
        content.add(stem(low))
    flush_name()

    for family_values in values.values():
        mentions.update(family_values)
    return ParsedFact(
        text=text,
        values=MappingProxyType({k: frozenset(v) for k, v in values.items()}),
        content=frozenset(content),
        environments=frozenset(environments),
        mentions=frozenset(mentions),
        retired_mentions=frozenset(retired),
        retired_clause=frozenset(retired_clause),
        hedged=hedged,
        negated=negated,
        change_cue=change_cue,
        additive=additive,
        sentence_initial=frozenset(sentence_initial),
    )
