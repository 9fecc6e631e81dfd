"""A stand-in ``claude`` / ``codex`` executable that speaks each CLI's real output format.

Claude Code's ``--output-format json`` result envelope; Codex's final message on stdout, its
progress on stderr. It reads its whole stdin, records argv + stdin to ``NIKA_STANDIN_RECORD``,
then answers per ``NIKA_STANDIN_MODE`` (``ok``, ``garbage``, ``sleep``, ``exit``, ``error``,
``bad-json``).
"""

from __future__ import annotations

import sys
from pathlib import Path

# The stand-in reads its whole stdin, records argv + stdin, then answers per NIKA_STANDIN_MODE.
STANDIN = r"""#!{python}
import json, os, sys, time
flavor = {flavor!r}
prompt = sys.stdin.read()
record = os.environ.get("NIKA_STANDIN_RECORD")
if record:
    with open(record, "w", encoding="utf-8") as fh:
        json.dump({{"argv": sys.argv, "stdin": prompt}}, fh)
mode = os.environ.get("NIKA_STANDIN_MODE", "ok")
answer = "REPLACE\nthe staging host moved" if "moved" in prompt else "KEEP\nboth hold"
if mode == "garbage":
    answer = "I would rather not say."
if mode == "hang":
    time.sleep(30)
if mode == "exit":
    print("auth expired: run claude login", file=sys.stderr)
    sys.exit(3)
if flavor == "claude":
    envelope = {{
        "type": "result",
        "subtype": "error_max_turns" if mode == "error" else "success",
        "is_error": mode == "error",
        "duration_ms": 1234,
        "num_turns": 1,
        "result": answer,
        "session_id": "00000000-0000-0000-0000-000000000000",
        "total_cost_usd": 0.001,
        "usage": {{"input_tokens": 10, "output_tokens": 5}},
    }}
    print("not json at all" if mode == "bad-json" else json.dumps(envelope))
else:
    print("[codex] thinking...", file=sys.stderr)
    print(answer)
"""


def install_standin(bin_dir: Path, flavor: str) -> Path:
    """Write the stand-in as ``bin_dir/flavor`` (executable) and return its path."""
    exe = bin_dir / flavor
    exe.write_text(STANDIN.format(python=sys.executable, flavor=flavor), encoding="utf-8")
    exe.chmod(0o755)
    return exe
