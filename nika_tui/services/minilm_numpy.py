"""all-MiniLM-L6-v2's forward pass in numpy: the memory service's model while torch loads.

Importing torch takes ~2 s of a service start on two cores, and loading the model another ~1 s;
numpy, safetensors and tokenizers import in ~0.2 s. The service therefore starts on this
module's forward pass and swaps to :class:`~nika_tui.services.minilm.MiniLM` (torch, 2-3x
faster per batch) once torch has loaded beside it (decision 576): reads are answered seconds
earlier after a restart. Same weights, same tokenizer, same arithmetic in float32, so the same
vectors to float rounding (``tests/services/test_minilm.py`` holds both against
sentence-transformers); GELU's erf is a polynomial approximation whose error (< 1.5e-7) stays
far under that test's bar.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from nika_tui.services.minilm import SentenceModel


def _erf(x: Any) -> Any:
    """erf by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), in float64."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                + t * 1.061405429))))  # fmt: skip
    return sign * (1.0 - poly * np.exp(-a * a))


class NumpyMiniLM(SentenceModel):
    """The sentence model in numpy; :meth:`encode` gives unit-norm vectors."""

    @staticmethod
    def _load(weights: Path) -> dict[str, Any]:
        from safetensors.numpy import load_file

        return dict(load_file(str(weights)))

    def _batch(self, texts: list[str]) -> Any:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
        w, shape = self._w, self.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(ids.shape[1])]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :]) * np.finfo(np.float32).min
        for n in range(shape.layers):
            p = f"encoder.layer.{n}."
            attended = self._attention(x, bias, p)
            x = self._norm(self._linear(attended, p + "attention.output.dense") + x,
                           p + "attention.output.LayerNorm")  # fmt: skip
            inner = self._linear(x, p + "intermediate.dense")
            inner = (0.5 * inner * (1.0 + _erf(inner / np.sqrt(2.0)))).astype(np.float32)
            x = self._norm(self._linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
        weights = mask[:, :, None]
        pooled = (x * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled / norms

    def _attention(self, x: Any, bias: Any, prefix: str) -> Any:
        batch, tokens, hidden = x.shape
        heads = self.shape.heads
        size = hidden // heads

        def split(name: str) -> Any:
            y = self._linear(x, prefix + "attention.self." + name)
            return y.reshape(batch, tokens, heads, size).transpose(0, 2, 1, 3)

        q, k, v = split("query"), split("key"), split("value")
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores = scores / scores.sum(-1, keepdims=True)
        return (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, hidden)

    def _linear(self, x: Any, name: str) -> Any:
        return x @ self._w[name + ".weight"].T + self._w[name + ".bias"]

    def _norm(self, x: Any, name: str) -> Any:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        y = (x - mean) / np.sqrt(var + np.float32(self.shape.eps))
        return y * self._w[name + ".weight"] + self._w[name + ".bias"]
