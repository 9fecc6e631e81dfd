"""Claude Code as a person left it after its first run: onboarded, the project trusted."""

from __future__ import annotations

import json
from typing import Any

from nika_tui.services.agent_homes import claude_config_dir


def onboarded_claude(tenant: Any) -> dict[str, Any]:
    """A tenant whose person completed Claude Code's onboarding once (the first run checks
    api.anthropic.com and exits offline) and trusted the project; the key comes from a helper
    command, so no credential sits in the tmux environment. Returns its settings."""
    cfg_dir = claude_config_dir(tenant.tenant_id)
    (cfg_dir / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "projects": {str(tenant.project): {"hasTrustDialogAccepted": True}},
            }
        )
    )
    settings: dict[str, Any] = json.loads((cfg_dir / "settings.json").read_text())
    settings["apiKeyHelper"] = "echo sk-ant-test-not-a-secret"
    (cfg_dir / "settings.json").write_text(json.dumps(settings))
    return settings
