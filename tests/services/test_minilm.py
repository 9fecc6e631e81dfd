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


def test_the_numpy_forward_pass_gives_the_same_vectors(
    embedder: SentenceTransformerEmbedder,
) -> None:
    """The service's model until torch has loaded (decision 576): same vectors, same order."""
    from nika_tui.services.minilm_numpy import NumpyMiniLM

    want = np.array(embedder.embed(TEXTS))
    got = np.array(NumpyMiniLM(local_model_dir()).encode(TEXTS, batch_size=64))
    assert got.shape == want.shape
    assert float(np.abs(got - want).max()) < 1e-5


def test_a_fast_start_serves_on_numpy_before_torch_is_imported_then_swaps() -> None:
    """``fast_start``: the first vectors come before torch is even imported; after the swap,
    torch's pass serves and the vectors are the same."""
    code = (
        "import sys, json\n"
        "from nika_tui.services.embeddings import SentenceTransformerEmbedder\n"
        "import threading\n"
        "hold = threading.Event()\n"
        "real_import = __builtins__.__import__\n"
        "def gated(name, *a, **k):\n"  # torch's import waits until the first vector is out
        "    if name == 'torch' and 'torch' not in sys.modules:\n"
        "        hold.wait()\n"
        "    return real_import(name, *a, **k)\n"
        "__builtins__.__import__ = gated\n"
        "e = SentenceTransformerEmbedder(threads=1, fast_start=True)\n"
        "first = e.embed(['the staging server moved'])[0]\n"
        "before = 'torch' in sys.modules\n"
        "hold.set()\n"
        "e.finish_loading()\n"
        "assert e.wait_for_torch(300)\n"
        "after = e.embed(['the staging server moved'])[0]\n"
        "print(json.dumps([before, type(e._model).__name__,\n"
        "                  max(abs(a - b) for a, b in zip(first, after))]))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    before, model, diff = __import__("json").loads(run.stdout.strip().splitlines()[-1])
    assert before is False, "torch was imported before the first vector"
    assert model == "MiniLM"
    assert diff < 1e-5
