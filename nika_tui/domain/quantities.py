"""Quantities with units, normalised, so a restatement in other units is not a change. Pure.

"10 MB" and "10 megabytes", "1 hour" and "60 minutes", "300 ms" and "0,3 seconde",
"$250,000" and "250k USD", "1.5 km" and "1500 metres", "2 L" and "2000 ml", "1 Gbps" and
"1000 Mbit/s" read the same. Only general units (time, data size, bit rate, length, volume,
mass, frequency, money multipliers); a bare number keeps its value with no unit. A lone "m"
stays the million multiplier ("$2m"): metres are spelled out or prefixed (km, cm, mm).
"""

from __future__ import annotations

import re

from nika_tui.domain.fact_parse import fold

_UNITS: dict[str, tuple[str, float]] = {}


def _add(dimension: str, factor: float, *names: str) -> None:
    for name in names:
        _UNITS[name] = (dimension, factor)


_add("time", 0.001, "ms", "msec", "millisecond", "milliseconds", "milliseconde", "millisecondes")
_add("time", 1, "s", "sec", "secs", "second", "seconds", "seconde", "secondes")
_add("time", 60, "min", "mins", "minute", "minutes", "mn")
_add("time", 3600, "h", "hr", "hrs", "hour", "hours", "heure", "heures")
_add("time", 86400, "d", "day", "days", "jour", "jours", "j")
_add("time", 604800, "week", "weeks", "semaine", "semaines", "wk")
_add("time", 2629800, "month", "months", "mois")
_add("time", 31557600, "year", "years", "an", "ans", "annee", "annees", "yr")
_add("size", 1e3, "kb", "ko", "kilobyte", "kilobytes")
_add("size", 1e6, "mb", "mo", "megabyte", "megabytes")
_add("size", 1e9, "gb", "go", "gigabyte", "gigabytes")
_add("size", 1e12, "tb", "to", "terabyte", "terabytes")
_add("size", 1024, "kib")
_add("size", 1024**2, "mib")
_add("size", 1024**3, "gib")
_add("size", 1024**4, "tib")
_add("rate", 1e3, "kbps", "kbit", "kbits")
_add("rate", 1e6, "mbps", "mbit", "mbits")
_add("rate", 1e9, "gbps", "gbit", "gbits")
_add("rate", 1e12, "tbps", "tbit", "tbits")
# Folding loses case, so "MB/s" and "Mb/s" read alike: bytes a second, as disks and APIs
# mostly mean it, kept apart from bit rates so neither is taken for a restatement of the other.
_add("byte_rate", 1e3, "kb/s", "ko/s")
_add("byte_rate", 1e6, "mb/s", "mo/s")
_add("byte_rate", 1e9, "gb/s", "go/s")
_add("length", 0.001, "mm", "millimeter", "millimeters", "millimetre", "millimetres")
_add("length", 0.01, "cm", "centimeter", "centimeters", "centimetre", "centimetres")
_add("length", 1, "meter", "meters", "metre", "metres")
_add("length", 1000, "km", "kilometer", "kilometers", "kilometre", "kilometres")
_add("length", 0.0254, "inch", "inches")  # not "in": a word in every sentence
_add("length", 0.3048, "ft", "foot", "feet")
_add("length", 1609.344, "mile", "miles")
_add("volume", 0.001, "ml", "milliliter", "milliliters", "millilitre", "millilitres")
_add("volume", 0.01, "cl", "centiliter", "centiliters", "centilitre", "centilitres")
_add("volume", 1, "l", "liter", "liters", "litre", "litres")
_add("volume", 100, "hl", "hectoliter", "hectoliters", "hectolitre", "hectolitres")
_add("volume", 1000, "m3", "kl", "kiloliter", "kilolitre", "kilolitres")
_add("mass", 0.001, "g", "gram", "grams", "gramme", "grammes")
_add("mass", 1, "kg", "kilo", "kilos", "kilogram", "kilograms", "kilogramme", "kilogrammes")
_add("mass", 1000, "tonne", "tonnes", "ton", "tons")
_add("frequency", 1, "hz", "hertz")
_add("frequency", 1e3, "khz")
_add("frequency", 1e6, "mhz")
_add("frequency", 1e9, "ghz")
_add("money", 1, "usd", "eur", "dollars", "euros", "$", "€")

