"""Contract: the storage helpers' ``where: Roots | None = None`` default (None: the roots of
``os.environ``) serves tests and one-shot scripts only; no module under ``nika_tui/`` calls one
of them without ``where``: it passes the roots of the settings its entry built
(docs/architecture.md, "Settings, and the environment parameters that remain").

A helper is a module-level function, or a class's ``__init__``, with a ``where`` parameter
defaulting to None. A call is matched through the names it is reached by: a bare name defined
or imported in the calling module (``from nika_tui.services.bus import open_bus``), or an
attribute of an imported module (``config_store.load_tenant``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "nika_tui"

Helper = tuple[str, str]
"""``(module, name)``: ``("nika_tui.services.bus", "open_bus")``."""


def module_name(path: Path) -> str:
    """``nika_tui/services/bus.py`` → ``nika_tui.services.bus`` (a package: its name)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _where_slot(args: ast.arguments, skip_self: bool, param: str = "where") -> int | None:
    """The positional index of a ``param=None`` parameter (``-1``: keyword-only); None if none."""
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        if arg.arg == param and isinstance(default, ast.Constant) and default.value is None:
            return index - (1 if skip_self else 0)
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        if arg.arg == param and isinstance(kw_default, ast.Constant) and kw_default.value is None:
            return -1
    return None


def helpers_of(tree: ast.Module, module: str, param: str = "where") -> dict[Helper, int]:
    """The module's helpers with a ``param=None`` default → the slot ``param`` is passed in."""
    out: dict[Helper, int] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            slot = _where_slot(node.args, skip_self=False, param=param)
            if slot is not None:
                out[(module, node.name)] = slot
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    slot = _where_slot(item.args, skip_self=True, param=param)
                    if slot is not None:
                        out[(module, node.name)] = slot
    return out


def _names(tree: ast.Module, module: str) -> tuple[dict[str, Helper], dict[str, str]]:
    """Bare names → what they are; module aliases → the module (imports at any depth)."""
    names: dict[str, Helper] = {}
    modules: dict[str, str] = {}
    for top in tree.body:
        if isinstance(top, ast.FunctionDef | ast.ClassDef):
            names[top.name] = (module, top.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound = alias.asname or alias.name
                names[bound] = (node.module, alias.name)
                modules[bound] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    modules[alias.asname] = alias.name
    return names, modules


def calls_without_where(
    source: str, module: str, helpers: dict[Helper, int], param: str = "where"
) -> list[tuple[int, str]]:
    """``(line, helper)`` of every call in ``source`` to a helper that does not pass ``param``."""
    tree = ast.parse(source)
    names, modules = _names(tree, module)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        target: Helper | None = None
        if isinstance(func, ast.Name):
            target = names.get(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            owner = modules.get(func.value.id)
            target = (owner, func.attr) if owner else None
        if target is None or target not in helpers:
            continue
        slot = helpers[target]
        passed = (
            any(k.arg in (param, None) for k in node.keywords)
            or any(isinstance(a, ast.Starred) for a in node.args)
            or 0 <= slot < len(node.args)
        )
        if not passed:
            found.append((node.lineno, f"{target[0]}.{target[1]}"))
    return found


def _package() -> dict[str, tuple[str, ast.Module]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text()
        out[path.relative_to(ROOT).as_posix()] = (source, ast.parse(source))
    return out


def test_no_module_calls_a_storage_helper_without_its_roots() -> None:
    files = _package()
    helpers: dict[Helper, int] = {}
    for rel, (_, tree) in files.items():
        helpers.update(helpers_of(tree, module_name(ROOT / rel)))
    assert ("nika_tui.services.config_store", "load_tenant") in helpers  # the checker sees them
    offenders = [
        f"{rel}:{line} calls {helper} without where"
        for rel, (source, _) in files.items()
        for line, helper in calls_without_where(source, module_name(ROOT / rel), helpers)
    ]
    assert offenders == [], "pass the roots of the caller's settings:\n" + "\n".join(offenders)


def test_no_module_resolves_a_path_from_the_process_environment_implicitly() -> None:
    """``paths.config_dir()`` and its kin without an environment are the roots of
    ``os.environ``: outside ``paths.py`` each call names the environment it resolves (the hook
    runtime's event, the wizard's); ``roots()`` is the one kept, under ``BUILDERS``' rule."""
    files = _package()
    _, tree = files["nika_tui/paths.py"]
    helpers = {h: s for h, s in helpers_of(tree, "nika_tui.paths", "env").items()
               if not h[1].startswith("_") and h[1] != "roots"}  # fmt: skip
    assert ("nika_tui.paths", "tenant_config_path") in helpers
    offenders = [
        f"{rel}:{line} calls {helper} without env"
        for rel, (text, _) in files.items()
        if rel != "nika_tui/paths.py"
        for line, helper in calls_without_where(text, module_name(ROOT / rel), helpers, "env")
    ]
    assert offenders == [], "use the roots of the caller's settings:\n" + "\n".join(offenders)


HELPERS = {("m", "load"): 1, ("m", "Log"): 1, ("m", "kw"): -1}


class Case(NamedTuple):
    test_id: str
    source: str
    found: list[tuple[int, str]]


CASES = [
    Case("bare_without", "from m import load\nload('t')", [(2, "m.load")]),
    Case("bare_positional", "from m import load\nload('t', roots)", []),
    Case("bare_keyword", "from m import load\nload('t', where=roots)", []),
    Case("module_attribute", "from x import m\nm.load('t')", []),
    Case("module_alias", "import m as mm\nmm.load('t')", [(2, "m.load")]),
    Case("class", "from m import Log\nLog('t')", [(2, "m.Log")]),
    Case("class_with_roots", "from m import Log\nLog('t', where)", []),
    Case("keyword_only", "from m import kw\nkw('t', 'u')", [(2, "m.kw")]),
    Case("spread", "from m import load\nload(*args)", []),
    Case("unrelated_name", "load('t')", []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.test_id for c in CASES])
def test_the_checker_sees_calls_without_where(case: Case) -> None:
    assert calls_without_where(case.source, "caller", HELPERS) == case.found


def test_the_checker_finds_where_defaults_in_functions_and_classes() -> None:
    source = (
        "def f(t, where=None): ...\n"
        "def g(t, *, where=None): ...\n"
        "def h(t, where): ...\n"
        "class C:\n    def __init__(self, t, where=None): ...\n"
    )
    assert helpers_of(ast.parse(source), "m") == {("m", "f"): 1, ("m", "g"): -1, ("m", "C"): 1}
