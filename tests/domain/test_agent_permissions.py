"""The tenant's agent permissions survive a setup edit."""

from __future__ import annotations


def test_a_setup_edit_keeps_what_agents_may_decide() -> None:
    from nika_tui.domain.answers import build_setup, config_to_answers
    from nika_tui.domain.tenant import AgentPermissions, TenantConfig

    base = TenantConfig(
        tenant_id="acme",
        display_name="Acme",
        agents=AgentPermissions(resolve_reviews=True, retire_needs_review=False),
    )
    again = build_setup(config_to_answers(base), base=base, accept_risk=True)
    assert again.config.agents == base.agents
    assert (
        build_setup(config_to_answers(base), accept_risk=True).config.agents == AgentPermissions()
    )
