"""The worker's cloud-init document: valid cloud-config and shell, the join URL without secrets.

The document is what a provider stores as user data (readable from the instance's metadata):
the Redis password must not be in it; the worker reads it from a file placed out of band.
"""

from __future__ import annotations

import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from nika_tui import __version__
from nika_tui.domain.tenant import TenantConfig
from nika_tui.paths import data_dir
from nika_tui.scale import cloud_init
from nika_tui.scale.actions import apply_plan, default_factory
from nika_tui.scale.indicators import Indicator, Reading
from nika_tui.scale.planner import make_plan
from nika_tui.scale.state import ScaleState
from nika_tui.scale.workers import join_url
from nika_tui.settings import Settings
from tests.scale.fake_clouds import CloudState

SECRET = "pw-Zq81-never-in-user-data"


class JoinCase(NamedTuple):
    test_id: str
    primary: str
    """The primary's Redis URL (what the service connects with)."""
    joined: str
    """What the worker is told to join (no password)."""


CASES = [
    JoinCase("user-and-password", f"redis://nika:{SECRET}@10.0.0.5:6380/2",
             "redis://nika@10.0.0.5:6380/2"),
    JoinCase("password-only-tls", f"rediss://:{SECRET}@redis.acme.example:6379/0",
             "rediss://redis.acme.example:6379/0"),
    JoinCase("password-in-the-query", f"redis://10.0.0.5:6379/0?password={SECRET}&ssl_cert_reqs=none",
             "redis://10.0.0.5:6379/0?ssl_cert_reqs=none"),
    JoinCase("no-password", "redis://10.0.0.5:6379/0", "redis://10.0.0.5:6379/0"),
    JoinCase("a-quote-in-the-user", f"redis://o'brien;reboot:{SECRET}@10.0.0.5:6379/0",
             "redis://o'brien;reboot@10.0.0.5:6379/0"),
]  # fmt: skip


def _runcmd_script(doc: dict[str, Any]) -> str:
    """The ``sh -c`` step of ``runcmd`` (the one that starts the worker)."""
    [step] = [s for s in doc["runcmd"] if s[:2] == ["sh", "-c"]]
    script = step[2]
    assert isinstance(script, str)
    return script


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_rendered_document_is_cloud_config_and_valid_shell(case: JoinCase) -> None:
    text = cloud_init.render("acme", case.primary, __version__)
    assert text.startswith("#cloud-config\n")  # cloud-init reads user data by its first line
    assert SECRET not in text
    doc = yaml.safe_load(text)
    assert set(doc) == {"package_update", "packages", "runcmd"}
    assert "python3-venv" in doc["packages"]
    assert ["/opt/nika/bin/pip", "install", f"nika-os=={__version__}"] in doc["runcmd"]
    script = _runcmd_script(doc)
    for shell in ("sh", "bash"):  # cloud-init runs it with sh (dash here); bash too
        checked = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
    words = shlex.split(script)
    join = words.index("--join")
    assert words[join + 1] == case.joined  # one word, exactly the URL
    assert words[join - 2 : join] == ["/opt/nika/bin/nika", "serve"]


def test_the_worker_gets_the_password_from_the_file_only(tmp_path: Path) -> None:
    """The script's own variables, read by nika's settings, lead back to the primary's URL."""
    primary = CASES[0].primary
    script = _runcmd_script(yaml.safe_load(cloud_init.render("acme", primary, "1.0")))
    words = shlex.split(script)
    env = dict(w.split("=", 1) for w in words if w.startswith("NIKA_"))
    assert env["NIKA_REDIS_PASSWORD_FILE"] == cloud_init.PASSWORD_FILE
    assert data_dir(env) == Path("/var/lib/nika")
    # The worker waits for the file rather than joining without a password.
    assert f"[ -s {cloud_init.PASSWORD_FILE} ]" in script
    # The same settings on a host where the operator placed the file (here a temp copy).
    placed = tmp_path / "redis_password"
    placed.write_text(SECRET + "\n")
    settings = Settings.from_env({**env, "NIKA_REDIS_PASSWORD_FILE": str(placed)})
    joined = words[words.index("--join") + 1]
    assert join_url(joined, settings) == primary


def test_applied_plan_sends_user_data_without_the_password(
    acme: TenantConfig, clouds: tuple[str, CloudState]
) -> None:
    _, cloud = clouds
    state = ScaleState()
    now = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
    hot = [Reading(Indicator.QUEUE, 120.0, 50.0, 600, True, "scale")]
    plan = make_plan(acme, hot, False, [], now, "c0ffee01")
    state.save_plan(plan, "pending")
    env = {"REDIS_URL": f"redis://nika:{SECRET}@203.0.113.7:6379/0"}
    apply_plan(plan.plan_id, acme, state, default_factory(), now, env)
    [server] = cloud.instances["scaleway"].values()
    user_data = server["user_data"]
    assert SECRET not in user_data
    words = shlex.split(_runcmd_script(yaml.safe_load(user_data)))
    assert words[words.index("--join") + 1] == "redis://nika@203.0.113.7:6379/0"
