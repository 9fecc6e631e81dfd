"""The plain-torch MiniLM gives sentence-transformers' vectors (decision 550).

The reference is sentence-transformers itself, loading the same packaged model: every text —
English, French, punctuation, an empty string, one past the 256-token cut, a batch that pads —
must come out within float rounding of it, in the caller's order.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from nika_tui.services.embeddings import SentenceTransformerEmbedder, local_model_dir

pytestmark = [pytest.mark.embedder, pytest.mark.slow]

TEXTS = [
    "The staging server moved to 10.0.9.30.",
    "Le serveur de staging est désormais en 10.0.9.30 (migration de mardi).",
    "What is the IP address of the staging server now?",
    "",
    "x",
    "deploy: orders-svc prod port 8080 -> 9090 🚀",
    " ".join(f"token{i}" for i in range(600)),  # past max_seq_length: truncated the same way
    "Ça marche : « guillemets », naïve café, straße, 東京.",
] + [f"fact number {i} about the cache TTL of service {chr(65 + i % 26)}" for i in range(70)]


def test_vectors_equal_sentence_transformers_to_float_rounding(
    embedder: SentenceTransformerEmbedder,
) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(local_model_dir()), device="cpu", local_files_only=True)
    want = reference.encode(TEXTS, batch_size=64, normalize_embeddings=True)
    got = np.array(embedder.embed(TEXTS))
    assert got.shape == want.shape == (len(TEXTS), 384)
    assert float(np.abs(got - want).max()) < 1e-5
    alone = np.array([embedder.embed([t])[0] for t in TEXTS[:8]])  # no padding: same vectors
    assert float(np.abs(alone - got[:8]).max()) < 1e-5


def test_loading_the_model_imports_no_sentence_transformers_or_transformers() -> None:
    code = (
        "import sys\n"
        "from nika_tui.services.embeddings import SentenceTransformerEmbedder\n"
        "SentenceTransformerEmbedder().embed(['hello'])\n"
        "print(sorted(m for m in ('sentence_transformers', 'transformers') if m in sys.modules))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    assert run.stdout.strip() == "[]", run.stderr[-2000:]
