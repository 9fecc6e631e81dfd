"""The settings module: every NIKA_* knob read by nika is a documented field, parsed as before."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from nika_tui.settings import Settings, env_var, markdown_table

ROOT = Path(__file__).resolve().parents[1]

NOT_KNOBS = {
    "NIKA_META",  # a header name in agent payloads, not an environment variable
    "NIKA_COMMAND__",  # a placeholder in a generated plugin
    "NIKA_LOCATION_VARS",  # a Python constant's name
    "NIKA_MANAGED",  # written into a cloud pod's environment, read by its start command
    "NIKA_BOOTSTRAP",  # idem
    "NIKA_EMBEDDINGS_API_KEY",  # a secret: read where it is sent, never a setting
    "NIKA_JUDGE_API_KEY",  # idem: the cloud judge's key when no keyring is available
    "NIKA_REDIS_PASSWORD",  # a RunPod secret in a pod's env, moved to a 0600 file by its start
    # script and unset before the worker starts (decision 514): never a setting
}


def test_every_nika_variable_in_the_code_is_a_documented_field() -> None:
    named = set()
    for path in (ROOT / "nika_tui").rglob("*.py"):
        named |= set(re.findall(r"\bNIKA_[A-Z][A-Z0-9_]*", path.read_text()))
    fields = {env_var(name) for name in Settings.model_fields}
    assert named - NOT_KNOBS - fields == set()
    undocumented = [n for n, f in Settings.model_fields.items() if not f.description]
    assert undocumented == []


class Case(NamedTuple):
    test_id: str
    env: dict[str, str]
    field: str
    expected: Any


CASES = [
    Case("unset_is_default", {}, "audit_interval_s", 6 * 3600.0),
    Case("number", {"NIKA_AUDIT_INTERVAL_S": "60"}, "audit_interval_s", 60.0),
    Case("unparsable_is_default", {"NIKA_REM_IDLE_S": "soon"}, "rem_idle_s", 1800.0),
    Case("empty_is_default", {"NIKA_TMUX_SOCKET": ""}, "tmux_socket", "nika"),
    Case("socket", {"NIKA_TMUX_SOCKET": "t1"}, "tmux_socket", "t1"),
    Case("hookd_off_word", {"NIKA_HOOKD": " Off "}, "hookd", False),
    Case("hookd_other_word_is_on", {"NIKA_HOOKD": "maybe"}, "hookd", True),
    Case("embed_ahead_zero", {"NIKA_EMBED_AHEAD": "0"}, "embed_ahead", False),
    Case("embed_ahead_false_is_not_zero", {"NIKA_EMBED_AHEAD": "false"}, "embed_ahead", True),
    Case("cgroups_zero", {"NIKA_QUOTA_CGROUPS": " 0"}, "quota_cgroups", False),
    Case("operator_one", {"NIKA_OPERATOR": "1"}, "operator", True),
    Case("operator_yes_is_not_one", {"NIKA_OPERATOR": "yes"}, "operator", False),
    Case("no_autostart", {"NIKA_NO_AUTOSTART": "1"}, "no_autostart", True),
    Case("min_pending_unset", {}, "optimize_min_pending", None),
    Case("min_pending_bad", {"NIKA_OPTIMIZE_MIN_PENDING": "x"}, "optimize_min_pending", None),
    Case("data_dir", {"NIKA_OS_DATA_DIR": "~/d"}, "os_data_dir", Path("~/d")),
    Case("url_stripped", {"NIKA_EMBEDDINGS_URL": " http://e/v1 "}, "embeddings_url", "http://e/v1"),
    Case("lease_kept_raw", {"NIKA_LEASE_TTL_S": "0"}, "lease_ttl_s", "0"),
    Case("lowercase_is_not_read", {"nika_tenant_id": "acme"}, "tenant_id", ""),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_from_env_parses_as_the_readers_did(case: Case) -> None:
    assert getattr(Settings.from_env(case.env), case.field) == case.expected


def test_unknown_nika_variables_are_ignored_not_refused() -> None:
    # NIKA_META and friends live in the same environments: reading one must not fail.
    assert Settings.from_env({"NIKA_META": "x", "NIKA_TENANT_ID": "acme"}).tenant_id == "acme"


def test_the_constructor_reads_the_process_environment_like_from_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NIKA_TENANT_ID", "acme")
    monkeypatch.setenv("NIKA_HOOKD", "off")
    monkeypatch.setenv("NIKA_AUDIT_INTERVAL_S", "not a number")
    assert Settings() == Settings.from_env()
    assert Settings().tenant_id == "acme" and Settings().hookd is False


def test_readme_lists_every_variable_from_the_docstrings() -> None:
    assert markdown_table() in (ROOT / "README.md").read_text()


class RootsCase(NamedTuple):
    test_id: str
    env: dict[str, str]


ROOTS_CASES = [
    RootsCase("nothing set: home", {}),
    RootsCase("xdg", {"XDG_CONFIG_HOME": "/xc", "XDG_DATA_HOME": "/xd"}),
    RootsCase(
        "nika dirs win over xdg",
        {"NIKA_OS_CONFIG_DIR": "/c", "NIKA_OS_DATA_DIR": "~/d", "XDG_DATA_HOME": "/xd"},
    ),
    RootsCase("empty nika dir: xdg", {"NIKA_OS_DATA_DIR": "", "XDG_DATA_HOME": "/xd"}),
    RootsCase("socket", {"NIKA_TMUX_SOCKET": "mine"}),
    RootsCase("empty socket: nika", {"NIKA_TMUX_SOCKET": ""}),
]


@pytest.mark.parametrize("case", ROOTS_CASES, ids=[c.test_id for c in ROOTS_CASES])
def test_roots_are_resolved_once_by_the_paths_rules(case: RootsCase) -> None:
    from nika_tui import paths

    settings = Settings.from_env(case.env)
    assert settings.roots == paths.roots(case.env)
    assert settings.config_root == paths.config_dir(case.env)
    assert settings.data_root == paths.data_dir(case.env)
    assert settings.roots.tmux_socket == paths.tmux_socket_name(case.env)


def test_roots_do_not_follow_a_later_change_of_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NIKA_OS_DATA_DIR", str(tmp_path / "first"))
    settings = Settings()
    monkeypatch.setenv("NIKA_OS_DATA_DIR", str(tmp_path / "second"))
    assert settings.data_root == tmp_path / "first"
    assert settings.roots.tenant_data_dir("acme") == tmp_path / "first" / "tenants" / "acme"


def test_store_urls_are_read_once_and_kept_out_of_every_dump(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = "redis://:hunter2@127.0.0.1:6390/0"
    monkeypatch.setenv("REDIS_URL", url)
    monkeypatch.setenv("QDRANT_URL", " http://q:6333 ")
    settings = Settings()
    monkeypatch.setenv("REDIS_URL", "redis://elsewhere:6379/0")
    assert settings.redis_url == url and settings.qdrant_url == "http://q:6333"
    assert settings.model_copy(update={"tenant_id": "acme"}).redis_url == url
    shown = f"{settings!r} {settings.model_dump()} {settings.model_dump_json()} {markdown_table()}"
    assert "hunter2" not in shown and "q:6333" not in shown
    assert Settings.from_env({}).redis_url == "" and Settings.from_env({}).qdrant_url == ""


def test_a_value_no_reader_accepts_is_one_named_config_error() -> None:
    from nika_tui.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        Settings.from_env({"NIKA_SCALE_RECONCILE_S": "0"})
    assert info.value.message.startswith("NIKA_SCALE_RECONCILE_S is not valid")
    assert info.value.hint == "fix or unset NIKA_SCALE_RECONCILE_S"


def test_a_joined_worker_moves_its_settings_to_the_joined_redis() -> None:
    first = Settings.from_env({"REDIS_URL": "redis://a:6379/0", "NIKA_TENANT_ID": "acme"})
    joined = first.with_redis_url("redis://b:6379/0")
    assert joined.redis_url == "redis://b:6379/0" and joined.tenant_id == "acme"
    assert first.redis_url == "redis://a:6379/0"
