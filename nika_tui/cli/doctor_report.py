"""One line of ``nika doctor``'s report, shared by the doctor and its runtime checks."""

from __future__ import annotations

from dataclasses import dataclass

OK, WARN, MISSING = "ok", "warn", "missing"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One line of the report."""

    name: str
    status: str
    detail: str
    fix: str = ""
    required: bool = True
