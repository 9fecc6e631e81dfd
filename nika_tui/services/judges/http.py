"""The ``http`` judge: an OpenAI-compatible ``/v1/chat/completions`` endpoint.

The API key comes from the caller (resolved from an env var or the keyring by the factory),
is sent only in the ``Authorization`` header and never logged. Every failure (connection,
timeout, HTTP error status, malformed body, unparsable answer) is UNCERTAIN with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from nika_tui.domain.judge_prompt import (
    BATCH_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    batch_user_prompt,
    user_prompt,
)
from nika_tui.domain.verdicts import Fact, Judgement, Verdict
from nika_tui.services.judges.judgements import batch_judgements, one_judgement

HTTP_JUDGE_NAME = "http"
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MODEL = "default"


def completions_url(endpoint: str) -> str:
    """``{base}/chat/completions`` for a base URL given with or without ``/v1``.

    Args:
        endpoint: e.g. ``http://127.0.0.1:8000/v1`` or ``https://api.example.com``.

    Returns:
        The chat-completions URL.
    """
    base = endpoint.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return f"{base}/chat/completions"


@dataclass(slots=True)
class HttpJudge:
    """Judge through an OpenAI-compatible chat endpoint."""

    endpoint: str
    model: str = DEFAULT_MODEL
    api_key: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    transport: httpx.BaseTransport | None = None
    """Injected transport (tests of odd transports); default: a real connection."""

    @property
    def name(self) -> str:
        """``http``."""
        return HTTP_JUDGE_NAME

    def __repr__(self) -> str:
        # The key never appears in a repr, a log line or a traceback.
        return f"HttpJudge(endpoint={self.endpoint!r}, model={self.model!r})"

    def _uncertain(self, reason: str) -> Judgement:
        return Judgement(Verdict.UNCERTAIN, f"http judge: {reason}", self.name)

    def judge(self, old: Fact, new: Fact) -> Judgement:
        """POST the pair; any failure is UNCERTAIN with the reason.

        Args:
            old: The current memory.
            new: The incoming fact.

        Returns:
            The endpoint's verdict and reason, or UNCERTAIN with what went wrong.
        """
        answer = self._complete(SYSTEM_PROMPT, user_prompt(old, new), 200)
        return one_judgement(answer, self.name, self._uncertain)

    def judge_batch(self, pairs: list[tuple[Fact, Fact]]) -> list[Judgement]:
        """Judge many pairs in one request (the cascade's LLM tier).

        Args:
            pairs: (old, new) facts.

        Returns:
            One judgement per pair; a failed call or a pair missing from the answer is
            UNCERTAIN with the reason.
        """
        if not pairs:
            return []
        answer = self._complete(
            BATCH_SYSTEM_PROMPT, batch_user_prompt(pairs), 120 + 80 * len(pairs)
        )
        return batch_judgements(answer, len(pairs), self.name, self._uncertain)

    def complete(self, system: str, user: str, max_tokens: int) -> tuple[str | None, str]:
        """One chat completion for other callers (the LLM digest): ``(content, "")`` or
        ``(None, why)``."""
        return self._complete(system, user, max_tokens)

    def _complete(self, system: str, user: str, max_tokens: int) -> tuple[str | None, str]:
        """POST one chat completion: ``(content, "")`` or ``(None, why)``."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        body: dict[str, Any] = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": max_tokens,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
        }
        url = completions_url(self.endpoint)
        try:
            with httpx.Client(timeout=self.timeout_s, transport=self.transport) as client:
                response = client.post(url, json=body, headers=headers)
        except httpx.TimeoutException:
            return None, f"no answer within {self.timeout_s:g} s"
        except httpx.HTTPError as exc:
            return None, f"cannot reach {url}: {type(exc).__name__}"
        if response.status_code >= 400:
            return None, f"{url} answered HTTP {response.status_code}"
        content = _message_content(response)
        if content is None:
            return None, "the response is not a chat completion"
        return content, ""


def _message_content(response: httpx.Response) -> str | None:
    try:
        data = response.json()
    except ValueError:
        return None
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None
