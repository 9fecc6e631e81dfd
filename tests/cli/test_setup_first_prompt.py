"""The wizard's first prompt does not wait for the heavy imports (issue 17, point 2).

Measured on the loaded 2-core box: 2.5-3.7 s from spawn to the "Tenant id" prompt before,
0.5-0.9 s after. A wall-clock bound would be flaky there, so the test holds the cause instead:
what the first prompt needs imports neither pydantic, yaml, httpx nor the secret store.
"""

from __future__ import annotations

import subprocess
import sys

_PROBE = """
import sys
from nika_tui.cli import build_parser, FAST_PATHS
build_parser(FAST_PATHS["setup"]).parse_args(["setup"])
import nika_tui.wizard.first_prompt, nika_tui.wizard.prompts
heavy = sorted(m for m in ("pydantic", "yaml", "httpx", "keyring", "nika_tui.services.secrets",
                           "nika_tui.domain.tenant", "textual", "torch") if m in sys.modules)
print(",".join(heavy))
"""


def test_first_prompt_needs_no_heavy_import() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


def test_suggested_tenant_id_is_valid() -> None:
    from nika_tui.wizard.first_prompt import suggest_tenant_id

    assert suggest_tenant_id("John.Doe") == "john-doe"
    assert suggest_tenant_id("___") == "default"
