"""``nika demo``: a demo tenant whose kernel runs a replayed Claude Code session.

The tenant ``demo`` ("Demo (replayed session)", ``demo: true``) runs
``python -m nika_tui.demo.replay_agent`` as its agent: a program of ours that writes a real-format
transcript and fires the real hooks, so the dashboard shows fill climbing past 61%, a
compaction with its handoff packet, and a contradiction waiting in the review queue, without
any agent CLI or account. Everything it shows is labelled DEMO.
"""

from __future__ import annotations

import sys

from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
from nika_tui.errors import ConfigError, TenantNotFound
from nika_tui.paths import Roots, ensure_private_dir, roots

DEMO_TENANT_ID = "demo"
DEMO_DISPLAY_NAME = "Demo (replayed session)"


def demo_config(speed: float = 1.0, where: Roots | None = None) -> TenantConfig:
    """The demo tenant's config; its workdir (``acme-shop``) is created under the data dir
    (``where``'s; None: the roots of ``os.environ``)."""
    tenant_dir = (where or roots()).tenant_data_dir(DEMO_TENANT_ID)
    workdir = ensure_private_dir(tenant_dir / "workspace" / "acme-shop")
    return TenantConfig(
        tenant_id=DEMO_TENANT_ID,
        display_name=DEMO_DISPLAY_NAME,
        agent_cli=AgentCli.CLAUDE_CODE,
        demo=True,
        kernel=KernelConfig(
            workdir=str(workdir),
            command=[sys.executable, "-m", "nika_tui.demo.replay_agent", "--speed", f"{speed:g}"],
        ),
    )


def create_demo_tenant(speed: float = 1.0, where: Roots | None = None) -> TenantConfig:
    """Write (or refresh) the demo tenant's config.

    Raises:
        ConfigError: a tenant named ``demo`` exists and is not the demo (it is left untouched).
    """
    from nika_tui.services.config_store import load_tenant, save_tenant

    try:
        existing = load_tenant(DEMO_TENANT_ID, where)
    except TenantNotFound:
        existing = None
    if existing is not None and not existing.demo:
        raise ConfigError(
            f"a tenant named {DEMO_TENANT_ID!r} already exists and is not the demo",
            "it was left untouched; rename it to try the demo",
        )
    config = demo_config(speed, where)
    save_tenant(config, where)
    return config
