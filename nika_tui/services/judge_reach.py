"""Is the tenant's HTTP judge reachable, and does it take the key? (wizard and ``nika doctor``)

One read-only ``GET {endpoint}/models`` (the OpenAI-compatible listing), 5 s at most. The key
goes in the ``Authorization`` header and nowhere else; the result never contains it.
Never called for privacy ``local``: nothing may leave the machine then.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from nika_tui.services.provider_verify import VerifyStatus

TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class JudgeReach:
    """Outcome of one check (never contains the key)."""

    status: VerifyStatus
    detail: str


def check_judge_endpoint(
    endpoint: str, api_key: str | None, *, timeout: float = TIMEOUT_S
) -> JudgeReach:
    """Reach ``endpoint`` with ``api_key`` and say what happened.

    Args:
        endpoint: OpenAI-compatible base URL (``…/v1``).
        api_key: The key, or None for an endpoint that needs none.
        timeout: Seconds for the whole request.

    Returns:
        ``ok`` (answered 2xx), ``invalid`` (401 / 403: the key is refused), ``network``
        (unreachable, timeout) or ``error`` (any other answer).
    """
    url = endpoint.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(url, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        return JudgeReach(VerifyStatus.NETWORK, f"{url} unreachable ({type(exc).__name__})")
    if response.status_code in (401, 403):
        what = "refused the key" if api_key else "needs an API key"
        return JudgeReach(VerifyStatus.INVALID, f"{url} {what} (HTTP {response.status_code})")
    if response.is_success:
        return JudgeReach(VerifyStatus.OK, f"{url} answered (HTTP {response.status_code})")
    return JudgeReach(VerifyStatus.ERROR, f"{url} answered HTTP {response.status_code}")
