"""The child process of :class:`~nika_tui.services.embed_process.ProcessEmbedder`.

``python -m nika_tui.services.embed_worker --threads N``: loads the local model (torch), says
``R`` + its dimension, then embeds each JSON list of texts read on stdin and writes the vectors
(float64, ``V``) or a one-line error (``E``) on stdout, until stdin ends: the service closed
it, or died. Frames: :mod:`nika_tui.services.embed_process`.
"""

from __future__ import annotations

import argparse
import json
import signal
import struct
import sys

from nika_tui.errors import NikaError
from nika_tui.services.embed_process import read_frame, write_frame


def main(argv: list[str] | None = None) -> int:
    """Serve embeddings on stdin / stdout; 0 at end of input, 1 if the model cannot load."""
    parser = argparse.ArgumentParser(prog="nika-embed-worker")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    # The service stops this process by closing its stdin; a terminal's Ctrl-C is not ours.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    src, out = sys.stdin.buffer, sys.stdout.buffer
    from nika_tui.services.embeddings import SentenceTransformerEmbedder

    try:
        model = SentenceTransformerEmbedder(threads=args.threads)
    except NikaError as exc:
        write_frame(out, b"E" + exc.message.encode("utf-8"))
        return 1
    write_frame(out, b"R" + json.dumps({"dimension": model.dimension, "name": model.name}).encode())
    while True:
        try:
            frame = read_frame(src)
        except EOFError:
            return 0
        if frame is None:
            return 0
        try:
            texts = json.loads(frame)
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValueError("a request is a JSON list of strings")
            vectors = model.embed(texts)
        except Exception as exc:  # noqa: BLE001 - one bad batch is answered, not fatal
            write_frame(out, b"E" + f"{type(exc).__name__}: {exc}".encode())
            continue
        flat = [x for v in vectors for x in v]
        write_frame(out, b"V" + struct.pack(f"<{len(flat)}d", *flat))


if __name__ == "__main__":
    sys.exit(main())
