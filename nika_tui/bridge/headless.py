"""The headless path: the tenant's Claude Code run once per message, resuming the conversation.

For a tenant listed in ``headless_tenants`` the bridge does not type into a kernel: it runs
``claude -p --output-format json [--resume SESSION]`` in the tenant's working directory with the
kernel's environment (its ``CLAUDE_CONFIG_DIR``, so the tenant's hooks fire and its memory is
used), the message on stdin (never on the command line), and reads the answer from the JSON
envelope's ``result``. The envelope's ``session_id`` is kept per conversation
(``nika:bridge:sessions:{tenant}``, field ``{gateway}:{conversation}``) so that the next message
of the same sender resumes the same session: one conversation per sender. A failed run raises
:class:`HeadlessFailed`, so the message stays in the inbox and is retried.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping

import redis

from nika_tui.domain.bridge import InboundMessage
from nika_tui.domain.tenant import AgentCli
from nika_tui.errors import HeadlessFailed
from nika_tui.paths import Roots
from nika_tui.services import bridge_keys as keys
from nika_tui.services import kernel_launch
from nika_tui.services.config_store import load_tenant


def sessions_key(tenant_id: str) -> str:
    """Hash: ``{gateway}:{conversation}`` → the agent CLI's session id."""
    return f"{keys.PREFIX}:sessions:{tenant_id}"


def answer(
    client: redis.Redis,
    where: Roots,
    child_env: Mapping[str, str],
    tenant_id: str,
    message: InboundMessage,
    line: str,
    timeout_s: float,
) -> str:
    """Run the tenant's CLI headless on ``line``; its answer.

    ``where``: the roots of the bridge's settings (the tenant's config, its agent homes);
    ``child_env``: the environment the CLI starts from, as a kernel's would.

    Raises:
        HeadlessFailed: not Claude Code, the CLI is missing, it failed, timed out or printed
            no JSON envelope.
    """
    config = load_tenant(tenant_id, where)
    if config.agent_cli is not AgentCli.CLAUDE_CODE:
        raise HeadlessFailed(
            f"headless delivery runs Claude Code only; tenant {tenant_id} uses "
            f"{config.agent_cli.value}",
            f"remove {tenant_id} from headless_tenants in bridge.yaml (kernel delivery)",
        )
    argv = kernel_launch.command_for(config, child_env)
    from nika_tui.engine.kernels.hook_install import install_for_tenant

    install_for_tenant(config, where, child_env)
    environment = {**child_env, **kernel_launch.session_environment(config, where, child_env)}
    conversation = f"{message.gateway.value}:{message.conversation}"
    session = client.hget(sessions_key(tenant_id), conversation)
    command = [*argv, "-p", "--output-format", "json"]
    if session:
        command += ["--resume", str(session)]
    try:
        proc = subprocess.run(
            command, input=line, cwd=kernel_launch.workdir_for(config, child_env), env=environment,
            capture_output=True, text=True, timeout=timeout_s, check=False,
            start_new_session=True,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise HeadlessFailed(f"{argv[0]} -p gave no answer within {timeout_s:g} s") from exc
    except OSError as exc:
        raise HeadlessFailed(f"cannot run {argv[0]}: {exc.strerror}") from exc
    try:
        envelope = json.loads(proc.stdout)
    except json.JSONDecodeError:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise HeadlessFailed(
            f"{argv[0]} -p exited {proc.returncode} without a JSON answer: {tail[0][:200]}"
        ) from None
    if not isinstance(envelope, dict) or envelope.get("is_error") or proc.returncode != 0:
        detail = envelope.get("result") if isinstance(envelope, dict) else ""
        raise HeadlessFailed(f"{argv[0]} -p failed (exit {proc.returncode}): {str(detail)[:200]}")
    if envelope.get("session_id"):
        client.hset(sessions_key(tenant_id), conversation, str(envelope["session_id"]))
    return str(envelope.get("result") or "")
