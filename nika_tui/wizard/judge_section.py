"""The cloud judge's questions: endpoint, model, API key, then a reachability check.

Privacy ``cloud`` used to ask only the endpoint: no key, no check, so every contradiction went
to review with no reason (issue 17). The key goes to the tenant's secret store with the other
secrets once the summary is confirmed (``judge.api_key``), never into the config. The check is
one ``GET {endpoint}/models``; privacy ``local`` never reaches this section.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from nika_tui.services.judge_reach import check_judge_endpoint
from nika_tui.services.provider_verify import VerifyStatus

if TYPE_CHECKING:
    from nika_tui.domain.tenant import TenantConfig
    from nika_tui.wizard.sections import SectionsMixin

_URL = re.compile(r"^https?://[^\s/]+\S*$")


def stored_judge_key(config: TenantConfig, secrets_env: Mapping[str, str] | None) -> str | None:
    """The key the tenant's judge reference resolves to, as the service resolves it.

    A re-run (``nika setup privacy``, the fix `nika doctor` prints) leaves the key field empty
    to keep the stored key; without this the check ran keyless and reported HTTP 401 although
    the keyring held a valid key. An unreadable reference gives ``None``: the check then says
    what the endpoint answers without a key.
    """
    from nika_tui.services.judges.factory import resolve_api_key

    key, _problem = resolve_api_key(
        config.judge.api_key, os.environ if secrets_env is None else secrets_env, config.tenant_id
    )
    return key


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
        # Empty keeps the key already given (typed before, or stored): the prompt says so.
        current = w.judge_key or w.stored_judge_key
        hint = "empty keeps the current key" if current else "empty if the endpoint needs none"
        w.judge_key = w.ask.password(f"Judge API key ({hint})") or w.judge_key
        result = check_judge_endpoint(w.judge_endpoint, w.judge_key or w.stored_judge_key)
        w.say(f"  judge check: {result.status} — {result.detail}")
        if result.status is VerifyStatus.OK:
            return
        if not w.ask.confirm("Enter the judge settings again?", default=True):
            w.say("  kept as typed: `nika doctor` checks the judge again later")
            return
