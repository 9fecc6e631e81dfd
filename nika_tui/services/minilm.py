"""all-MiniLM-L6-v2's forward pass in plain torch, from the packaged model's own files.

sentence-transformers runs this model as BERT → mean pooling over the attention mask → L2
normalisation. Importing sentence-transformers (and through it transformers) took 6–9 s of the
memory service's start on two cores, against ~2.5 s for torch, tokenizers and safetensors
alone, for six BERT layers that fit in this module (decision 550). The weights, tokenizer and
configuration are the package's files, read as they are; the vectors equal
sentence-transformers' to float rounding (``tests/services/test_minilm.py`` compares them).

Torch is imported when a model is loaded, never by importing this module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BertShape:
    """What ``config.json`` and ``sentence_bert_config.json`` say about the network."""

    layers: int
    heads: int
    hidden: int
    eps: float
    max_tokens: int

    @classmethod
    def read(cls, model_dir: Path) -> BertShape:
        """The shape of the model in ``model_dir``.

        Raises:
            ValueError: not a BERT model with mean pooling (what this module computes).
        """
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        st = json.loads((model_dir / "sentence_bert_config.json").read_text(encoding="utf-8"))
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text("utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise ValueError(f"{model_dir} is not a BERT model with GELU")
        if not pooling.get("pooling_mode_mean_tokens"):
            raise ValueError(f"{model_dir} does not pool by mean")
        return cls(
            layers=int(config["num_hidden_layers"]),
            heads=int(config["num_attention_heads"]),
            hidden=int(config["hidden_size"]),
            eps=float(config["layer_norm_eps"]),
            max_tokens=min(int(st["max_seq_length"]), int(config["max_position_embeddings"])),
        )


class SentenceModel:
    """What both forward passes share: the shape, the tokenizer, batching by length."""

    def __init__(self, model_dir: Path) -> None:
        """Read the shape, tokenizer and weights of ``model_dir`` (:meth:`_load` per backend).

        Raises:
            OSError: a file is missing or unreadable.
            ValueError: the files do not describe a mean-pooled BERT model.
        """
        from tokenizers import Tokenizer

        self.shape = BertShape.read(model_dir)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=self.shape.max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._w: dict[str, Any] = self._load(model_dir / "model.safetensors")

    @property
    def dimension(self) -> int:
        """The vector size (384)."""
        return self.shape.hidden

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        """One unit-norm vector per text, in order.

        Texts are batched by length (as sentence-transformers does), so a batch pads little.
        """
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            vectors = self._batch([texts[i] for i in chunk]).tolist()
            for i, vector in zip(chunk, vectors, strict=True):
                out[i] = vector
        return out

    def _batch(self, texts: list[str]) -> Any:
        """Unit-norm vectors of ``texts`` (one padded batch), as an array with ``tolist``."""
        raise NotImplementedError

    @staticmethod
    def _load(weights: Path) -> dict[str, Any]:
        """The weights of ``weights`` (a safetensors file) as the forward pass's arrays."""
        raise NotImplementedError


class MiniLM(SentenceModel):
    """The sentence model in torch, loaded once; :meth:`encode` gives unit-norm vectors."""

    @staticmethod
    def _load(weights: Path) -> dict[str, Any]:
        from safetensors.torch import load_file

        return load_file(str(weights))

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> list[list[float]]:
        """One unit-norm vector per text, in order (no autograd state kept)."""
        import torch

        with torch.inference_mode():
            return super().encode(texts, batch_size)

    def _batch(self, texts: list[str]) -> Any:
        import torch
        from torch.nn import functional as f

        encoded = self._tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encoded], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in encoded], dtype=torch.long)
        w, shape = self._w, self.shape
        positions = torch.arange(ids.shape[1])
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][positions]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        # Padding keys get the most negative float, as transformers' BERT masks them.
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for n in range(shape.layers):
            p = f"encoder.layer.{n}."
            attended = self._attention(x, bias, p)
            x = self._norm(self._linear(attended, p + "attention.output.dense") + x,
                           p + "attention.output.LayerNorm")  # fmt: skip
            inner = f.gelu(self._linear(x, p + "intermediate.dense"))  # exact (erf) GELU
            x = self._norm(self._linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
        weights = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return f.normalize(pooled, p=2.0, dim=1)

    def _attention(self, x: Any, bias: Any, prefix: str) -> Any:
        from torch.nn import functional as f

        batch, tokens, hidden = x.shape
        heads = self.shape.heads
        size = hidden // heads

        def split(name: str) -> Any:
            y = self._linear(x, prefix + "attention.self." + name)
            return y.view(batch, tokens, heads, size).transpose(1, 2)

        q, k, v = split("query"), split("key"), split("value")
        # softmax(q·kᵀ/√d + bias)·v, fused as transformers' BERT runs it (SDPA).
        context = f.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return context.transpose(1, 2).reshape(batch, tokens, hidden)

    def _linear(self, x: Any, name: str) -> Any:
        from torch.nn import functional as f

        return f.linear(x, self._w[name + ".weight"], self._w[name + ".bias"])

    def _norm(self, x: Any, name: str) -> Any:
        from torch.nn import functional as f

        return f.layer_norm(
            x, (self.shape.hidden,), self._w[name + ".weight"], self._w[name + ".bias"],
            self.shape.eps,
        )  # fmt: skip
