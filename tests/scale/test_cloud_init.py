"""The worker's cloud-init document: cloud-config with a systemd worker, no secret in it.

The document is what a provider stores as user data (readable from the instance's metadata):
the Redis password must not be in it; the worker reads it from a file placed out of band.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from nika_tui import __version__
from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import ScaleError
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


def _file(doc: dict[str, Any], path: str) -> dict[str, Any]:
    [entry] = [f for f in doc["write_files"] if f["path"] == path]
    assert isinstance(entry, dict)
    return entry


def _unit(doc: dict[str, Any]) -> str:
    text = _file(doc, f"/etc/systemd/system/{cloud_init.UNIT}")["content"]
    assert isinstance(text, str)
    return text


def _directives(unit: str, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(f"{key}=")]


def _systemd_words(line: str) -> list[str]:
    """``ExecStart``'s argv as systemd reads it (double quotes, ``\\``/``\\"``, ``%%``, ``$$``)."""
    words: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == " ":
            i += 1
            continue
        word = ""
        if line[i] == '"':
            i += 1
            while line[i] != '"':
                if line[i] == "\\":
                    i += 1
                word += line[i]
                i += 1
            i += 1
        else:
            while i < len(line) and line[i] != " ":
                word += line[i]
                i += 1
        words.append(word.replace("%%", "%").replace("$$", "$"))
    return words


def _exec_args(doc: dict[str, Any]) -> list[str]:
    [line] = _directives(_unit(doc), "ExecStart")
    return _systemd_words(line)


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_rendered_document_is_cloud_config_with_a_systemd_worker(case: JoinCase) -> None:
    text = cloud_init.render("acme", case.primary, __version__)
    assert text.startswith("#cloud-config\n")  # cloud-init reads user data by its first line
    assert SECRET not in text
    doc = yaml.safe_load(text)
    assert set(doc) == {"package_update", "packages", "users", "write_files", "runcmd"}
    assert "python3-venv" in doc["packages"]
    assert ["/opt/nika/bin/pip", "install", f"nika-os=={__version__}"] in doc["runcmd"]
    # Survives a reboot: the path unit is enabled, and it starts the service at every boot.
    assert ["systemctl", "enable", "--now", cloud_init.PATH_UNIT] in doc["runcmd"]
    assert "nohup" not in text
    path_unit = _file(doc, f"/etc/systemd/system/{cloud_init.PATH_UNIT}")["content"]
    assert _directives(path_unit, "PathExists") == [cloud_init.PASSWORD_FILE]
    assert _directives(path_unit, "WantedBy") == ["multi-user.target"]
    assert _directives(_unit(doc), "Restart") == ["always"]
    args = _exec_args(doc)
    assert args[:3] == ["/opt/nika/bin/nika", "serve", "--join"]
    assert args[3] == case.joined  # one argument, exactly the URL


def test_secrets_stay_out_of_the_unit_and_the_command_line(tmp_path: Path) -> None:
    """The password reaches the worker as a systemd credential; other secrets through the
    0600 EnvironmentFile; and nika's settings, given the unit's variables, lead back to the
    primary's URL."""
    primary = CASES[0].primary
    doc = yaml.safe_load(cloud_init.render("acme", primary, "1.0", "nika-0123"))
    unit = _unit(doc)
    assert SECRET not in unit
    env_file = _file(doc, cloud_init.ENV_FILE)
    assert env_file["permissions"] == "0600" and env_file["owner"] == "root:root"
    assert SECRET not in env_file["content"]
    assert _directives(unit, "EnvironmentFile") == [f"-{cloud_init.ENV_FILE}"]
    assert _directives(unit, "LoadCredential") == [f"redis_password:{cloud_init.PASSWORD_FILE}"]
    assert _directives(unit, "User") == ["nika"]
    env = dict(v.split("=", 1) for v in _directives(unit, "Environment"))
    assert env["NIKA_REDIS_PASSWORD_FILE"] == "%d/redis_password"  # the credentials dir
    assert data_dir(env) == Path("/var/lib/nika/data")
    assert _exec_args(doc)[-2:] == ["--worker-id", "nika-0123"]
    # The same settings on a host where systemd placed the credential (here a temp copy).
    creds = tmp_path / "credentials"
    creds.mkdir()
    (creds / "redis_password").write_text(SECRET + "\n")
    settings = Settings.from_env(
        {
            **env,
            "NIKA_REDIS_PASSWORD_FILE": env["NIKA_REDIS_PASSWORD_FILE"].replace("%d", str(creds)),
        }
    )
    joined = _exec_args(doc)[3]
    assert join_url(joined, settings) == primary


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_the_units_pass_systemd_analyze_verify(case: JoinCase, tmp_path: Path) -> None:
    doc = yaml.safe_load(cloud_init.render("acme", case.primary, "1.0", "nika-0123"))
    # The venv exists only on the instance: verify checks ExecStart is executable, so point
    # it at an executable of this machine; every other line is verified as rendered.
    nika = tmp_path / "nika"
    nika.write_text("#!/bin/sh\n")
    nika.chmod(0o755)
    service = _unit(doc).replace("/opt/nika/bin/nika", str(nika))
    (tmp_path / cloud_init.UNIT).write_text(service)
    path_unit = _file(doc, f"/etc/systemd/system/{cloud_init.PATH_UNIT}")["content"]
    (tmp_path / cloud_init.PATH_UNIT).write_text(path_unit)
    out = subprocess.run(
        ["systemd-analyze", "verify", cloud_init.UNIT, cloud_init.PATH_UNIT],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip() == "", out.stderr  # no line ignored with a warning either


def test_a_control_character_in_the_join_url_is_refused() -> None:
    with pytest.raises(ScaleError, match="control character"):
        cloud_init.render("acme", "redis://10.0.0.5:6379/0\nExecStartPre=/bin/evil", "1.0")


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
    apply_plan(plan.plan_id, acme, state, default_factory(), now, Settings.from_env(env))
    [server] = cloud.instances["scaleway"].values()
    user_data = server["user_data"]
    assert SECRET not in user_data
    assert _exec_args(yaml.safe_load(user_data))[3] == "redis://nika@203.0.113.7:6379/0"
