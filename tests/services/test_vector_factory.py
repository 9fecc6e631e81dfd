"""open_vector_store: embedded Qdrant Edge by default, a Qdrant server when QDRANT_URL is set."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from nika_tui.errors import StoreUnavailable
from nika_tui.services.vectors import open_vector_store
from nika_tui.services.vectors.edge import EdgeVectorStore
from nika_tui.services.vectors.factory import redact_url
from nika_tui.settings import Settings

# The stand-in server is plain http on 127.0.0.1; qdrant-client rightly warns about the key.
pytestmark = pytest.mark.filterwarnings("ignore:Api key is used with an insecure connection")


def test_default_is_edge_under_the_data_dir(isolated_env: dict[str, str]) -> None:
    store = open_vector_store(Settings.from_env(), 384)
    assert isinstance(store, EdgeVectorStore)
    root = Path(isolated_env["NIKA_OS_DATA_DIR"]) / "qdrant"
    assert store.root == root
    assert root.stat().st_mode & 0o777 == 0o700
    store.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_is_a_clear_error_without_the_password() -> None:
    url = f"http://admin:hunter2@127.0.0.1:{_free_port()}"
    with pytest.raises(StoreUnavailable) as info:
        open_vector_store(
            Settings.from_env({"QDRANT_URL": url}), 384, {"QDRANT_API_KEY": "k-secret"}
        )
    assert "cannot reach Qdrant at http://***@127.0.0.1:" in info.value.message
    assert "hunter2" not in str(info.value) and "k-secret" not in str(info.value)
    assert "QDRANT_URL" in info.value.hint


@pytest.fixture
def qdrant_rest() -> Iterator[list[tuple[str, str]]]:
    """A stand-in Qdrant REST server answering ``GET /collections``, the factory's probe."""
    seen: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("api-key", "")))
            body = {"result": {"collections": []}, "status": "ok", "time": 0.0}
            raw = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen.append(("port", str(server.server_address[1])))
    yield seen
    server.shutdown()
    server.server_close()


def test_qdrant_url_selects_the_client_adapter(qdrant_rest: list[tuple[str, str]]) -> None:
    from nika_tui.services.vectors.client import ClientVectorStore  # qdrant_client: seconds

    port = qdrant_rest.pop(0)[1]
    settings = Settings.from_env({"QDRANT_URL": f"http://127.0.0.1:{port}"})
    store = open_vector_store(settings, 384, {"QDRANT_API_KEY": "k-1"})
    assert isinstance(store, ClientVectorStore)
    assert store.collection("semantic") == "nika_semantic"
    assert ("/collections", "k-1") in qdrant_rest
    store.close()


def test_redact_url_keeps_urls_without_credentials() -> None:
    assert redact_url("http://qdrant:6333") == "http://qdrant:6333"
    assert redact_url("https://u:p@q.example:6333/x") == "https://***@q.example:6333/x"
