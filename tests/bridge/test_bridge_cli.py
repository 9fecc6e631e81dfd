"""``nika bridge link|unlink|status`` and ``nika setup bridge`` (secret store, no value echoed)."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from nika_tui.bridge.settings import KEYRING_SERVICE, config_path, load_config
from nika_tui.cli import main
from nika_tui.domain.bridge import Gateway
from nika_tui.domain.tenant import TenantConfig
from nika_tui.paths import Roots
from nika_tui.services.config_store import save_tenant

if TYPE_CHECKING:  # keyring is imported by the fixture that uses it (issue 12)
    from tests.support.memory_keyring import MemoryKeyring


@pytest.fixture
def acme(tmp_path: Path) -> str:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    save_tenant(TenantConfig(tenant_id="globex", display_name="Globex"))
    return "acme"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code = main([*argv, "--json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_link_normalizes_and_unlink_removes(
    acme: str, capsys: pytest.CaptureFixture[str], where: Roots
) -> None:
    linked = run_json(capsys, "bridge", "link", "--tenant", "acme", "--gateway", "whatsapp",
                      "--sender", "+33 6 12 34 56 78")  # fmt: skip
    assert linked == {"gateway": "whatsapp", "sender": "33612345678", "changed": True,
                      "tenant_id": "acme"}  # fmt: skip
    assert load_config(where).tenant_of(Gateway.WHATSAPP, "33612345678") == "acme"
    assert stat.S_IMODE(config_path(where).stat().st_mode) == 0o600
    # The same sender for another tenant is refused, and the file is unchanged.
    before = config_path(where).read_text()
    code = main(["bridge", "link", "--tenant", "globex", "--gateway", "whatsapp",
                 "--sender", "33612345678"])  # fmt: skip
    assert code == 1 and "already linked to tenant acme" in capsys.readouterr().err
    assert config_path(where).read_text() == before
    unlinked = run_json(capsys, "bridge", "unlink", "--gateway", "whatsapp",
                        "--sender", "+33612345678")  # fmt: skip
    assert unlinked["changed"] is True
    assert load_config(where).tenant_of(Gateway.WHATSAPP, "33612345678") is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tenant", "nobody", "--gateway", "gchat", "--sender", "users/1"], "unknown tenant"),
        (["--tenant", "acme", "--gateway", "whatsapp", "--sender", "hello"], "not a phone"),
        (["--tenant", "Bad_Id", "--gateway", "gchat", "--sender", "users/1"], "invalid tenant"),
    ],
)
def test_link_refuses_bad_input_with_a_hint(
    acme: str, capsys: pytest.CaptureFixture[str], argv: list[str], message: str, where: Roots
) -> None:
    assert main(["bridge", "link", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "hint:" in err
    assert not config_path(where).exists()


def test_status_shows_links_and_what_gateways_lack(
    acme: str, redis_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main(["bridge", "link", "--tenant", "acme", "--gateway", "gchat", "--sender", "users/7"])
    capsys.readouterr()
    status = run_json(capsys, "bridge", "status")
    assert status["running"] is False
    (tenant,) = status["tenants"]
    assert tenant["tenant_id"] == "acme"
    assert tenant["senders"] == [{"gateway": "gchat", "sender": "users/7"}]
    assert tenant["pending"] == 0


def test_setup_bridge_stores_secrets_in_the_keyring_and_ids_in_the_config(
    memory_keyring: MemoryKeyring,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: Roots,
) -> None:
    lines = ("WHATSAPP_APP_SECRET=s3cret-app\nWHATSAPP_VERIFY_TOKEN=vt\n"
             "MICROSOFT_APP_ID=app-id-1\nGCHAT_PROJECT_NUMBER=42\n")  # fmt: skip
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    summary = run_json(capsys, "setup", "bridge", "--secret-stdin")
    assert summary["secrets_stored"] == ["WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN"]
    assert summary["secret_storage"] == "keyring"
    assert memory_keyring.entries[(KEYRING_SERVICE, "WHATSAPP_APP_SECRET")] == "s3cret-app"
    assert summary["missing"]["whatsapp"] == ["WHATSAPP_ACCESS_TOKEN"]
    assert summary["missing"]["gchat"] == []
    config = load_config(where)
    assert config.teams.app_id == "app-id-1" and config.gchat.audience == "42"
    assert "s3cret" not in config_path(where).read_text()


def test_setup_bridge_without_a_keyring_needs_insecure_storage(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import keyring
    from keyring.backends.fail import Keyring as FailKeyring

    previous = keyring.get_keyring()
    keyring.set_keyring(FailKeyring())
    try:
        monkeypatch.setattr("sys.stdin", io.StringIO("MICROSOFT_APP_PASSWORD=pw-123\n"))
        assert main(["setup", "bridge", "--secret-stdin"]) == 1
        err = capsys.readouterr().err
        assert "no secure OS keyring" in err and "--insecure-storage" in err
        assert "pw-123" not in err
        monkeypatch.setattr("sys.stdin", io.StringIO("MICROSOFT_APP_PASSWORD=pw-123\n"))
        summary = run_json(capsys, "setup", "bridge", "--secret-stdin", "--insecure-storage")
        assert summary["secret_storage"] == "file"
        path = Path(os.environ["NIKA_OS_CONFIG_DIR"]) / "bridge.secrets.insecure.yaml"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    finally:
        keyring.set_keyring(previous)


def test_setup_bridge_refuses_unknown_names_without_echoing_values(
    memory_keyring: MemoryKeyring,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("WHATSAP_APP_SECRET=typo-value\n"))
    assert main(["setup", "bridge", "--secret-stdin"]) == 2
    err = capsys.readouterr().err
    assert "line 1" in err and "typo-value" not in err
    assert memory_keyring.entries == {}
