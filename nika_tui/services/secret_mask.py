"""The masker applied to requests: one function the client and the service both call.

The patterns and the reasoning live in :mod:`nika_tui.domain.secret_patterns`; this adapter
masks a :class:`~nika_tui.domain.requests.RememberRequest`'s text and logs how many secrets
it masked (the count only, never the text).
"""

from __future__ import annotations

import logging

from nika_tui.domain.requests import RememberRequest
from nika_tui.domain.secret_patterns import mask_secrets

log = logging.getLogger("nika.secrets")


def masked_request(req: RememberRequest) -> RememberRequest:
    """``req`` with secrets in its text masked (the same object when there were none)."""
    text, count = mask_secrets(req.text)
    if not count:
        return req
    log.info("masked %d secret(s) in a memory of tenant %s", count, req.tenant_id)
    return req.model_copy(update={"text": text})