_WORD_NUMBERS = {
    "half an": 0.5,
    "half a": 0.5,
    "a half": 0.5,
    "une demi": 0.5,
    "une demi-": 0.5,
    "an": 1.0,
    "a": 1.0,
    "one": 1.0,
    "une": 1.0,
    "un": 1.0,
    "two": 2.0,
    "deux": 2.0,
    "three": 3.0,
    "trois": 3.0,
}
_QUANTITY = re.compile(
    r"(?P<cur>[$€])?\s?(?P<num>\d+(?:[.,\s]\d{3})*(?:[.,]\d+)?)\s?(?P<mult>k|m|bn)?\b"
    r"\s?(?P<unit>[a-z][bo]/s|m3|[a-z€$]+)?",
    re.IGNORECASE,
)
_WORDED = re.compile(
    r"\b(?P<num>half an|half a|une demi|an|a|one|une|un|two|deux|three|trois)[\s-]"
    r"(?P<unit>hour|heure|minute|day|jour|week|semaine|month|mois|year|an)s?\b"
)
_MULT = {"k": 1e3, "m": 1e6, "bn": 1e9}


def _number(raw: str) -> float | None:
    text = raw.replace(" ", "")
    if re.fullmatch(r"\d{1,3}(,\d{3})+", text):
        text = text.replace(",", "")
    text = text.replace(",", ".")
    try:
        return float(text)
    except ValueError:
        return None


def quantities(text: str) -> set[tuple[str, float]]:
    """The quantities of a sentence as ``(dimension, value in base units)``.

    A number with no known unit is ``("number", value)``. Values are rounded to 6 significant
    digits so 0.3 s and 300 ms compare equal.

    Args:
        text: A fact.

    Returns:
        The normalised quantities.
    """
    folded = fold(text)
    out: set[tuple[str, float]] = set()
    for m in _WORDED.finditer(folded):
        unit = _UNITS.get(m.group("unit")) or _UNITS.get(m.group("unit") + "s")
        if unit:
            out.add((unit[0], _round(_WORD_NUMBERS[m.group("num")] * unit[1])))
    for m in _QUANTITY.finditer(folded):
        value = _number(m.group("num"))
        if value is None:
            continue
        if m.group("mult"):
            value *= _MULT[m.group("mult").lower()]
        unit_word = (m.group("unit") or "").lower()
        if m.group("cur"):
            out.add(("money", _round(value)))
        elif unit_word in _UNITS:
            dimension, factor = _UNITS[unit_word]
            out.add((dimension, _round(value * factor)))
        else:
            out.add(("number", _round(value)))
    return out


def _round(value: float) -> float:
    return float(f"{value:.6g}")


def same_quantities(old: str, new: str) -> tuple[bool, bool]:
    """Compare the quantities of two sentences: ``(restated, changed)``.

    Args:
        old: The old fact.
        new: The new fact.

    Returns:
        ``restated``: the new fact has quantities and each one (with a unit) equals one of
        the old fact's; ``changed``: a dimension both state has a value in each that the other
        lacks.
    """
    qo, qn = quantities(old), quantities(new)
    with_unit = {q for q in qn if q[0] != "number"}
    restated = bool(with_unit) and with_unit <= qo
    changed = any(
        {v for d, v in qo if d == dim} - {v for d, v in qn if d == dim}
        and {v for d, v in qn if d == dim} - {v for d, v in qo if d == dim}
        for dim in {d for d, _ in qo} & {d for d, _ in qn}
    )
    return restated, changed
