"""The cloud judge's questions: endpoint, model, API key, then a reachability check.

Privacy ``cloud`` used to ask only the endpoint: no key, no check, so every contradiction went
to review with no reason (issue 17). The key goes to the tenant's secret store with the other
secrets once the summary is confirmed (``judge.api_key``), never into the config. The check is
one ``GET {endpoint}/models``; privacy ``local`` never reaches this section.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nika_tui.services.judge_reach import check_judge_endpoint
from nika_tui.services.provider_verify import VerifyStatus

if TYPE_CHECKING:
    from nika_tui.wizard.sections import SectionsMixin

_URL = re.compile(r"^https?://[^\s/]+\S*$")


def ask_cloud_judge(w: SectionsMixin) -> None:
    """Ask the HTTP judge's endpoint, model and key; check it answers; offer to re-enter."""
    while True:
        w.judge_endpoint = w.ask.text(
            "Judge endpoint (OpenAI-compatible base URL)",
            default=w.judge_endpoint or "",
            validate=lambda v: None if _URL.match(v) else "expected http(s)://host[/path]",
        )
        w.judge_model = (
            w.ask.text("Judge model (empty for the endpoint's default)", default="") or None
        )
        w.judge_key = (
            w.ask.password("Judge API key (empty if the endpoint needs none)") or w.judge_key
        )
        result = check_judge_endpoint(w.judge_endpoint, w.judge_key)
        w.say(f"  judge check: {result.status} — {result.detail}")
        if result.status is VerifyStatus.OK:
            return
        if not w.ask.confirm("Enter the judge settings again?", default=True):
            w.say("  kept as typed: `nika doctor` checks the judge again later")
            return
