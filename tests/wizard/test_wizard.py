"""The wizard end to end: real questionary prompts fed through prompt_toolkit pipe input."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from nika_tui.domain.answers import build_setup
from nika_tui.domain.tenant import AgentCli, AutoMode, Plan, Privacy, Provider, SecretSource
from nika_tui.errors import ConfigError, TenantNotFound
from nika_tui.paths import tenant_config_path
from nika_tui.services.config_store import load_tenant
from nika_tui.services.secrets import SecretStore
from nika_tui.settings import Settings
from nika_tui.wizard.apply import write_setup
from nika_tui.wizard.flow import SECTIONS
from tests.wizard.conftest import CLEAR, CTRL_C, ENTER, Runner

if TYPE_CHECKING:
    from tests.support.memory_keyring import MemoryKeyring

SCW_ACCESS = "SCWABCDEFGHIJ1234567"
SCW_SECRET = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"


def full_flow(*, providers: str = " " + ENTER, provider_keys: str = "") -> str:
    """Keys for every section after the tenant id (defaults unless stated)."""
    return (
        CLEAR
        + "Acme Corp"
        + ENTER  # display name
        + ENTER  # language: en
        + "2"
        + ENTER  # plan: pro
        + ENTER  # agent: the detected one (claude)
        + "2"
        + ENTER  # privacy: default
        + providers  # checkbox: scaleway
        + provider_keys
        + ENTER  # knowledge repo: none
        + ENTER
        + "2"
        + ENTER
        + ENTER
        + "3"
        + ENTER
        + "y"
        + ENTER  # scale, compress off, purge, rem auto, allowed ("y" then Enter)
        + ENTER  # quotas: plan defaults
    )


SCW_KEYS = SCW_ACCESS + ENTER + SCW_SECRET + ENTER


@pytest.fixture
def no_keyring() -> Iterator[None]:
    import keyring
    import keyring.backends.fail

    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    yield
    keyring.set_keyring(previous)


def existing_tenant(plan: str = "pro") -> Path:
    raw = {
        "tenant_id": "acme",
        "display_name": "Acme",
        "language": "en",
        "plan": plan,
        "agent_cli": "shell",
        "privacy": "local",
        "providers": ["runpod"],
    }
    setup = build_setup(raw, provider_values={Provider.RUNPOD: {"api_key": "r" * 32}})
    store = SecretStore("acme")
    return write_setup(
        setup, store, SecretSource.KEYRING, backup=False, roots=Settings.from_env().roots
    ).config_path


def test_new_tenant_with_failed_validation_and_reentry(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    keys = (
        CLEAR
        + "A B"
        + ENTER  # refused inline: the same prompt stays
        + CLEAR
        + "acme"
        + ENTER
        + full_flow(
            provider_keys="SCW-too-short" + ENTER + CLEAR + SCW_KEYS  # bad key, then a good one
        )
        + ENTER  # summary: write
    )
    run = run_wizard(keys)
    assert run.outcome is not None
    config = run.outcome.plan.config
    assert config.tenant_id == "acme" and config.plan is Plan.PRO
    assert config.privacy is Privacy.DEFAULT and config.agent_cli.value == "claude-code"
    assert config.auto_actions.compress is AutoMode.OFF
    assert config.auto_actions.rem is AutoMode.AUTONOMOUS
    # The summary masks keys to their last 4 characters and shows strategies and paths.
    assert "****4567" in run.text and "****a427" in run.text
    assert SCW_ACCESS not in run.text and SCW_SECRET not in run.text
    assert "scale_horizontal_eu" in run.text
    assert str(tenant_config_path("acme")) in run.text
    assert "Claude Code (1.0.51)" in run.text
    # Nothing is written before the caller applies the confirmed outcome.
    assert not tenant_config_path("acme").exists() and memory_keyring.entries == {}

    result = write_setup(
        run.outcome.plan,
        run.outcome.store,
        run.outcome.storage,
        backup=False,
        roots=Settings.from_env().roots,
    )
    assert stat.S_IMODE(result.config_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(result.config_path.parent.stat().st_mode) == 0o700
    assert memory_keyring.entries[("nika-os/acme", "scaleway.access_key")] == SCW_ACCESS
    text = result.config_path.read_text()
    assert SCW_SECRET not in text and "scaleway.secret_key" in text
    assert load_tenant("acme") == config


def test_ctrl_c_writes_nothing(run_wizard: Runner, memory_keyring: MemoryKeyring) -> None:
    keys = CLEAR + "acme" + ENTER + CLEAR + "Acme" + ENTER + ENTER + CTRL_C
    with pytest.raises(KeyboardInterrupt):
        run_wizard(keys)
    assert not tenant_config_path("acme").parent.exists()
    assert memory_keyring.entries == {}


def test_ctrl_c_at_the_summary_writes_nothing(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    with pytest.raises(KeyboardInterrupt):
        run_wizard(CLEAR + "acme" + ENTER + full_flow(provider_keys=SCW_KEYS) + CTRL_C)
    assert not tenant_config_path("acme").exists()
    assert memory_keyring.entries == {}


def test_quit_at_the_summary_writes_nothing(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    run = run_wizard(CLEAR + "acme" + ENTER + full_flow(provider_keys=SCW_KEYS) + "3" + ENTER)
    assert run.outcome is None and "Nothing written" in run.text


def test_rerun_keep_changes_nothing(run_wizard: Runner, memory_keyring: MemoryKeyring) -> None:
    path = existing_tenant()
    before = path.read_bytes()
    run = run_wizard(CLEAR + "acme" + ENTER + ENTER)  # Keep is the default
    assert run.outcome is None
    assert "already exists" in run.text
    assert path.read_bytes() == before


def test_rerun_modify_one_section(run_wizard: Runner, memory_keyring: MemoryKeyring) -> None:
    existing_tenant()
    keys = "2" + ENTER + "2" + ENTER + "3" + ENTER + ENTER  # modify → plan → multimodal → write
    run = run_wizard(keys, tenant="acme")
    assert run.outcome is not None
    config = run.outcome.plan.config
    assert config.plan is Plan.MULTIMODAL
    assert config.quotas.ram_mb == 16384  # plan-default quotas follow the plan
    assert Provider.RUNPOD in config.providers  # other sections untouched
    assert run.outcome.plan.secrets == {} and not run.outcome.backup


def test_rerun_reset_keeps_a_backup(run_wizard: Runner, memory_keyring: MemoryKeyring) -> None:
    path = existing_tenant()
    before = path.read_text()
    run = run_wizard("3" + ENTER + full_flow(provider_keys=SCW_KEYS) + ENTER, tenant="acme")
    assert run.outcome is not None and run.outcome.backup
    assert list(run.outcome.plan.config.providers) == [Provider.SCALEWAY]  # started over
    result = write_setup(
        run.outcome.plan,
        run.outcome.store,
        run.outcome.storage,
        backup=True,
        roots=Settings.from_env().roots,
    )
    assert result.backup_path is not None and result.backup_path.read_text() == before
    assert stat.S_IMODE(result.backup_path.stat().st_mode) == 0o600
    assert load_tenant("acme").display_name == "Acme Corp"


def test_setup_section_edits_only_that_section(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    existing_tenant()
    keys = (
        "n"
        + ENTER  # not the plan defaults
        + CLEAR
        + "100"
        + ENTER
        + CLEAR
        + "lots"
        + ENTER
        + CLEAR
        + "4096"
        + ENTER  # refused, then accepted
        + ENTER  # tokens: keep
        + ENTER  # write
    )
    run = run_wizard(keys, section="quotas")  # the only tenant is picked
    assert run.outcome is not None
    quotas = run.outcome.plan.config.quotas
    assert (quotas.cpu_percent, quotas.ram_mb, quotas.tokens_per_day) == (100, 4096, 2_000_000)
    assert run.outcome.plan.config.plan is Plan.PRO


def test_section_needs_an_existing_tenant(run_wizard: Runner) -> None:
    with pytest.raises(TenantNotFound):
        run_wizard("", section="plan")


def test_a_malformed_config_is_refused_and_left_alone(run_wizard: Runner) -> None:
    path = tenant_config_path("acme")
    path.parent.mkdir(parents=True)
    path.write_text("schema_version: 1\ntenant_id: acme\ndisplay_name: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        run_wizard("", tenant="acme")
    assert path.read_text().endswith("[unclosed\n")


def test_no_secure_store_records_env_names(run_wizard: Runner, no_keyring: None) -> None:
    env = {"SCW_ACCESS_KEY": SCW_ACCESS, "SCW_SECRET_KEY": SCW_SECRET}
    run = run_wizard(CLEAR + "acme" + ENTER + full_flow() + ENTER, env=env)
    assert run.outcome is not None
    assert "No secure store" in run.text and "--insecure-storage" in run.text
    refs = run.outcome.plan.config.providers[Provider.SCALEWAY].fields
    assert refs["access_key"].source is SecretSource.ENV
    assert refs["access_key"].name == "SCW_ACCESS_KEY"
    assert run.outcome.plan.secrets == {}
    assert any("SCW_SECRET_KEY must be set" in w for w in run.outcome.plan.warnings)


def test_insecure_storage_writes_the_0600_file(run_wizard: Runner, no_keyring: None) -> None:
    run = run_wizard(
        CLEAR + "acme" + ENTER + full_flow(provider_keys=SCW_KEYS) + ENTER, insecure=True
    )
    assert run.outcome is not None and run.outcome.storage is SecretSource.FILE
    write_setup(
        run.outcome.plan,
        run.outcome.store,
        run.outcome.storage,
        backup=False,
        roots=Settings.from_env().roots,
    )
    secrets = run.outcome.store.insecure_path
    assert stat.S_IMODE(secrets.stat().st_mode) == 0o600
    assert SCW_SECRET in secrets.read_text()
    assert SCW_SECRET not in tenant_config_path("acme").read_text()


def test_env_values_are_offered_with_a_mask(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    env = {"SCW_ACCESS_KEY": SCW_ACCESS, "SCW_SECRET_KEY": SCW_SECRET}
    run = run_wizard(
        CLEAR + "acme" + ENTER + full_flow(provider_keys="y" + ENTER + "y" + ENTER) + ENTER, env=env
    )
    assert run.outcome is not None
    assert run.outcome.plan.secrets["scaleway.secret_key"] == SCW_SECRET


def test_gcp_service_account_from_a_path(
    run_wizard: Runner, memory_keyring: MemoryKeyring, tmp_path: Path
) -> None:
    creds = tmp_path / "sa.json"
    creds.write_text(
        '{"type": "service_account", "project_id": "p", "private_key_id": "abcd1234",'
        ' "private_key": "-----BEGIN PRIVATE KEY-----\\nx\\n-----END PRIVATE KEY-----\\n",'
        ' "client_email": "n@p.iam.gserviceaccount.com"}'
    )
    gcp_only = "\x1b[B" * 3 + " " + ENTER  # 4th provider: Google Cloud
    keys = full_flow(
        providers=gcp_only,
        provider_keys=str(tmp_path / "nope") + ENTER + CLEAR + str(creds) + ENTER,
    )
    run = run_wizard(CLEAR + "acme" + ENTER + keys + ENTER)
    assert run.outcome is not None
    assert run.outcome.plan.secrets["gcp.service_account"] == creds.read_text()
    assert "scale_horizontal_gpu" in run.text and "(key ****1234)" in run.text


def test_a_missing_agent_cli_is_said_plainly(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    keys = (
        CLEAR
        + "acme"
        + ENTER
        + CLEAR
        + "Acme"
        + ENTER
        + ENTER
        + ENTER
        + "2"
        + ENTER  # Codex: not on the test PATH
        + ENTER  # nothing ticked to run beside it (Claude Code is installed)
        + ENTER  # yes, nika may trust its own Codex hooks
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
    )
    run = run_wizard(keys)
    assert run.outcome is not None and run.outcome.plan.config.agent_cli.value == "codex"
    assert "Codex is not installed" in run.text and "npm install -g @openai/codex" in run.text
    # Codex runs untrusted hooks never: asked once, the consent is kept with the kernel.
    assert run.outcome.plan.config.kernel.trust_codex_hooks is True


def test_sections_match_the_cli_choices() -> None:
    from nika_tui.cli.setup import SECTION_NAMES

    assert tuple(SECTIONS) == SECTION_NAMES


def test_verify_rejects_a_key_and_offers_to_reenter_it(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    from tests.fake_providers import RUNPOD, fake_provider_server

    runpod_only = "\x1b[B" * 5 + " " + ENTER
    wrong = "rpa_" + "W" * 24
    keys = (
        CLEAR
        + "acme"
        + ENTER
        + full_flow(
            providers=runpod_only,
            provider_keys=wrong + ENTER + "y" + ENTER + RUNPOD["api_key"] + ENTER,
        )
        + ENTER
    )
    with fake_provider_server() as endpoints:
        run = run_wizard(keys, verify=True, endpoints=endpoints)
    assert run.outcome is not None
    assert "online check RunPod: invalid" in run.text
    assert "online check RunPod: ok" in run.text
    assert run.outcome.plan.secrets == {"runpod.api_key": RUNPOD["api_key"]}


def test_verify_is_skipped_in_local_privacy(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    keys = (
        CLEAR
        + "acme"
        + ENTER
        + CLEAR
        + "Acme"
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER  # privacy: local (the default)
        + " "
        + ENTER
        + SCW_KEYS
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
        + ENTER
    )
    # No server at all: a network call would be reported as a failure, not skipped.
    run = run_wizard(keys, verify=True)
    assert run.outcome is not None
    assert "online check skipped: privacy 'local'" in run.text


def test_cloud_privacy_asks_the_judge_key_and_checks_the_endpoint(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    from tests.support.judge_server import BatchChatServer

    key = "sk-judge-" + "k" * 24
    server = BatchChatServer(key=key)
    try:
        keys = (
            CLEAR
            + "acme"
            + ENTER
            + CLEAR
            + "Acme"
            + ENTER
            + ENTER
            + ENTER
            + ENTER
            + "3"
            + ENTER  # privacy: cloud
            + "ftp://nope"
            + ENTER
            + CLEAR
            + server.url
            + ENTER  # refused, then ok
            + "small-judge"
            + ENTER  # model
            + "sk-wrong"
            + ENTER  # key: refused by the endpoint
            + "y"
            + ENTER  # enter the judge settings again
            + ENTER  # endpoint: the one typed
            + "small-judge"
            + ENTER
            + key
            + ENTER  # the right key: the check passes
            + ENTER  # no provider
            + ENTER
            + ENTER
            + ENTER
            + ENTER
            + ENTER
            + ENTER
            + ENTER
        )
        run = run_wizard(keys)
    finally:
        server.close()
    assert run.outcome is not None
    assert "judge check: invalid" in run.text and "refused the key (HTTP 401)" in run.text
    assert "judge check: ok" in run.text
    judge = run.outcome.plan.config.judge
    assert (judge.kind.value, judge.endpoint, judge.model) == ("http", server.url, "small-judge")
    # The key goes to the secret store with the other secrets, never into the config.
    assert judge.api_key is not None and judge.api_key.name == "judge.api_key"
    assert judge.api_key.source is SecretSource.KEYRING
    assert run.outcome.plan.secrets["judge.api_key"] == key
    assert key not in run.outcome.plan.config.model_dump_json() and key not in run.text
    assert f"judge: http at {server.url}" in run.text
    assert "tip: configure a Scaleway API key" in run.text  # no strategy available


def test_unknown_section_is_refused(run_wizard: Runner) -> None:
    from nika_tui.errors import ValidationFailed

    with pytest.raises(ValidationFailed, match="unknown setup section"):
        run_wizard("", section="colours")


def test_several_agent_clis_side_by_side_from_a_multi_select(
    run_wizard: Runner, agent_bin: Path, memory_keyring: MemoryKeyring
) -> None:
    codex = agent_bin / "codex"
    codex.write_text('#!/bin/sh\necho "codex-cli 0.171.0"\n')
    codex.chmod(0o755)
    keys = (
        CLEAR + "acme" + ENTER + CLEAR + "Acme" + ENTER
        + ENTER  # language
        + ENTER  # plan
        + ENTER  # agent: Claude Code (the first installed)
        + " " + ENTER  # also run: Codex (space ticks it)
        + ENTER  # nika may trust its own Codex hooks
        + ENTER * 9
    )  # fmt: skip
    run = run_wizard(keys)
    assert run.outcome is not None
    config = run.outcome.plan.config
    assert [c.value for c in config.agent_clis] == ["claude-code", "codex"]
    assert config.kernel.trust_codex_hooks is True


def test_autonomous_compress_without_a_knowledge_repo_is_refused(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    existing_tenant()  # no knowledge repo
    keys = (
        ENTER  # scale: escalate
        + "3"
        + ENTER  # compress: autonomous -> refused, no "Allow it?" asked
        + ENTER  # purge: escalate
        + ENTER  # rem: escalate
        + ENTER  # write
    )
    run = run_wizard(keys, section="auto-actions")
    assert run.outcome is not None
    assert "autonomous compress needs a knowledge_repo" in run.text
    assert run.outcome.plan.config.auto_actions.compress is AutoMode.ESCALATE


def test_enter_after_allow_does_not_answer_the_next_question(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    existing_tenant()
    keys = (
        ENTER  # scale: escalate
        + ENTER  # compress: escalate
        + "3"
        + ENTER  # purge: autonomous
        + "y"
        + ENTER  # Allow it? y, then the habitual Enter: it confirms, it does not move on
        + "2"
        + ENTER  # rem: off (with auto_enter the Enter above had taken rem's default)
        + ENTER  # write
    )
    run = run_wizard(keys, section="auto-actions")
    assert run.outcome is not None
    auto = run.outcome.plan.config.auto_actions
    assert (auto.purge, auto.rem) == (AutoMode.AUTONOMOUS, AutoMode.OFF)


def test_cpu_quota_is_bounded_by_this_machine(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    import os

    cores = len(os.sched_getaffinity(0))
    existing_tenant()
    keys = (
        "n"
        + ENTER  # not the plan defaults
        + CLEAR
        + str(100 * cores + 1)
        + ENTER  # refused: more than this machine has
        + CLEAR
        + str(100 * cores)
        + ENTER
        + ENTER  # ram: keep
        + ENTER  # tokens: keep
        + ENTER  # write
    )
    run = run_wizard(keys, section="quotas")
    assert run.outcome is not None
    assert run.outcome.plan.config.quotas.cpu_percent == 100 * cores


def test_rerun_checks_the_judge_with_the_stored_key(
    run_wizard: Runner, memory_keyring: MemoryKeyring
) -> None:
    """`nika setup privacy --tenant T` (the fix `nika doctor` prints) with the key field left
    empty checks the endpoint with the key in the keyring, as the service would use it."""
    from tests.support.judge_server import BatchChatServer

    key = "sk-judge-" + "s" * 24
    server = BatchChatServer(key=key)
    try:
        raw = {
            "tenant_id": "acme",
            "display_name": "Acme",
            "language": "en",
            "plan": "pro",
            "agent_cli": "shell",
            "privacy": "cloud",
            "providers": [],
        }
        setup = build_setup(
            raw, storage=SecretSource.KEYRING, judge_endpoint=server.url, judge_api_key=key
        )
        write_setup(
            setup,
            SecretStore("acme"),
            SecretSource.KEYRING,
            backup=False,
            roots=Settings.from_env().roots,
        )
        assert memory_keyring.entries[("nika-os/acme", "judge.api_key")] == key
        # privacy: kept; endpoint: kept; model: none; key: empty (keep); write.
        run = run_wizard(ENTER * 5, tenant="acme", section="privacy")
    finally:
        server.close()
    assert run.outcome is not None, run.text
    assert "judge check: ok" in run.text, run.text
    assert "HTTP 401" not in run.text
    # The stored key stays where it was: referenced, not copied into the config.
    judge = run.outcome.plan.config.judge
    assert judge.api_key is not None and judge.api_key.name == "judge.api_key"
    assert key not in run.outcome.plan.config.model_dump_json() and key not in run.text


def test_a_gemini_cli_too_old_for_hooks_is_not_offered(
    run_wizard: Runner, agent_bin: Path, memory_keyring: MemoryKeyring
) -> None:
    """Issue 13: "a CLI nika cannot serve is not offered by the wizard" (decision 477)."""
    gemini = agent_bin / "gemini"
    gemini.write_text('#!/bin/sh\necho "0.23.0"\n')
    gemini.chmod(0o755)
    keys = (
        CLEAR + "acme" + ENTER + CLEAR + "Acme" + ENTER
        + ENTER  # language
        + ENTER  # plan
        + "3" + ENTER  # agent: Gemini CLI's digit, disabled: Enter takes the one pointed at
        + ENTER * 10  # the rest as offered (no side-by-side list: Gemini CLI is not in it)
    )  # fmt: skip
    run = run_wizard(keys)
    assert run.outcome is not None, run.text
    # Not picked: the default (the first servable CLI installed, Claude Code here) stands.
    assert run.outcome.plan.config.agent_cli.value == "claude-code"
    assert AgentCli.GEMINI_CLI not in run.outcome.plan.config.agent_clis
    [line] = [t for t in run.text.splitlines() if "older than 0.26.0" in t]
    assert line.strip().startswith("not offered: gemini-cli 0.23.0 is older than 0.26.0")
    assert "npm install -g @google/gemini-cli@latest" in line


def test_a_gemini_cli_new_enough_is_offered_on_its_digit(
    run_wizard: Runner, agent_bin: Path, memory_keyring: MemoryKeyring
) -> None:
    gemini = agent_bin / "gemini"
    gemini.write_text('#!/bin/sh\necho "0.61.0"\n')
    gemini.chmod(0o755)
    keys = (
        CLEAR + "acme" + ENTER + CLEAR + "Acme" + ENTER
        + ENTER + ENTER  # language, plan
        + "3" + ENTER  # agent: Gemini CLI
        + ENTER * 10
    )  # fmt: skip
    run = run_wizard(keys)
    assert run.outcome is not None, run.text
    assert run.outcome.plan.config.agent_cli.value == "gemini-cli"
    assert "not offered" not in run.text
