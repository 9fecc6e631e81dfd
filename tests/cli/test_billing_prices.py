"""`nika billing prices` and a malformed price table: refused in one line naming the field (or
the YAML line), the file left byte for byte as it was (issue 18, docs/quotas-billing.md)."""

from __future__ import annotations

import subprocess
import sys
from typing import NamedTuple

import pytest

from nika_tui.billing.prices import DEFAULT_PRICES, parse_prices, prices_path
from nika_tui.errors import BillingError


class Bad(NamedTuple):
    test_id: str
    text: str
    named: str


BAD = [
    Bad("negative", "models:\n  gpt-5: {input: -1, output: 2}\n", "models.gpt-5.input"),
    Bad("infinite", "models:\n  gpt-5: {input: 1, output: .inf}\n", "models.gpt-5.output"),
    Bad("not-yaml", "models: [\n  gpt-5: {input\n", "not valid YAML: line 3, column 1"),
    Bad("tab", "models:\n\tgpt-5: {input: 1, output: 2}\n", "not valid YAML: line 2"),
    Bad("a-list", "- gpt-5\n", "(top level)"),
]


def _nika(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nika_tui", "billing", *args],
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_invalid_yaml_is_one_line_with_its_position() -> None:
    with pytest.raises(BillingError) as caught:
        parse_prices("models: [\n  gpt-5: {input\n")
    assert "\n" not in caught.value.message
    assert "line 3, column 1" in caught.value.message


@pytest.mark.parametrize("case", BAD, ids=lambda c: c.test_id)
def test_cli_prices_refuses_a_malformed_table_and_keeps_it(isolated_env, case: Bad) -> None:
    path = prices_path()
    path.parent.mkdir(parents=True)
    path.write_text(case.text)
    for args in (["prices"], ["prices", "--json"], ["prices", "--init"]):
        out = _nika(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        first = out.stderr.strip().splitlines()[0]
        assert "Traceback" not in out.stderr
        if "--init" in args:
            assert "exists" in first and "move it away" in out.stderr
        else:
            assert case.named in first and "prices.yaml" in first
        assert path.read_text() == case.text, f"{args} changed the file"


def test_cli_prices_init_writes_the_defaults_privately_once(isolated_env) -> None:
    out = _nika("prices", "--init")
    assert out.returncode == 0, out.stderr
    path = prices_path()
    assert parse_prices(path.read_text()) == DEFAULT_PRICES
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    edited = path.read_text().replace("input: 1.25", "input: 2.5", 1)
    path.write_text(edited)
    assert _nika("prices", "--init").returncode == 2
    assert path.read_text() == edited
