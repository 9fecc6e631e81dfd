"""The LLM-written digest (issue #22, hierarchical synthesis): prompt, strict parsing, fallback.

The tenant's LLM tier may write a node's digest *instead of* the extractive lines, from the same
candidate memories only: the lines :func:`~nika_tui.domain.synthesis.synthesise` picked for the
node (each with the ids it condenses). The status line and the unfinished-children lines carry
no memory id and come from the hierarchy (the golden rule): they are kept verbatim, never sent
to be rewritten. Texts are masked again (:func:`~nika_tui.domain.secret_patterns.mask_secrets`)
before they enter a prompt.

An answer is JSON ``{"nodes": [{"node_id", "decided", "current", "open"}]}`` where each section
is a list of ``{"text", "ids"}``. A node whose entry is missing, malformed, has an empty line,
a line without ids or an id that is not among *that node's* candidates keeps its offline digest,
with the reason. Pure: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from nika_tui.domain.secret_patterns import mask_secrets
from nika_tui.domain.synthesis import DigestLine, NodeDigest

SECTIONS: tuple[str, ...] = ("decided", "current", "open")
NODES_PER_CALL = 8
"""Nodes in one request at most (one call per level, split in chunks of this size)."""
MAX_LINE_CHARS = 400

DIGEST_SYSTEM_PROMPT = """\
You write the digest of nodes of a project hierarchy (strategy, project, job, task) for a team's
memory. For each node you get its candidate memories, grouped in three sections: decided (what
was decided or concluded), current (what holds now), open (questions still pending). Each
candidate has ids in brackets.

For every node, rewrite each section as at most 5 short, factual lines. Use only the node's own
candidates: add nothing, guess nothing, do not merge nodes. A line may condense several
candidates of the same section. Every line lists the ids of the candidates it condenses (at
least one); never an id that is not among that node's candidates. A section with no candidates
stays empty.

Answer with JSON only, no prose, exactly this shape:
{"nodes": [{"node_id": "...", "decided": [{"text": "...", "ids": ["..."]}],
"current": [{"text": "...", "ids": ["..."]}], "open": [{"text": "...", "ids": ["..."]}]}]}
"""


@dataclass(frozen=True, slots=True)
class NodeAnswer:
    """The LLM's lines for one node, or why they were rejected (``lines`` is then ``None``)."""

    node_id: str
    lines: dict[str, list[DigestLine]] | None
    problem: str = ""


def candidate_ids(node: NodeDigest) -> set[str]:
    """The memory ids the LLM may cite for ``node`` (the ids of its extractive lines)."""
    return {i for section in SECTIONS for line in getattr(node, section) for i in line.ids}


def llm_eligible(node: NodeDigest) -> bool:
    """A node is sent to the LLM only when it has candidate memories."""
    return bool(candidate_ids(node))


def digest_user_prompt(nodes: Sequence[NodeDigest]) -> str:
    """The user message for a batch of nodes: each node's candidates, masked, with their ids."""
    parts: list[str] = []
    for node in nodes:
        title = f" — {mask_secrets(node.title)[0]}" if node.title else ""
        parts.append(f"NODE {node.node_id} ({node.level}, status {node.status}){title}")
        for section in SECTIONS:
            lines = [line for line in getattr(node, section) if line.ids]
            parts.append(f"{section}:")
            parts += [
                f"- [{', '.join(line.ids)}] {mask_secrets(line.text)[0][:MAX_LINE_CHARS]}"
                for line in lines
            ] or ["(none)"]
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def _json_object(content: str) -> Any:
    text = content.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    return json.loads(text)


def _node_lines(entry: Any, allowed: set[str]) -> tuple[dict[str, list[DigestLine]] | None, str]:
    out: dict[str, list[DigestLine]] = {}
    for section in SECTIONS:
        raw = entry.get(section, [])
        if not isinstance(raw, list):
            return None, f"section {section} is not a list"
        lines: list[DigestLine] = []
        for item in raw:
            if not isinstance(item, dict):
                return None, f"a {section} line is not an object"
            text, ids = item.get("text"), item.get("ids")
            if not isinstance(text, str) or not text.strip():
                return None, f"a {section} line has no text"
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) for i in ids):
                return None, f"a {section} line cites no ids"
            unknown = sorted(set(ids) - allowed)
            if unknown:
                return None, f"cites ids not among the node's memories: {', '.join(unknown)}"
            clean = " ".join(text.split())[:MAX_LINE_CHARS]
            lines.append(DigestLine(mask_secrets(clean)[0], tuple(dict.fromkeys(ids))))
        out[section] = lines
    return out, ""


def parse_digest_answer(content: str, nodes: Sequence[NodeDigest]) -> list[NodeAnswer]:
    """One :class:`NodeAnswer` per node of the batch, in the batch's order.

    Args:
        content: The LLM's message (JSON, optionally inside one code fence).
        nodes: The nodes the prompt held.

    Returns:
        The accepted lines of each node, or the reason its answer is rejected.
    """
    try:
        data = _json_object(content)
    except (ValueError, IndexError):
        return [NodeAnswer(n.node_id, None, "the answer is not JSON") for n in nodes]
    entries = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return [NodeAnswer(n.node_id, None, "the answer has no 'nodes' list") for n in nodes]
    by_id: dict[str, Any] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("node_id"), str):
            by_id.setdefault(entry["node_id"], entry)
    answers: list[NodeAnswer] = []
    for node in nodes:
        entry = by_id.get(node.node_id)
        if entry is None:
            answers.append(NodeAnswer(node.node_id, None, "the node is missing from the answer"))
            continue
        lines, problem = _node_lines(entry, candidate_ids(node))
        answers.append(NodeAnswer(node.node_id, lines, problem))
    return answers


def apply_answer(node: NodeDigest, answer: NodeAnswer) -> NodeDigest:
    """``node`` with its id-bearing lines replaced by the LLM's (id-less lines kept, first).

    Args:
        node: The offline digest of the node.
        answer: An accepted answer (``answer.lines`` not ``None``).

    Returns:
        A new digest; the offline one when the answer was rejected.
    """
    if answer.lines is None:
        return node
    kept = {s: [line for line in getattr(node, s) if not line.ids] for s in SECTIONS}
    return replace(
        node,
        decided=kept["decided"] + answer.lines["decided"],
        current=kept["current"] + answer.lines["current"],
        open=kept["open"] + answer.lines["open"],
    )
