"""``nika import``'s options that argparse lets through but the import cannot use: each is an
error line and a hint (no traceback), exit 2, before any file is read or anything queued."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import redis

from nika_tui.cli import main
from tests.importer.import_run import T0, TENANT, TURNS
from tests.importer.sessions_on_disk import claude_session


class Case(NamedTuple):
    test_id: str
    args: list[str]
    error: str


CASES = [
    Case("project-201-chars", ["--project", "p" * 201], "--project is 201 characters, at most 200"),
    Case("max-file-mb-zero", ["--max-file-mb", "0"], "--max-file-mb must be a positive number"),
    Case("max-file-mb-negative", ["--max-file-mb", "-1"], "--max-file-mb must be a positive"),
    Case("max-file-mb-nan", ["--max-file-mb", "nan"], "--max-file-mb must be a positive"),
    Case("max-file-mb-inf", ["--max-file-mb", "inf"], "--max-file-mb must be a positive"),
    Case("timeout-negative", ["--timeout", "-5"], "--timeout must be 0 or more seconds, not -5"),
    Case("timeout-nan", ["--timeout", "nan"], "--timeout must be 0 or more seconds, not nan"),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_a_bad_option_is_an_error_line_exit_2_and_nothing_queued(
    case: Case,
    make_tenant: Callable[..., Any],
    redis_client: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_tenant(TENANT)
    claude_session(tmp_path / "c", "s-1", "/w/acme", T0, TURNS)

    code = main(["import", "--tenant", TENANT, *case.args, str(tmp_path / "c")])

    err = capsys.readouterr().err
    assert code == 2
    first, hint = err.splitlines()
    assert first.startswith(f"error: {case.error}"), err
    assert hint.startswith("hint: ") and "Traceback" not in err
    assert redis_client.exists("nika:ingest") == 0


def test_the_limits_themselves_are_accepted(
    make_tenant: Callable[..., Any], redis_client: redis.Redis, tmp_path: Path
) -> None:
    make_tenant(TENANT)
    claude_session(tmp_path / "c", "s-1", "/w/acme", T0, TURNS)
    args = ["--project", "p" * 200, "--max-file-mb", "0.5", "--timeout", "0", "--json"]

    assert main(["import", "--tenant", TENANT, *args, str(tmp_path / "c")]) == 0
    assert redis_client.xlen("nika:ingest") == 5
