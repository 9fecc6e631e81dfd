"""The agent hooks' side of the bridge: the open turn's NIKA_META, and the answer sent back.

When the bridge types a gateway message into a kernel it first opens a *turn*
(``nika:bridge:turn:{tenant}``: message id, gateway, the line typed, its NIKA_META). Then:

- UserPromptSubmit: a prompt equal to the turn's line was typed by the bridge for a person
  on a gateway, so its memory gets the turn's envelope (``trigger=user``,
  ``agent_type={cli}@{gateway}``, the conversation as session) instead of the hook's own;
- Stop: the agent's closing message is the answer to that turn: it is appended to
  ``nika:bridge:replies:{tenant}`` with the message id and the turn is closed (compare and
  delete in one script, so a late Stop of another turn never closes a newer one).

Light on purpose (it runs inside every hook): Redis and pydantic only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nika_tui.domain.envelope import NikaMeta
from nika_tui.services import bridge_keys as keys

if TYPE_CHECKING:
    from nika_tui.hooks.context import HookContext

MAX_REPLY_CHARS = 16_000
_CLOSE = """
if redis.call('HGET', KEYS[1], 'message_id') == ARGV[1] then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', '1000', '*', 'message_id', ARGV[1], 'text', ARGV[2])
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
"""


def prompt_meta(ctx: HookContext, prompt: str, base: NikaMeta) -> NikaMeta:
    """``base`` with the bridge turn's identity when the bridge typed this prompt."""
    turn: dict[str, str] = ctx.redis.hgetall(keys.turn(ctx.tenant_id))  # type: ignore[assignment]
    if not turn or str(turn.get("line", "")).strip() != prompt.strip():
        return base
    bridged = NikaMeta.model_validate_json(str(turn["meta"]))
    ctx.notes.append(f"bridged prompt from {turn.get('gateway')}")
    return base.model_copy(
        update={
            "trigger": bridged.trigger,
            "agent_type": f"{ctx.agent_type}@{turn.get('gateway')}"[:64],
            "session_id": bridged.session_id,
            "entity_ids": tuple(dict.fromkeys((*base.entity_ids, *bridged.entity_ids))),
        }
    )


def post_reply(ctx: HookContext, text: str) -> bool:
    """Hand the agent's answer to the bridge when a bridge turn is open; True when it was."""
    turn_key = keys.turn(ctx.tenant_id)
    message_id = str(ctx.redis.hget(turn_key, "message_id") or "")
    if not message_id:
        return False
    closed = ctx.redis.eval(
        _CLOSE, 2, turn_key, keys.replies(ctx.tenant_id), str(message_id),
        text[:MAX_REPLY_CHARS],
    )  # fmt: skip
    if closed:
        ctx.notes.append(f"answer handed to the bridge for {message_id}")
    return bool(closed)
