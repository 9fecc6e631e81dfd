"""Tenant binding: inside a tenant's kernel, commands act on that tenant only.

A kernel's environment carries ``NIKA_TENANT_ID`` (set by nika when it spawns the kernel). A
``nika`` command run there — by the agent, or by text injected into its prompt — that names
another tenant (``--tenant tena`` from B's kernel) is refused; one that names none acts on the
kernel's tenant. The operator's own shell has no ``NIKA_TENANT_ID`` and is not bound; inside a
kernel the operator can still act on any tenant with ``NIKA_OPERATOR=1`` on that one command
(the tmux allow-list never passes it into a kernel, so an agent does not inherit it).

This guards against accidents and naive cross-tenant requests, not against an agent that
deliberately rewrites its own environment: agents run as the operator's Unix user and could
read the files directly. Hard isolation is separate users or hosts (strategy B).
"""

from __future__ import annotations

from nika_tui.errors import TenantBindingRefused

BOUND_VAR = "NIKA_TENANT_ID"
OPERATOR_VAR = "NIKA_OPERATOR"


def bound_tenant(tenant_id: str, operator: bool) -> str | None:
    """The tenant a process is bound to, or None (the operator's shell, or ``operator``).

    Args:
        tenant_id: ``NIKA_TENANT_ID`` as the entry's settings read it.
        operator: ``NIKA_OPERATOR=1`` on this command.
    """
    if operator:
        return None
    return tenant_id.strip() or None


def resolve_tenant(requested: str | None, tenant_id: str, operator: bool) -> str | None:
    """The tenant a command may act on: ``requested``, defaulted or checked against the binding.

    Args:
        requested: The command's ``--tenant`` (None: not given).
        tenant_id: ``NIKA_TENANT_ID`` as the entry's settings read it.
        operator: ``NIKA_OPERATOR=1`` on this command.

    Raises:
        TenantBindingRefused: ``requested`` is another tenant than the bound one.
    """
    bound = bound_tenant(tenant_id, operator)
    if bound is None:
        return requested
    if requested is None or requested == bound:
        return bound
    raise TenantBindingRefused(
        f"this shell belongs to tenant {bound}'s kernel ({BOUND_VAR}={bound}): "
        f"acting on tenant {requested} is refused",
        f"run it from your own shell, or prefix it with {OPERATOR_VAR}=1 (see docs/security.md)",
    )
