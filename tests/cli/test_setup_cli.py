"""``nika setup --non-interactive`` in a subprocess, with XDG_CONFIG_HOME in a temp dir."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCW_ACCESS = "SCWABCDEFGHIJ1234567"
SCW_SECRET = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
GOOD: dict[str, Any] = {
    "tenant_id": "acme",
    "display_name": "Acme Corp",
    "language": "en",
    "plan": "pro",
    "agent_cli": "claude-code",
    "privacy": "default",
    "providers": ["scaleway"],
    "knowledge_repo": None,
    "auto_actions": {
        "scale": "escalate",
        "compress": "off",
        "purge": "escalate",
        "rem": "autonomous",
    },
    "quotas": {"cpu_percent": 200, "ram_mb": 8192, "tokens_per_day": 2000000},
}
SCW_ENV = {"SCW_ACCESS_KEY": SCW_ACCESS, "SCW_SECRET_KEY": SCW_SECRET}


@dataclass
class Nika:
    """Runs ``nika`` as a subprocess with a private XDG_CONFIG_HOME."""

    xdg: Path
    work: Path

    @property
    def config_root(self) -> Path:
        return self.xdg / "nika-os"

    def config_path(self, tenant: str = "acme") -> Path:
        return self.config_root / "tenants" / tenant / "config.yaml"

    def answers(self, data: dict[str, Any] | str, name: str = "answers.yaml") -> Path:
        path = self.work / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        stdin: str = "",
        keyring_backend: str = "keyring.backends.fail.Keyring",
    ) -> subprocess.CompletedProcess[str]:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NIKA_OS_", "SCW_", "AWS_", "AZURE_", "CNTB_", "XDG_"))
        }
        base.update(
            {
                "XDG_CONFIG_HOME": str(self.xdg),
                "XDG_DATA_HOME": str(self.work / "data"),
                # Never the developer's real keyring.
                "PYTHON_KEYRING_BACKEND": keyring_backend,
                "PYTHONPATH": str(ROOT),
            }
        )
        base.update(env or {})
        return subprocess.run(
            [sys.executable, "-m", "nika_tui", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=base,
            cwd=self.work,
            timeout=60,
        )


@pytest.fixture
def nika(tmp_path: Path) -> Nika:
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    return Nika(xdg, tmp_path)


def test_non_interactive_writes_a_private_config(nika: Nika) -> None:
    answers = nika.answers(GOOD)
    proc = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--accept-risk",
        "--json",
        env=SCW_ENV,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["tenant_id"] == "acme"
    assert out["config_path"] == str(nika.config_path())
    assert out["strategies"] == ["scale_horizontal_eu"]
    assert out["auto_actions"]["compress"] == "off" and out["auto_actions"]["rem"] == "autonomous"
    # No secure store in this process: only the variable names are recorded, with a warning.
    assert any("SCW_SECRET_KEY must be set" in w for w in out["warnings"])
    path = nika.config_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for d in (path.parent, path.parent.parent, nika.config_root):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    text = path.read_text()
    assert SCW_SECRET not in text and SCW_ACCESS not in text
    config = yaml.safe_load(text)
    assert config["schema_version"] == 1
    assert config["providers"]["scaleway"]["fields"]["secret_key"] == {
        "source": "env",
        "name": "SCW_SECRET_KEY",
    }
    assert SCW_SECRET not in proc.stdout + proc.stderr


def test_secrets_go_to_the_keyring_when_there_is_one(nika: Nika) -> None:
    answers = nika.answers(GOOD)
    proc = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--accept-risk",
        "--json",
        env=SCW_ENV,
        keyring_backend="tests.support.memory_keyring.MemoryKeyring",
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["secrets_stored"] == ["scaleway.access_key", "scaleway.secret_key"]
    assert out["warnings"] == []
    fields = yaml.safe_load(nika.config_path().read_text())["providers"]["scaleway"]["fields"]
    assert fields["access_key"] == {"source": "keyring", "name": "scaleway.access_key"}


def test_secret_stdin_and_insecure_storage(nika: Nika) -> None:
    answers = nika.answers({**GOOD, "providers": ["aws"], "auto_actions": None})
    stdin = "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=" + "k" * 40 + "\n"
    proc = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--secret-stdin",
        "--insecure-storage",
        "--json",
        stdin=stdin,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["strategies"] == ["scale_horizontal_gpu"]
    secrets = nika.config_path().parent / "secrets.insecure.yaml"
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert yaml.safe_load(secrets.read_text())["aws.secret_access_key"] == "k" * 40
    assert "k" * 40 not in nika.config_path().read_text()


def test_gcp_credentials_from_the_conventional_path_variable(nika: Nika) -> None:
    creds = nika.work / "sa.json"
    creds.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "p",
                "private_key_id": "abcd",
                "private_key": "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n",
                "client_email": "n@p.iam.gserviceaccount.com",
            }
        )
    )
    answers = nika.answers(
        {**GOOD, "providers": ["gcp"], "auto_actions": None, "knowledge_repo": "/srv/k"}
    )
    proc = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--json",
        env={"GOOGLE_APPLICATION_CREDENTIALS": str(creds)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["strategies"] == ["scale_horizontal_gpu", "compress_to_repo"]


def test_dry_run_prints_and_writes_nothing(nika: Nika) -> None:
    answers = nika.answers(GOOD)
    proc = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--accept-risk",
        "--dry-run",
        env=SCW_ENV,
    )
    assert proc.returncode == 0, proc.stderr
    assert "tenant_id: acme" in proc.stdout and "strategies: scale_horizontal_eu" in proc.stdout
    assert not nika.config_root.exists()
    as_json = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--accept-risk",
        "--dry-run",
        "--json",
        env=SCW_ENV,
    )
    out = json.loads(as_json.stdout)
    assert out["dry_run"] is True and out["config"]["plan"] == "pro"
    assert not nika.config_root.exists()


def test_autonomous_needs_accept_risk(nika: Nika) -> None:
    answers = nika.answers(GOOD)
    proc = nika.run("setup", "--non-interactive", "--answers", str(answers), env=SCW_ENV)
    assert proc.returncode == 2
    assert "auto_actions.rem: autonomous acts without asking; pass --accept-risk" in proc.stderr
    assert not nika.config_root.exists()


def test_every_missing_or_invalid_answer_is_listed_at_once(nika: Nika) -> None:
    answers = nika.answers(
        {"tenant_id": "acme", "plan": "gold", "providers": ["scaleway"], "colour": "red"}
    )
    proc = nika.run("setup", "--non-interactive", "--answers", str(answers))
    assert proc.returncode == 2
    for field in (
        "display_name: missing",
        "language: missing",
        "agent_cli: missing",
        "privacy: missing",
        "plan: 'gold' is not allowed",
        "colour: unknown key",
        "providers.scaleway.access_key: set SCW_ACCESS_KEY",
        "providers.scaleway.secret_key: set SCW_SECRET_KEY",
    ):
        assert field in proc.stderr, field
    assert "8 missing or invalid answers" in proc.stderr
    assert not nika.config_root.exists()


def test_bad_answers_yaml_names_the_line(nika: Nika) -> None:
    answers = nika.answers("tenant_id: acme\nplan: [pro\n")
    proc = nika.run("setup", "--non-interactive", "--answers", str(answers))
    assert proc.returncode == 2
    assert f"{answers}: not valid YAML at line" in proc.stderr


@pytest.mark.parametrize("bad_id", ["../x", "A B", "a" * 300])
def test_bad_tenant_ids_are_refused(
    nika: Nika, bad_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    answers = nika.answers({**GOOD, "tenant_id": bad_id, "providers": [], "auto_actions": None})
    proc = nika.run("setup", "--non-interactive", "--answers", str(answers))
    assert proc.returncode == 2 and "tenant_id:" in proc.stderr
    assert not nika.config_root.exists()
    assert not (nika.xdg / "x").exists()
    # The same id given as --tenant (in-process: the parser path is the same).
    from nika_tui.cli import main

    assert main(["setup", "--tenant", bad_id]) == 2
    assert "invalid tenant id" in capsys.readouterr().err


MALFORMED = [
    (
        "bad-yaml",
        "schema_version: 1\ntenant_id: acme\ndisplay_name: [oops\n",
        "not valid YAML at line",
    ),
    (
        "unknown-field",
        "schema_version: 1\ntenant_id: acme\ndisplay_name: A\nflavour: x\n",
        "flavour: unknown field",
    ),
    ("wrong-type", "schema_version: 1\ntenant_id: acme\ndisplay_name: A\nquotas: 12\n", "quotas"),
    (
        "newer-schema",
        "schema_version: 99\ntenant_id: acme\ndisplay_name: A\n",
        "schema_version 99 is newer",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_a_malformed_config_is_refused_and_never_overwritten(
    nika: Nika, text: str, expected: str
) -> None:
    path = nika.config_path()
    path.parent.mkdir(parents=True)
    path.write_text(text)
    answers = nika.answers({**GOOD, "providers": [], "auto_actions": None})
    proc = nika.run("setup", "--non-interactive", "--answers", str(answers))
    assert proc.returncode == 2
    assert str(path) in proc.stderr and expected in proc.stderr
    assert "hint:" in proc.stderr  # the fix
    assert path.read_text() == text


def test_overwriting_an_existing_tenant_keeps_a_backup(nika: Nika) -> None:
    answers = nika.answers({**GOOD, "providers": [], "auto_actions": None})
    assert nika.run("setup", "--non-interactive", "--answers", str(answers)).returncode == 0
    first = nika.config_path().read_text()
    answers = nika.answers({**GOOD, "providers": [], "auto_actions": None, "plan": "free"})
    proc = nika.run("setup", "--non-interactive", "--answers", str(answers), "--json")
    backup = Path(json.loads(proc.stdout)["backup_path"])
    assert backup.read_text() == first and stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert yaml.safe_load(nika.config_path().read_text())["plan"] == "free"


def test_without_a_tty_it_says_how_to_run_it(nika: Nika) -> None:
    proc = nika.run("setup")
    assert proc.returncode == 2
    assert "needs a terminal" in proc.stderr and "--non-interactive --answers" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_secret_stdin_rejects_unknown_names_without_echoing(nika: Nika) -> None:
    answers = nika.answers({**GOOD, "providers": [], "auto_actions": None})
    proc = nika.run(
        "setup",
        "--non-interactive",
        "--answers",
        str(answers),
        "--secret-stdin",
        stdin="SECRET_THING=hunter22\n",
    )
    assert proc.returncode == 2 and "line 1" in proc.stderr and "hunter22" not in proc.stderr


def test_non_interactive_refuses_a_cpu_quota_beyond_this_machines_cores(nika: Nika) -> None:
    cores = len(os.sched_getaffinity(0))
    over = nika.answers({**GOOD, "quotas": {"cpu_percent": cores * 100 + 100}}, "over.yaml")
    proc = nika.run("setup", "--non-interactive", "--answers", str(over), "--accept-risk",
                    "--dry-run", env=SCW_ENV)  # fmt: skip
    assert proc.returncode != 0
    assert "quotas.cpu_percent" in proc.stderr and f"{cores * 100}" in proc.stderr, proc.stderr
    fits = nika.answers({**GOOD, "quotas": {"cpu_percent": cores * 100}}, "fits.yaml")
    proc = nika.run("setup", "--non-interactive", "--answers", str(fits), "--accept-risk",
                    "--dry-run", env=SCW_ENV)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
