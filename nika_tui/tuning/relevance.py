"""A tenant's labelled relevance set: ``{data}/tenants/{t}/tuning/relevance.jsonl`` (0600).

One line per mark: ``{"at", "query", "project_id", "useful": [ids], "not_useful": [ids],
"expect_none": bool, "source"}``. Marks of the same query (and project) are merged; the last
mark of an id wins. Written by ``nika memory feedback``; read by the tuner.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nika_tui.domain.recall_params import Judged
from nika_tui.errors import ValidationFailed
from nika_tui.paths import Roots, roots
from nika_tui.services.relevance_log import append_jsonl, tuning_dir


def mark(
    tenant_id: str,
    query: str,
    at: str,
    useful: Sequence[str] = (),
    not_useful: Sequence[str] = (),
    expect_none: bool = False,
    project_id: str = "",
    where: Roots | None = None,
) -> dict[str, Any]:
    """Record one mark of a recall's results and return it.

    Raises:
        ValidationFailed: nothing to record, ``--none`` together with useful ids, an id that
            is not a memory id, or one id marked both useful and not useful.
    """
    if not query.strip():
        raise ValidationFailed("the query is empty", "pass the query the results answered")
    if not (useful or not_useful or expect_none):
        raise ValidationFailed(
            "nothing to record", "pass --useful ID, --not-useful ID or --none (no memory applies)"
        )
    if expect_none and useful:
        raise ValidationFailed(
            "--none says no memory answers the query, yet ids are marked useful",
            "pass one or the other",
        )
    useful, not_useful = _memory_ids(useful, "--useful"), _memory_ids(not_useful, "--not-useful")
    both = sorted(set(useful) & set(not_useful))
    if both:
        raise ValidationFailed(
            f"{both[0]} is marked both useful and not useful", "pass each id under one of them"
        )
    record = {
        "at": at,
        "query": query.strip(),
        "project_id": project_id,
        "useful": list(useful),
        "not_useful": list(not_useful),
        "expect_none": expect_none,
        "source": "feedback",
    }
    append_jsonl(tuning_dir(tenant_id, where) / "relevance.jsonl", record)
    return record


def _memory_ids(ids: Sequence[str], option: str) -> list[str]:
    """The ids as stored (memory ids are UUIDs: lower case, dashed), or a refusal naming the
    first that is not one: a typo would label nothing and be counted as a query's answer."""
    out: list[str] = []
    for raw in ids:
        try:
            out.append(str(uuid.UUID(raw.strip())))
        except ValueError:
            raise ValidationFailed(
                f"{option} {raw!r} is not a memory id",
                "copy the full id from `nika memory recall --json` (a UUID)",
            ) from None
    return out


def merge(lines: Iterable[Mapping[str, Any]]) -> list[Judged]:
    """Merge marks by (query, project): the latest mark of each id wins."""
    by_query: dict[tuple[str, str], dict[str, Any]] = {}
    for line in lines:
        key = (str(line.get("query", "")), str(line.get("project_id", "")))
        if not key[0]:
            continue
        entry = by_query.setdefault(key, {"marks": {}, "none": False})
        for i in line.get("useful") or []:
            entry["marks"][str(i)] = True
        for i in line.get("not_useful") or []:
            entry["marks"][str(i)] = False
        if line.get("expect_none"):
            entry["none"] = True
        elif line.get("useful"):
            entry["none"] = False
    return [
        Judged(
            query=q,
            project_id=p,
            useful=frozenset(i for i, ok in e["marks"].items() if ok),
            not_useful=frozenset(i for i, ok in e["marks"].items() if not ok),
            expect_none=bool(e["none"]),
        )
        for (q, p), e in by_query.items()
    ]


def load_set(tenant_id: str, where: Roots | None = None) -> list[Judged]:
    """The tenant's merged relevance set (empty when nothing was marked)."""
    path = (where or roots()).tenant_data_dir(tenant_id) / "tuning" / "relevance.jsonl"
    if not path.exists():
        return []
    lines = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue  # a torn last line after a crash: the rest still counts
        if isinstance(value, dict):
            lines.append(value)
    return merge(lines)
