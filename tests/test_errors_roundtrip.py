"""Every ``NikaError`` subclass lives in ``errors.py`` and survives the RPC round trip.

The client rebuilds a service error by its class name from :mod:`nika_tui.errors`; a subclass
defined elsewhere came back as a plain ``NikaError`` with exit code 1 (``nika purge apply``
without ``--yes`` exited 3 locally and 1 through the service, issue #12).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

import nika_tui
from nika_tui import errors
from nika_tui.domain.protocol import Op
from nika_tui.errors import NikaError

PACKAGE = Path(nika_tui.__file__).parent


def _subclasses() -> list[type[NikaError]]:
    out: list[type[NikaError]] = []
    todo = [NikaError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("nika_tui.") and sub not in out:
                out.append(sub)
                todo.append(sub)
    return sorted(out, key=lambda c: c.__name__)


ERRORS = [NikaError, *_subclasses()]


def test_every_nika_error_subclass_is_defined_in_errors_py() -> None:
    """No class anywhere in the package derives from an error class but in ``errors.py``."""
    error_names = {cls.__name__ for cls in ERRORS}
    outside: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                if bases & error_names:
                    outside.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    assert outside == []
    assert {cls.__module__ for cls in ERRORS} == {"nika_tui.errors"}
    assert {"ConfirmationRequired", "PointNotFound", "EmbedderUnavailable"} <= error_names


def _instance(cls: type[NikaError]) -> NikaError:
    """``cls`` raised as its raisers do (constructors that take more than message and hint)."""
    params = list(inspect.signature(cls.__init__).parameters)[1:]
    if params == ["message", "hint", "kind"]:
        return cls("ProviderError raised", "the hint", kind="quota")  # type: ignore[call-arg]
    if params == ["message", "hint"]:
        return cls(f"{cls.__name__} raised", "the hint")
    if cls is errors.BridgeRefused:
        return errors.BridgeRefused(403, "BridgeRefused raised", "the hint")
    if cls is errors.AnswersInvalid:
        return errors.AnswersInvalid([errors.Problem("tenant_id", "missing")], "answers.yaml")
    if cls is errors.EvalFileError:
        return errors.EvalFileError("eval.jsonl", [(3, "no label")])
    if cls is errors.PreviewOnly:
        return errors.PreviewOnly("retire a memory")
    raise AssertionError(f"add a way to build {cls.__name__} to this test")


@pytest.mark.embedder
@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_error_comes_back_as_the_same_class_with_its_exit_code(
    running_service: Any, make_tenant: Any, cls: type[NikaError]
) -> None:
    """An op of the served loop raises ``cls``; the client raises the same class and fields."""
    make_tenant("acme")  # every op on memory names a configured tenant (decision 243)
    raised = _instance(cls)

    def fail(ctx: object, request: object) -> dict[str, Any]:
        raise raised

    # An op the loop answers (not a read-only one: readers have their own table).
    running_service.service.ops[Op.DEBT_APPLY] = fail
    with pytest.raises(NikaError) as info:
        running_service.client.call(Op.DEBT_APPLY, {"tenant_id": "acme"})
    got = info.value
    assert type(got) is cls
    assert got.exit_code == cls.exit_code
    assert (got.message, got.hint) == (raised.message, raised.hint)
    for name in ("status", "kind"):
        if hasattr(raised, name):
            assert getattr(got, name) == getattr(raised, name)


def test_purge_confirmation_exits_3_through_the_service() -> None:
    """The bug of issue #12 in its own words: the rebuilt error keeps exit code 3."""
    from nika_tui.engine.server.rpc import error_body
    from nika_tui.services.memory_client import error_from_reply

    sent = errors.ConfirmationRequired("purge apply needs a confirmation", "pass --yes")
    got = error_from_reply({"ok": False, **error_body(sent)})
    assert type(got) is errors.ConfirmationRequired and got.exit_code == 3


@pytest.mark.embedder
def test_nika_purge_apply_without_yes_exits_3_through_the_service(
    running_service: Any, make_tenant: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI answered by a running service exits as it does locally (3, not 1)."""
    from nika_tui.cli import main

    make_tenant("acme")
    assert running_service.client.service_alive()  # so `nika purge` goes through the RPC
    assert main(["purge", "apply", "--tenant", "acme"]) == 3
    err = capsys.readouterr().err
    assert "needs a confirmation" in err and "--yes" in err
