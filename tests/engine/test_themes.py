"""Duplicate folding in themes (decision 93), on the real embedder's vectors.

A fold loses nothing only when the two memories say the same thing: the same normalised text,
or cosine ≥ 0.97 with the same numbers / hosts / paths, in one project and layer. Each case
compresses two memories and says whether they become one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NamedTuple

import numpy as np
import pytest

from nika_tui.domain.memory import Layer
from nika_tui.engine.themes import Kept, cluster
from tests.plugins.debt import T0, make_record

pytestmark = pytest.mark.embedder


class Case(NamedTuple):
    test_id: str
    older: str
    newer: str
    folded: bool
    newer_project: str = "p1"
    newer_layer: Layer = Layer.SEMANTIC


CASES = (
    Case("same-text-other-case-and-punctuation", "The CI runs on GitHub Actions.",
         "the ci runs on github actions", True),
    Case("same-tokens-near-identical", "Staging is deployed to stage-2.internal every night",
         "Staging is deployed to stage-2.internal every single night", True),
    Case("port-8080-vs-8081", "The web server listens on port 8080",
         "The web server listens on port 8081", False),
    Case("host-a-vs-host-b", "The cache runs on host cache-a.internal",
         "The cache runs on host cache-b.internal", False),
    Case("same-text-other-project", "Payments use Stripe in test mode",
         "Payments use Stripe in test mode", False, newer_project="p2"),
    Case("same-text-other-layer", "Payments use Stripe in test mode",
         "Payments use Stripe in test mode", False, newer_layer=Layer.EPISODIC),
)  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_fold_only_what_says_the_same(case: Case, embedder: Any) -> None:
    old = make_record("acme", case.older, valid_from=T0)
    new = make_record("acme", case.newer, valid_from=T0 + timedelta(days=1),
                      project_id=case.newer_project, layer=case.newer_layer)  # fmt: skip
    vectors = np.asarray(embedder.embed([old.text, new.text]), dtype=np.float32)
    items = [Kept(r, r.to_payload(), v) for r, v in zip((old, new), vectors, strict=True)]
    kept = [m for theme in cluster(items) for m in theme.members]
    if case.folded:
        (one,) = kept
        assert one.record.id == new.id and one.condenses == [old.id]  # the newest stays
    else:
        assert sorted(m.record.id for m in kept) == sorted([old.id, new.id])
        assert all(m.condenses == [] for m in kept)
