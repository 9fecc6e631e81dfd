"""Contract: a ``NIKA_*`` setting is read from an environment only by the settings module and
the few documented readers (docs/architecture.md, "The environment parameters that remain").

Everything else takes the ``Settings`` (or the ``Roots``) its process entry built. A read is a
subscript, ``.get`` / ``.pop`` / ``getenv`` call or ``in`` test whose key is a settings
variable, written as a literal or as a module-level constant holding one. Writing one (a
child's environment: ``out["NIKA_TENANT_ID"] = …``) is not a read. Settings and roots are
built (``Settings.from_env``, ``paths.roots``) only by the entries and the holders listed in
``BUILDERS``.
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


BUILDERS = {
    # Process entries: each builds the settings once, from its own environment.
    "cli/common.py": "entry: `run_handler` / `settings_of`, once per `nika` command",
    "cli/service.py": "entry: `nika serve`, after its --env-file; the log path's roots default",
    "cli/import_cmd.py": "entry: `nika import`, from the environment its discovery reads",
    "hookd/server.py": "entry: the hook daemon",
    "mcp/server.py": "entry: `nika mcp`",
    "engine/builder.py": "entry: the engine context's builders, when the caller passed none",
    "settings.py": "the settings module itself",
    "hooks/context.py": "the hook runtime: each event's own environment holds its roots",
    # A `where: Roots | None = None` default (None: the roots of os.environ).
    "billing/log.py": "a Roots default",
    "billing/prices.py": "a Roots default",
    "demo/__init__.py": "a Roots default",
    "engine/purge.py": "a Roots default",
    "engine/rem/journal.py": "a Roots default",
    "scale/state.py": "a Roots default",
    "services/agent_homes.py": "a Roots default",
    "services/bus.py": "a Roots default",
    "services/config_store.py": "a Roots default",
    "services/hierarchy.py": "a Roots default",
    "services/hook_spool.py": "a Roots default",
    "services/mcp_register.py": "a Roots default",
    "services/redis_server.py": "a Roots default",
    "services/relevance_log.py": "a Roots default",
    "services/ui_settings.py": "a Roots default",
    "services/vectors/factory.py": "a Roots default",
    "tuning/relevance.py": "a Roots default",
}
"""Module → why it builds ``Settings.from_env(…)`` or ``paths.roots(…)`` itself. Exactly the
modules that do: a holder converted leaves the list, a new builder must join it."""


def settings_builds(source: str) -> list[tuple[int, str]]:
    """``(line, call)`` of every ``Settings.from_env(…)`` and ``roots(…)`` call in ``source``."""
    builds: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        owner = (
            func.value.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else None
        )
        if isinstance(func, ast.Attribute) and func.attr == "from_env" and owner == "Settings":
            builds.append((node.lineno, "Settings.from_env"))
        elif (isinstance(func, ast.Name) and func.id == "roots") or (
            isinstance(func, ast.Attribute) and func.attr == "roots" and owner == "paths"
        ):
            builds.append((node.lineno, "roots"))
    return builds


def test_settings_and_roots_are_built_only_by_the_listed_modules() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for line, call in settings_builds(path.read_text()):
            found.setdefault(module, []).append(f"nika_tui/{module}:{line} calls {call}")
    new = [where for module, lines in found.items() if module not in BUILDERS for where in lines]
    assert new == [], "take the caller's Settings / Roots instead:\n" + "\n".join(new)
    gone = sorted(set(BUILDERS) - set(found))
    assert gone == [], f"these no longer build settings or roots: drop them from BUILDERS {gone}"


def test_the_holders_not_converted_are_listed_in_the_architecture_page() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    holders = [m for m, why in BUILDERS.items() if why.startswith("not converted")]
    assert [m for m in holders if f"`{m}`" not in page] == []


@pytest.mark.parametrize(
    ("source", "builds"),
    [
        ("s = Settings.from_env(env)", [(1, "Settings.from_env")]),
        ("r = where or roots()", [(1, "roots")]),
        ("r = paths.roots(env)", [(1, "roots")]),
        ("r = settings.roots", []),
        ("r = ctx.settings.roots.data", []),
    ],
    ids=["from_env", "roots", "paths_roots", "attribute", "attribute_chain"],
)
def test_the_build_checker_sees_calls_not_attributes(
    source: str, builds: list[tuple[int, str]]
) -> None:
    assert settings_builds(source) == builds


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
