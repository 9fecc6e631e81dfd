"""``nika judge eval``: the quality gate on the fixed dev set, output formats, bad input."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from nika_tui.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
DEV = DATA / "judge_dev.jsonl"
HOLDOUT = DATA / "judge_holdout.jsonl"


def _eval_json(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["judge", "eval", str(path), "--json", *extra]) == 0
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    return data


def test_dev_set_is_large_bilingual_and_has_every_label() -> None:
    rows = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line]
    labels = [r["label"] for r in rows]
    assert len(rows) >= 150
    assert {"REPLACE", "KEEP", "UNCERTAIN"} == set(labels)
    french = sum(1 for r in rows if r.get("kind", "").startswith("fr"))
    assert french >= len(rows) // 6
    kinds = {r.get("kind", "").removeprefix("fr ") for r in rows}
    assert {"backdated", "duplicate", "other-entity", "hedged", "same-time"} <= kinds


def test_rules_judge_meets_the_bar_on_the_dev_set(capsys: pytest.CaptureFixture[str]) -> None:
    # Quality gate on a fixed dataset (DESIGN.md / issue 3): not a timing assertion.
    report = _eval_json(DEV, capsys, "--judge", "rules")
    assert report["judge"] == "rules"
    assert report["n"] == 161
    assert report["wrong_replace_rate"] <= 0.02
    assert report["accuracy"] >= 0.85
    assert set(report["per_label"]) == {"REPLACE", "KEEP", "UNCERTAIN"}


def test_holdout_is_scored(capsys: pytest.CaptureFixture[str]) -> None:
    report = _eval_json(HOLDOUT, capsys)
    assert report["n"] == 30
    assert report["wrong_replace_rate"] <= 0.02


def test_human_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(HOLDOUT)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"judge offline on {HOLDOUT}")
    assert "wrong_replace_rate" in out and "confusion" in out
    assert "UNCERTAIN" in out


def test_bad_file_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "label": "KEEP"}\n', encoding="utf-8")
    assert main(["judge", "eval", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 1: old must be an object" in err
    assert err.count("\n") == 2  # error line + hint line


def test_missing_and_non_utf8_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(tmp_path / "nope.jsonl")]) == 2
    assert "no such file" in capsys.readouterr().err
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes("déploiement".encode("latin-1"))
    assert main(["judge", "eval", str(latin), "--json"]) == 2
    err = json.loads(capsys.readouterr().err)
    assert "not UTF-8" in err["error"]


def test_http_judge_needs_an_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(HOLDOUT), "--judge", "http"]) == 2
    assert "needs an endpoint" in capsys.readouterr().err


def test_api_key_env_must_be_set(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["judge", "eval", str(HOLDOUT), "--judge", "http", "--endpoint", "http://127.0.0.1:9"]
    assert main([*args, "--api-key-env", "NIKA_TEST_UNSET_KEY"]) == 2
    assert "NIKA_TEST_UNSET_KEY is not set" in capsys.readouterr().err


# --- the learned offline judge: splits, cascade, leave-one-domain-out, retraining -------------

CORPUS = DATA / "judge_corpus"


def test_corpus_splits_are_complete_and_disjoint() -> None:
    splits = {}
    names = ("train", "dev", "test", "delta", "echo", "foxtrot", "golf", "hotel", "india")
    later = ("epsilon", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "tango")
    later += ("romeo", "sierra", "uniform", "victor", "whiskey", "xray", "kappa", "lambda")
    later += ("sigma", "rho", "tau", "phi")
    # Pairs about two things of one project: all KEEP.
    unrelated = ("juliett", "yankee", "zulu", "omega", "psi")
    for name in (*names, *later, *unrelated):
        rows = [json.loads(x) for x in (CORPUS / f"{name}.jsonl").read_text("utf-8").splitlines()]
        assert (CORPUS / f"{name}.notes.md").is_file()
        assert len(rows) >= 200
        labels = {"KEEP"} if name in unrelated else {"REPLACE", "KEEP", "UNCERTAIN"}
        assert {r["label"] for r in rows} == labels
        assert sum(r["lang"] == "fr" for r in rows) >= len(rows) // 6
        splits[name] = rows
    domains = {n: {r["domain"] for r in rows} for n, rows in splits.items()}
    authors = {n: {r["author"] for r in rows} for n, rows in splits.items()}
    for a, b in itertools.combinations(splits, 2):
        assert not domains[a] & domains[b] and not authors[a] & authors[b], (a, b)


def test_shipped_model_was_trained_on_the_files_as_they_are_now() -> None:
    """Every in-repo split trains (decision 180), and a corpus edit without a retrain fails."""
    import hashlib

    from nika_tui.engine.judge_training import DEFAULT_TRAINING_FILES
    from nika_tui.services.judges.offline import load_model

    files = load_model().meta["training_files"]
    assert set(files) == set(DEFAULT_TRAINING_FILES)
    root = Path(__file__).resolve().parents[2]
    for name, digest in files.items():
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.embedder
def test_eval_reports_each_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(HOLDOUT), str(CORPUS / "dev.jsonl"), "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r["file"] for r in reports] == [str(HOLDOUT), str(CORPUS / "dev.jsonl")]
    assert [r["n"] for r in reports] == [30, 210]
    assert all(r["judge"] == "offline" for r in reports)


@pytest.mark.embedder
def test_eval_cascade_reports_both_tiers_and_the_cascade(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.support.judge_server import BatchChatServer

    server = BatchChatServer()
    try:
        args = ["judge", "eval", str(HOLDOUT), "--judge", "http", "--endpoint", server.url]
        assert main([*args, "--cascade", "--json"]) == 0
    finally:
        server.close()
    reports = json.loads(capsys.readouterr().out)
    assert [r["judge"] for r in reports] == ["offline", "http", "cascade:offline+http"]
    assert all(r["n"] == 30 for r in reports)
    # The LLM tier saw all 30 pairs in 20-pair batches, the cascade only the unclear ones.
    bodies = [json.loads(r["messages"][-1]["content"].split("\n", 1)[1]) for r in server.batches()]
    assert [len(b) for b in bodies[:2]] == [20, 10]
    assert sum(len(b) for b in bodies[2:]) < 30


def _mini_corpus(path: Path) -> None:
    shapes = [
        ("The {x} server is host-a.", "The {x} server moved to host-b.", "REPLACE"),
        ("The {x} port is 80.", "The {x} port is now 443.", "REPLACE"),
        ("{x} backups run at 02:00.", "{x} lunch is on Friday.", "KEEP"),
        ("The {x} API is in Go.", "The {x} API also serves gRPC.", "KEEP"),
        ("The {x} cache TTL is 60 s.", "Maybe the {x} cache TTL will be 30 s?", "UNCERTAIN"),
        ("{x} uses Redis.", "I think {x} might move to RabbitMQ.", "UNCERTAIN"),
    ]
    rows = []
    for domain in ("alpha", "beta", "gamma"):
        for i, (old, new, label) in enumerate(shapes):
            rows.append(
                {
                    "id": f"{domain}-{i}",
                    "old": {"text": old.format(x=domain), "timestamp": "2026-01-01T09:00:00Z"},
                    "new": {"text": new.format(x=domain), "timestamp": "2026-02-01T09:00:00Z"},
                    "label": label,
                    "domain": domain,
                    # One author per domain, and one pair with none (always trained on,
                    # never held out).
                    **({"author": f"{domain[0]}-author"} if i else {}),
                }
            )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")


@pytest.mark.embedder
def test_lodo_leaves_each_domain_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "mini.jsonl"
    _mini_corpus(corpus)
    assert main(["judge", "eval", str(corpus), "--lodo", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["domains"]) == {"alpha", "beta", "gamma"}
    assert report["n"] == 18 and all(d["n"] == 6 for d in report["domains"].values())


@pytest.mark.embedder
def test_loao_leaves_each_author_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "mini.jsonl"
    _mini_corpus(corpus)
    assert main(["judge", "eval", str(corpus), "--loao", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge"] == "offline-loao"
    assert {a: d["n"] for a, d in report["authors"].items()} == {
        "a-author": 5,
        "b-author": 5,
        "g-author": 5,
    }


@pytest.mark.embedder
def test_train_writes_a_model_the_judge_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from nika_tui.services.judges.offline import load_model

    corpus, out = tmp_path / "mini.jsonl", tmp_path / "model.json"
    _mini_corpus(corpus)
    assert main(["judge", "train", str(corpus), "--out", str(out), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    model = load_model(out)
    assert summary["n_train"] == 18 and model.meta["training_files"] == {
        str(corpus): summary["training_files"][str(corpus)]
    }
    assert 0.3 <= model.replace_threshold <= 0.99
    # Fitted, not the zero start: boosted trees (the default) or, for `--kind lr`, weights.
    split = any(tree.left[0] >= 0 for stage in model.trees for tree in stage)
    assert split or any(any(row) for row in model.weights)


def test_train_refuses_a_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "train", "nope.jsonl"]) == 2
    assert "no such file" in capsys.readouterr().err
