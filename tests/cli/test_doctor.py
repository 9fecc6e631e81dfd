"""``nika doctor``: real checks on this machine; PATH controls tmux and the agent CLIs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nika_tui.cli import main

if TYPE_CHECKING:  # keyring is imported by the fixture that uses it (issue 12)
    from tests.support.memory_keyring import MemoryKeyring


def _report(
    capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, dict[str, dict[str, object]]]:
    code = main(["doctor", "--json", *args])
    data = json.loads(capsys.readouterr().out)
    return code, {c["name"]: c for c in data["checks"]}


def test_everything_required_is_here(capsys: pytest.CaptureFixture[str]) -> None:
    code, checks = _report(capsys)
    for name in ("tmux", "redis", "qdrant-edge", "embedder"):
        assert checks[name]["status"] == "ok", checks[name]
        assert checks[name]["required"] is True
    assert "Redis server v=6.2" in str(checks["redis"]["detail"])
    assert {
        f"agent:{c}" for c in ("claude-code", "codex", "gemini-cli", "opencode", "shell")
    } <= set(checks)
    assert code == 0


def test_missing_tmux_is_broken_with_a_fix(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    claude = bindir / "claude"
    claude.write_text('#!/bin/sh\necho "2.0.1 (Claude Code)"\n')
    claude.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    code, checks = _report(capsys)
    assert code == 1
    assert checks["tmux"]["status"] == "missing" and "install tmux" in str(checks["tmux"]["fix"])
    assert checks["agent:claude-code"]["status"] == "ok" and "2.0.1" in str(
        checks["agent:claude-code"]["detail"]
    )
    assert checks["agent:codex"]["status"] == "missing"
    assert checks["agent:codex"]["fix"] == "npm install -g @openai/codex"
    main(["doctor"])
    text = capsys.readouterr().out
    assert "MISSING  tmux" in text and "fix: install tmux" in text and "1 required broken" in text


def test_keyring_is_advisory(
    capsys: pytest.CaptureFixture[str], memory_keyring: MemoryKeyring
) -> None:
    _, checks = _report(capsys)
    assert checks["keyring"]["status"] == "ok" and checks["keyring"]["required"] is False


def test_no_keyring_is_a_warning_not_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    import keyring
    import keyring.backends.fail

    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        code, checks = _report(capsys)
    finally:
        keyring.set_keyring(previous)
    assert checks["keyring"]["status"] == "warn" and "--insecure-storage" in str(
        checks["keyring"]["fix"]
    )
    assert code == 0


def test_the_embedder_check_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from nika_tui.cli.doctor import check_embedder\n"
        "r = check_embedder()\n"
        "print(r.status, 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["ok", "False", "False"]


def test_untrusted_codex_hooks_are_reported_with_how_to_trust_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nika_tui.domain.tenant import AgentCli, KernelConfig, TenantConfig
    from nika_tui.engine.kernels.hook_install import install_for_tenant
    from nika_tui.paths import roots
    from nika_tui.services.config_store import save_tenant

    config = TenantConfig(tenant_id="acme", display_name="Acme", agent_cli=AgentCli.CODEX)
    save_tenant(config)
    install_for_tenant(config, roots())  # no consent: hooks installed, not trusted
    _code, checks = _report(capsys)
    check = checks["codex-hooks:acme"]
    assert check["status"] == "warn" and check["required"] is False
    assert "untrusted: Codex skips" in str(check["detail"])
    assert "nika setup agent --tenant acme" in str(check["fix"])

    consented = config.model_copy(update={"kernel": KernelConfig(trust_codex_hooks=True)})
    save_tenant(consented)
    install_for_tenant(consented, roots())
    _code, checks = _report(capsys)
    assert checks["codex-hooks:acme"]["status"] == "ok"


def test_an_unverified_cli_version_is_said_plainly() -> None:
    from nika_tui.domain.agent_versions import VERIFIED_VERSIONS, verified_note

    assert verified_note("codex", VERIFIED_VERSIONS["codex"]) == ""
    note = verified_note("claude-code", "9.9.9")
    assert "not verified with nika (verified: 2.1.197)" in note


def _stand_in(bindir: Path, name: str, version_line: str) -> None:
    exe = bindir / name
    exe.write_text(f'#!/bin/sh\necho "{version_line}"\n')
    exe.chmod(0o755)


def test_gemini_and_opencode_versions_are_checked_too(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stand_in(bindir, "gemini", "0.25.2")  # hooks off by default: nika's never run
    _stand_in(bindir, "opencode", "1.0.0")
    monkeypatch.setenv("PATH", str(bindir))
    _code, checks = _report(capsys)
    gemini = checks["agent:gemini-cli"]
    assert gemini["status"] == "warn" and gemini["required"] is False
    assert "0.25.2 is older than 0.26.0, the first version that runs nika's hooks" in str(
        gemini["detail"]
    )
    assert gemini["fix"] == "npm install -g @google/gemini-cli@latest"
    opencode = checks["agent:opencode"]
    assert opencode["status"] == "ok"
    assert "not verified with nika (verified: 1.18.33)" in str(opencode["detail"])

    _stand_in(bindir, "gemini", "0.61.0")
    _code, checks = _report(capsys)
    assert checks["agent:gemini-cli"]["status"] == "ok"
    assert "not verified" not in str(checks["agent:gemini-cli"]["detail"])


def test_the_verified_versions_are_the_suites_pins() -> None:
    from nika_tui.domain.agent_versions import VERIFIED_VERSIONS
    from tests.agents.cli_install import PINNED

    clis = {
        "claude": "claude-code",
        "codex": "codex",
        "gemini": "gemini-cli",
        "opencode": "opencode",
    }
    assert {clis[binary]: version for version, binary in PINNED.values()} == VERIFIED_VERSIONS


def test_the_tenants_cloud_judge_is_reached_with_its_key(
    capsys: pytest.CaptureFixture[str], memory_keyring: MemoryKeyring
) -> None:
    import keyring

    from nika_tui.domain.tenant import (
        JudgeConfig,
        JudgeKind,
        Privacy,
        SecretRef,
        SecretSource,
        TenantConfig,
    )
    from nika_tui.services.config_store import save_tenant
    from nika_tui.services.secrets import SecretStore
    from tests.support.judge_server import BatchChatServer

    server = BatchChatServer(key="sk-right-" + "r" * 20)
    try:
        ref = SecretRef(source=SecretSource.KEYRING, name="judge.api_key")
        judge = JudgeConfig(kind=JudgeKind.HTTP, endpoint=server.url, api_key=ref)
        config = TenantConfig(
            tenant_id="acme", display_name="Acme", privacy=Privacy.CLOUD, judge=judge
        )
        save_tenant(config)
        service = SecretStore("acme").service
        keyring.set_password(service, "judge.api_key", "sk-wrong")
        _code, checks = _report(capsys)
        check = checks["judge:acme"]
        assert check["status"] == "warn" and "refused the key (HTTP 401)" in str(check["detail"])
        assert "nika setup privacy --tenant acme" in str(check["fix"])

        keyring.set_password(service, "judge.api_key", "sk-right-" + "r" * 20)
        _code, checks = _report(capsys)
        assert checks["judge:acme"]["status"] == "ok"

        keyring.delete_password(service, "judge.api_key")
        _code, checks = _report(capsys)
        assert checks["judge:acme"]["status"] == "warn"  # the key cannot be read
    finally:
        server.close()
