"""Reading and writing tenant configs: refusals name file, field and fix; nothing is lost."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import NamedTuple

import pytest

from nika_tui.domain.tenant import TenantConfig
from nika_tui.errors import ConfigError, TenantNotFound, ValidationFailed
from nika_tui.paths import config_dir, tenant_config_path
from nika_tui.services.config_store import list_tenant_ids, load_tenant, parse_config, save_tenant


class Bad(NamedTuple):
    test_id: str
    text: str
    expected: str


BAD = [
    Bad("yaml", "tenant_id: [x\n", "not valid YAML at line"),
    Bad("not-a-mapping", "- a\n- b\n", "expected a mapping"),
    Bad(
        "unknown-field", "tenant_id: acme\ndisplay_name: A\ncolour: red\n", "colour: unknown field"
    ),
    Bad("wrong-type", "tenant_id: acme\ndisplay_name: A\nquotas: 5\n", "quotas:"),
    Bad(
        "enum",
        "tenant_id: acme\ndisplay_name: A\nplan: gold\n",
        "plan: Input should be 'free', 'pro' or 'multimodal'",
    ),
    Bad("newer", "schema_version: 7\ntenant_id: acme\ndisplay_name: A\n", "newer"),
    Bad(
        "version-type", "schema_version: one\ntenant_id: acme\ndisplay_name: A\n", "schema_version"
    ),
]


@pytest.mark.parametrize("case", BAD, ids=[c.test_id for c in BAD])
def test_bad_files_are_refused_with_file_and_field(case: Bad) -> None:
    path = Path("/somewhere/config.yaml")
    with pytest.raises(ConfigError) as exc:
        parse_config(path, case.text)
    assert str(path) in exc.value.message and case.expected in exc.value.message
    assert exc.value.hint


def test_save_is_private_and_round_trips() -> None:
    config = TenantConfig(tenant_id="acme", display_name="Acme")
    path = save_tenant(config)
    assert path == tenant_config_path("acme")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for d in (path.parent, path.parent.parent, config_dir()):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert path.read_text().startswith("schema_version: 1\n")
    assert load_tenant("acme") == config
    assert list_tenant_ids() == ["acme"]


def test_a_config_in_the_wrong_directory_is_refused() -> None:
    save_tenant(TenantConfig(tenant_id="acme", display_name="Acme"))
    copy = tenant_config_path("beta")
    copy.parent.mkdir(parents=True)
    copy.write_text(tenant_config_path("acme").read_text())
    with pytest.raises(ConfigError, match="does not match its directory 'beta'"):
        load_tenant("beta")


def test_unknown_and_malformed_tenant_ids() -> None:
    with pytest.raises(TenantNotFound):
        load_tenant("nobody")
    with pytest.raises(ValidationFailed):
        load_tenant("../x")
