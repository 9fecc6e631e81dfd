"""`nika audit`, `nika purge plan|apply|restore`, `nika rem run` (no service: local stores)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from nika_tui.cli import main
from nika_tui.domain.memory import Layer, Status
from nika_tui.domain.ports import VectorPoint
from nika_tui.paths import data_dir
from nika_tui.services.vectors.edge import EdgeVectorStore
from tests.plugins.debt import at_cosine, make_record, unit

TENANT = "acme"


@pytest.fixture
def seeded(redis_url: str, make_tenant) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A tenant with a duplicate pair, an old superseded fact and its replacement."""
    make_tenant(TENANT)
    rng = random.Random(1)
    now = datetime.now(UTC)
    today = now - timedelta(hours=1)
    new = make_record(TENANT, "The staging server is beta.internal", asserted_at=today)
    old = make_record(
        TENANT,
        "The staging server is alpha.internal",
        status=Status.RETIRED,
        superseded_by=new.id,
        retired_at=now - timedelta(days=40),
        retire_reason="rules: newer value",
        valid_from=now - timedelta(days=50),
    )
    a = make_record(TENANT, "Fact number one", asserted_at=today, files=("a.py",))
    b = make_record(TENANT, "Fact number one", asserted_at=today)
    va = unit(rng)
    store = EdgeVectorStore(data_dir() / "qdrant", 384)
    store.upsert(
        TENANT,
        Layer.SEMANTIC,
        [
            VectorPoint(r.id, v, r.text, r.to_payload())
            for r, v in (
                (new, unit(rng)),
                (old, unit(rng)),
                (a, va),
                (b, at_cosine(va, 0.97, rng)),
            )
        ],
    )
    store.close()
    return {"new": new.id, "old": old.id, "a": a.id, "b": b.id}


def _json(capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    return json.loads(capsys.readouterr().out)


def test_audit_json_has_every_metric_with_definition(
    seeded: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["audit", "--tenant", TENANT, "--json", "--seed", "1", "--no-act"]) == 0
    report = _json(capsys)["tenants"][TENANT]
    names = [m["name"] for m in report["metrics"]]
    assert len(names) == 9 and "duplicate_rate" in names
    dup = next(m for m in report["metrics"] if m["name"] == "duplicate_rate")
    assert dup["value"] == pytest.approx(2 / 3)  # a and b of 3 current points
    # 2 of 3 points is no trend: reported, but insufficient (issue 17), and never critical.
    assert dup["status"] == "insufficient" and dup["ci"] is not None and dup["definition"]
    assert dup["note"] == "insufficient data: n=3 of the 30 needed"
    assert report["actions"] == []  # --no-act
    assert report["critical"] is False


def test_audit_text_output(seeded: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--tenant", TENANT, "--seed", "1"]) == 0
    out = capsys.readouterr().out
    dup = next(line for line in out.splitlines() if "duplicate_rate" in line)
    assert dup.split()[0] == "insufficient" and "(insufficient data: n=3 of the 30 needed)" in dup
    assert "action dedup" not in out and "CRITICAL" not in out


def test_purge_plan_apply_restore(
    seeded: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["purge", "plan", "--tenant", TENANT, "--json"]) == 0
    planned = _json(capsys)
    assert [i["id"] for i in planned["items"]] == [seeded["old"]]
    assert planned["items"][0]["replacement_id"] == seeded["new"]

    assert main(["purge", "apply", "--tenant", TENANT]) == 3
    err = capsys.readouterr().err
    assert "needs a confirmation" in err and "--yes" in err

    assert main(["purge", "apply", "--tenant", TENANT, "--yes", "--json"]) == 0
    assert _json(capsys)["removed"][0]["id"] == seeded["old"]

    assert main(["purge", "restore", "--tenant", TENANT, "--id", seeded["old"], "--json"]) == 0
    assert _json(capsys)["restored"] == [seeded["old"]]


def test_rem_run(seeded: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rem", "run", "--tenant", TENANT, "--json"]) == 0
    summary = _json(capsys)["tenants"][TENANT]
    assert summary["steps"]["merge"]["retired"] == [seeded["b"]]
    assert summary["before"]["semantic"]["current"] == 3
    assert summary["after"]["semantic"]["current"] == 2
    assert main(["rem", "run", "--tenant", TENANT]) == 0
    assert "current memories 2 → 2" in capsys.readouterr().out


def test_unknown_tenant_is_one_clear_error(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["purge", "plan", "--tenant", "nobody"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == "error: unknown tenant 'nobody'"
    assert err[1].startswith("hint: create it with")


def test_compress_exports_themes_to_git_and_commits(
    seeded: dict[str, str],
    tmp_path,
    capsys: pytest.CaptureFixture[str],  # type: ignore[no-untyped-def]
) -> None:
    import subprocess

    repo = tmp_path / "knowledge-repo"
    assert main(["compress", "--tenant", TENANT, "--repo", str(repo), "--json"]) == 0
    result = _json(capsys)
    assert result["memories"] == 3  # the current ones; the retired fact is not exported
    assert result["kept"] == 2  # "Fact number one" twice: one line, the other id folded in
    assert result["commit"]
    files = sorted(repo.glob("knowledge/*/*.md"))
    assert [str(f.relative_to(repo)) for f in files] == sorted(
        f for f in result["files"] if f.endswith(".md")
    )
    text = "".join(f.read_text() for f in files)
    assert "The staging server is beta.internal" in text and "alpha.internal" not in text
    assert "scope: p1" in text and "recency:" in text and "confidence:" in text
    log = (
        subprocess.run(
            ["git", "-C", str(repo), "log", "--oneline"], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()
    )
    assert len(log) == 1
    assert main(["compress", "--tenant", TENANT, "--repo", str(repo), "--json"]) == 0
    assert _json(capsys)["commit"] is None  # same day, nothing changed: no empty commit
