"""What a debt action did, in one sentence for a person (pure).

The executors (:mod:`nika_tui.engine.debt.actions`) return JSON for the record; a toast or a
CLI line showed that JSON raw (issue 17). :func:`describe_result` turns it into words, and
says so plainly when an approved action changed nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NOT_ASKED_AGAIN = "it is not proposed again until the memories change"

_DONE = {
    "dedup": "merged {n} near-duplicate memories (the older ones retired, never deleted)",
    "retag": "re-judged the contradictions: {n} memories retired or re-tagged",
    "boost_recency": "recall now ranks recent memories higher",
    "tighten_scope": "recall now keeps to the query's own project",
    "trim_working_memory": "the agent's context was compacted ({command})",
    "audit_judge_prompt": "the judge audit is written (see the debt screen)",
    "rotate_logs": "archived {n} bus files of past days",
    "diagnose_spawn": "the spawn diagnosis is written (see the debt screen)",
}
_NOTHING = {
    "dedup": "merged nothing: no two current memories of the same project and layer are close "
    "enough to merge (near-duplicates in different projects are kept apart on purpose)",
    "retag": "re-judged nothing: no contradiction left to settle",
    "rotate_logs": "archived nothing: no bus file of a past day",
    "audit_judge_prompt": "no judged pair to audit yet",
}


def rem_ops(result: Mapping[str, Any]) -> int | None:
    """The REM operations an action applied, or None when it was not a REM action."""
    rem = result.get("rem")
    if not isinstance(rem, Mapping):
        return None
    changed = rem.get("changed")
    return int(changed) if isinstance(changed, int) else None


def changed_nothing(action: str, result: Mapping[str, Any]) -> bool:
    """True when an action ran without error and left the memories as they were."""
    if "error" in result:
        return False
    ops = rem_ops(result)
    if ops is not None:
        return ops == 0
    return action in _NOTHING and result.get("done") is False


def describe_result(action: str, result: Mapping[str, Any]) -> str:
    """One sentence for a person: what ``action`` did, or why it did nothing.

    Args:
        action: The action kind's value (``dedup``; a ``debt.`` prefix is dropped).
        result: The executor's JSON result.

    Returns:
        The sentence.
    """
    action = action.removeprefix("debt.")
    if "error" in result:
        hint = f" ({result['hint']})" if result.get("hint") else ""
        return f"failed: {result['error']}{hint}"
    if changed_nothing(action, result):
        return f"{_NOTHING.get(action, 'changed nothing')}; {NOT_ASKED_AGAIN}"
    if result.get("done") is False:
        return str(result.get("reason") or "nothing to do")
    ops = rem_ops(result)
    archived = result.get("archived")
    n = ops if ops is not None else len(archived) if isinstance(archived, list) else 0
    template = _DONE.get(action, "done")
    return template.format(n=n, command=result.get("command", "compact"))
