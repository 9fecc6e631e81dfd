"""Contract: a ``NIKA_*`` setting is read from an environment only by the settings module and
the few documented readers (docs/architecture.md, "The environment parameters that remain").

Everything else takes the ``Settings`` (or the ``Roots``) its process entry built. A read is a
subscript, ``.get`` / ``.pop`` / ``getenv`` call or ``in`` test whose key is a settings
variable, written as a literal or as a module-level constant holding one. Writing one (a
child's environment: ``out["NIKA_TENANT_ID"] = …``) is not a read.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

from nika_tui.settings import Settings, env_var

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nika_tui"
VARIABLES = frozenset(env_var(name) for name in Settings.model_fields)

ALLOWED = {
    "settings.py": "the settings module itself",
    "paths.py": "the roots' rules (NIKA_OS_*_DIR, NIKA_TMUX_SOCKET beside XDG_*), stdlib only",
    "hookd/client.py": "the hook client's fast path: no pydantic before a hook is handed on",
    "hooks/dispatch.py": "the hook runtime: NIKA_TENANT_ID of each event's environment",
    "hooks/context.py": "the hook runtime: NIKA_TMUX_SESSION of each event's environment",
}
"""Module (under ``nika_tui/``) → why it may read a setting from an environment."""


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "NIKA_…"`` assignments."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for target in targets:
                    if isinstance(target, ast.Name):
                        out[target.id] = value.value
    return out


def settings_reads(source: str) -> list[tuple[int, str]]:
    """``(line, variable)`` of every read of a settings variable in ``source``."""
    tree = ast.parse(source)
    constants = _constants(tree)

    def key(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            name = node.value
        elif isinstance(node, ast.Name) and node.id in constants:
            name = constants[node.id]
        else:
            return None
        return name if name in VARIABLES else None

    reads: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        found: str | None = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            found = key(node.slice)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("get", "pop", "getenv", "setdefault"):
                found = key(node.args[0])
        elif isinstance(node, ast.Compare) and any(
            isinstance(op, ast.In | ast.NotIn) for op in node.ops
        ):
            found = key(node.left)
        if found:
            reads.append((getattr(node, "lineno", 0), found))
    return reads


def test_no_module_reads_a_setting_from_the_environment_but_the_documented_ones() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module in ALLOWED:
            continue
        for line, variable in settings_reads(path.read_text()):
            offenders.append(f"nika_tui/{module}:{line} reads {variable}")
    assert offenders == [], "take the entry's Settings instead:\n" + "\n".join(offenders)


def test_the_documented_readers_are_listed_in_the_architecture_page() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    assert [m for m in ALLOWED if m != "settings.py" and f"`{m}`" not in page] == []


class Case(NamedTuple):
    test_id: str
    source: str
    reads: list[tuple[int, str]]


CASES = [
    Case("subscript", 'x = env["NIKA_TENANT_ID"]', [(1, "NIKA_TENANT_ID")]),
    Case("get", 'x = os.environ.get("NIKA_HOOKD", "1")', [(1, "NIKA_HOOKD")]),
    Case("getenv", 'x = os.getenv("NIKA_OS_DATA_DIR")', [(1, "NIKA_OS_DATA_DIR")]),
    Case("in", 'x = "NIKA_OPERATOR" in env', [(1, "NIKA_OPERATOR")]),
    Case("constant", 'VAR = "NIKA_TENANT_ID"\nx = env.get(VAR)', [(2, "NIKA_TENANT_ID")]),
    Case("write_is_not_a_read", 'out["NIKA_TENANT_ID"] = tenant', []),
    Case("not_a_setting", 'x = data.get("NIKA_META")', []),
    Case("secret_is_not_a_setting", 'x = env.get("NIKA_REDIS_PASSWORD")', []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_the_checker_sees_every_form_of_read(case: Case) -> None:
    assert settings_reads(case.source) == case.reads
