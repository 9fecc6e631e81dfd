"""OpenCode's first prompt of a session asks the service two things — the opening digest's
``recent`` and the prompt's own ``recall`` — and has both in flight at once (issue 13: the
hook's cost is the slower answer, not the sum of two round trips).

The stand-in service (:mod:`tests.hooks.paired_service`) answers only while it holds both
requests: a hook that waited for one answer before it sent the other request would get no
opening (its ``recent`` unanswered until its budget runs out).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from nika_tui.hooks.inject import DIGEST_TITLE, PROMPT_TITLE
from tests.hooks.conftest import TENANT, HookRun, Workspace, hook_log
from tests.hooks.paired_service import DIGEST_FACT, RECALLED_FACT, PairedMemoryService

Run = Callable[..., HookRun]
QUESTION = "Which address does the acme-api staging server have now?"


@pytest.fixture
def paired_service(
    redis_url: str, make_tenant: Callable[..., Any]
) -> Iterator[PairedMemoryService]:
    make_tenant(TENANT)
    with PairedMemoryService(redis_url) as service:
        yield service


@pytest.mark.parametrize("hookd", ["0", "1"], ids=["in-process", "hook-server"])
def test_opencode_first_prompt_has_the_digest_and_the_recall_in_flight_at_once(
    hookd: str,
    run_hook: Run,
    workspace: Workspace,
    paired_service: PairedMemoryService,
    isolated_env: dict[str, str],
) -> None:
    payload = {"session_id": f"oc-{hookd}", "cwd": str(workspace.project), "prompt": QUESTION}
    run = run_hook("opencode", "UserPromptSubmit", payload, extra_env={"NIKA_HOOKD": hookd})
    assert run.returncode == 0, run.stderr
    context = json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"]
    # Both answered, because both were asked before either answer was awaited.
    assert sorted(paired_service.answered) == ["recall", "recent"]
    assert DIGEST_FACT in context and RECALLED_FACT in context
    # The blocks keep their order: the opening first, then the prompt's own recall.
    assert context.index(DIGEST_TITLE) < context.index(DIGEST_FACT) < context.index(PROMPT_TITLE)
    assert context.index(PROMPT_TITLE) < context.index(RECALLED_FACT)
    entry = [e for e in hook_log(isolated_env) if e["event"] == "UserPromptSubmit"][-1]
    assert entry["outcome"] == "ok"
    assert not any("did not answer" in n for n in entry["notes"]), entry["notes"]
