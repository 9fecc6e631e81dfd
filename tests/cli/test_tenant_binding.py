"""Inside a kernel (``NIKA_TENANT_ID`` set) commands act on that tenant only."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import NamedTuple

import pytest

from nika_tui.domain.tenant_binding import resolve_tenant
from nika_tui.errors import TenantBindingRefused
from nika_tui.settings import Settings


class Case(NamedTuple):
    test_id: str
    requested: str | None
    env: dict[str, str]
    expected: str | None


CASES = [
    Case("operator-shell-any-tenant", "tena", {}, "tena"),
    Case("operator-shell-no-tenant", None, {}, None),
    Case("kernel-own-tenant", "tenb", {"NIKA_TENANT_ID": "tenb"}, "tenb"),
    Case("kernel-default-is-own", None, {"NIKA_TENANT_ID": "tenb"}, "tenb"),
    Case("operator-escape", "tena", {"NIKA_TENANT_ID": "tenb", "NIKA_OPERATOR": "1"}, "tena"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_resolve(case: Case) -> None:
    settings = Settings.from_env(case.env)
    assert resolve_tenant(case.requested, settings.tenant_id, settings.operator) == case.expected


def test_another_tenant_from_a_kernel_is_refused() -> None:
    with pytest.raises(TenantBindingRefused, match="tenant tenb's kernel"):
        resolve_tenant("tena", "tenb", operator=False)


def _nika(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nika_tui", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "NIKA_NO_AUTOSTART": "1", **env},
    )


def test_the_cli_refuses_a_cross_tenant_recall_inside_a_kernel() -> None:
    proc = _nika("memory", "recall", "--tenant", "tena", "deploy", NIKA_TENANT_ID="tenb")
    assert proc.returncode == 2
    assert "refused" in proc.stderr and "NIKA_OPERATOR=1" in proc.stderr
    operator = _nika(
        "memory", "recall", "--tenant", "tena", "deploy", NIKA_TENANT_ID="tenb", NIKA_OPERATOR="1"
    )
    assert "refused" not in operator.stderr  # it goes on (and fails later for its own reasons)
