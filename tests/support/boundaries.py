"""Which top-level packages a set of nika modules loads, measured in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "nika_tui"


def modules_under(sub: str) -> list[str]:
    """Every module of ``nika_tui/<sub>`` as a dotted name (packages without ``.__init__``)."""
    return sorted(
        "nika_tui." + ".".join(p.relative_to(PKG).with_suffix("").parts).removesuffix(".__init__")
        for p in (PKG / sub).rglob("*.py")
    )


def loaded_after_import(modules: list[str]) -> set[str]:
    """Top-level package names in ``sys.modules`` after importing ``modules`` in a subprocess."""
    code = (
        "import importlib, json, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted({n.split('.')[0] for n in sys.modules})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return set(json.loads(out.stdout))
