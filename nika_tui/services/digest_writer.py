"""The LLM-written digest's adapter: who may write it (privacy) and the batched calls.

``compress.digest: llm`` in the tenant's config asks for it; the judge factory
(:func:`~nika_tui.services.judges.factory.select_judge`) decides what the privacy mode allows:

- an ``http`` judge (a loopback endpoint in any mode, a remote one under ``cloud``) writes it;
- under ``default``, the tenant's own agent CLI run headless (``claude -p`` / ``codex exec``,
  the agent-cli judge tier) writes it, with the tenant's agent home, login and subscription;
- anything else (``local`` without a loopback endpoint, a CLI that is not installed or has no
  headless mode, no endpoint or key) keeps the offline digest, and says why;
- the private tree (memories marked private) is written by the LLM only through a loopback
  endpoint: a private memory never leaves the machine for a summary. An agent CLI sends to its
  provider, which nika cannot check is on this machine, so it never writes the private tree.

One call per level, split every :data:`~nika_tui.domain.digest_prompt.NODES_PER_CALL` nodes.
A node whose answer does not parse or cites an id it was not given keeps its offline digest;
each fallback is logged (node id and reason, never a memory text).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from nika_tui.domain.digest_prompt import (
    DIGEST_SYSTEM_PROMPT,
    NODES_PER_CALL,
    NodeAnswer,
    apply_answer,
    digest_user_prompt,
    llm_eligible,
    parse_digest_answer,
)
from nika_tui.domain.synthesis import NodeDigest
from nika_tui.domain.tenant import DigestMode, TenantConfig
from nika_tui.paths import Roots
from nika_tui.services.judges.agent_cli import AgentCliJudge
from nika_tui.services.judges.factory import is_loopback, select_judge
from nika_tui.services.judges.http import HttpJudge

log = logging.getLogger(__name__)


class DigestLLM(Protocol):
    """An LLM tier that answers one (system, user) prompt: the http or the agent-cli judge."""

    def complete(self, system: str, user: str, max_tokens: int) -> tuple[str | None, str]:
        """``(answer, "")`` or ``(None, why)``."""
        ...


OFFLINE_BY_SETTING = "compress.digest is offline"
"""The reason when the tenant did not ask for an LLM digest (the default)."""


@dataclass
class DigestOutcome:
    """Who wrote a tree's digest: ``mode`` ``llm`` or ``offline``, and every node that fell
    back (node id → reason)."""

    mode: str
    reason: str
    llm_nodes: list[str] = field(default_factory=list)
    fallbacks: dict[str, str] = field(default_factory=dict)
    requests: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "mode": self.mode,
            "reason": self.reason,
            "llm_nodes": self.llm_nodes,
            "fallbacks": self.fallbacks,
            "requests": self.requests,
        }


def select_writer(
    config: TenantConfig,
    where: Roots,
    secrets_env: Mapping[str, str] | None,
    *,
    private: bool,
    path: str | None = None,
) -> tuple[DigestLLM | None, str]:
    """The LLM that may write this tree's digest, or ``None`` and why not.

    Args:
        config: The tenant.
        where: The roots of the caller's settings (an agent-CLI writer runs in the tenant's
            agent home).
        secrets_env: Where the API key reference is read (default ``os.environ``).
        private: The tree holds private memories (then only a loopback endpoint).
        path: Search path for the agent CLIs (default ``secrets_env["PATH"]``).

    Returns:
        ``(judge, reason)``.
    """
    if config.compress.digest is DigestMode.OFFLINE:
        return None, OFFLINE_BY_SETTING
    selection = select_judge(config, where, secrets_env, path)
    judge = selection.judge
    if isinstance(judge, AgentCliJudge):
        if private:
            return None, (
                "private memories are summarised by a loopback LLM only, and an agent CLI "
                "sends to its provider; offline digest"
            )
        return judge, selection.reason
    if not isinstance(judge, HttpJudge):
        return None, (
            f"privacy {config.privacy.value} allows no LLM tier here "
            f"({selection.reason}); offline digest"
        )
    if private and not is_loopback(judge.endpoint):
        return None, "private memories are summarised by a loopback LLM only; offline digest"
    return judge, selection.reason


def llm_digests(
    judge: DigestLLM, digests: Sequence[NodeDigest], reason: str
) -> tuple[list[NodeDigest], DigestOutcome]:
    """Rewrite the eligible nodes' digests with the LLM, one call per level / chunk.

    Args:
        judge: The http or agent-cli tier (:func:`select_writer`).
        digests: The offline digests (their lines are the only candidates sent).
        reason: Why this LLM was chosen (kept in the outcome).

    Returns:
        The digests in the same order (LLM-written or offline) and the outcome.
    """
    outcome = DigestOutcome("llm", reason)
    answers: dict[str, NodeAnswer] = {}
    by_level: dict[str, list[NodeDigest]] = {}
    for d in digests:
        if llm_eligible(d):
            by_level.setdefault(d.level, []).append(d)
    for nodes in by_level.values():
        for start in range(0, len(nodes), NODES_PER_CALL):
            chunk = nodes[start : start + NODES_PER_CALL]
            outcome.requests += 1
            content, problem = judge.complete(
                DIGEST_SYSTEM_PROMPT, digest_user_prompt(chunk), 200 + 400 * len(chunk)
            )
            if content is None:
                answers.update({n.node_id: NodeAnswer(n.node_id, None, problem) for n in chunk})
                continue
            answers.update({a.node_id: a for a in parse_digest_answer(content, chunk)})
    out: list[NodeDigest] = []
    for d in digests:
        answer = answers.get(d.node_id)
        if answer is None:
            out.append(d)
        elif answer.lines is None:
            outcome.fallbacks[d.node_id] = answer.problem
            log.warning("digest: node %s keeps its offline digest: %s", d.node_id, answer.problem)
            out.append(d)
        else:
            outcome.llm_nodes.append(d.node_id)
            out.append(apply_answer(d, answer))
    return out, outcome
