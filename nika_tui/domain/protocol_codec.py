"""How a request or reply model of the RPC protocol becomes a JSON body and back.

A model is a frozen dataclass whose field names are the body's keys, so a key is written once,
in the model, for the client that builds the body and the server that reads it. ``from_body``
checks every field against its annotation and raises :class:`~nika_tui.errors.ValidationFailed`
with a one-line hint naming the op and the key; ``to_body`` leaves out fields that are ``None``
(on this wire a null and a missing key have always meant the same: "not given").

Unknown keys are ignored rather than refused: an older or newer client may send one more key
(``tenant_calls`` adds ``tenant_id`` to every body), and the service must keep answering it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, Self, TypeVar

from nika_tui.domain.protocol import Op
from nika_tui.errors import ValidationFailed


def invalid(where: str, key: str, want: str) -> ValidationFailed:
    """The error for key ``key`` of a body (``where``: "recall request") that is not ``want``."""
    return ValidationFailed(f"bad {where}: {key!r} must be {want}", f"send {key} as {want}")


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    # Resolved once per model: the annotations are strings (``from __future__``).
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _decode(where: str, key: str, kind: Any, value: Any) -> Any:
    """``value`` checked against the annotation ``kind`` (the shapes the protocol uses)."""
    origin = typing.get_origin(kind)
    if origin is types.UnionType or origin is typing.Union:
        (inner,) = [a for a in typing.get_args(kind) if a is not type(None)]
        return _decode(where, key, inner, value)
    if kind is Any:
        return value
    if kind is bool:
        if not isinstance(value, bool):
            raise invalid(where, key, "true or false")
        return value
    if kind is int:
        # A bool is an int to Python, never a count to a person.
        if isinstance(value, bool) or not isinstance(value, int):
            raise invalid(where, key, "an integer")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise invalid(where, key, "a number")
        return float(value)
    if kind is str:
        if not isinstance(value, str):
            raise invalid(where, key, "a string")
        return value
    if origin is list:
        (item,) = typing.get_args(kind)
        if not isinstance(value, list):
            raise invalid(where, key, "a list")
        return [_decode(where, f"{key}[]", item, v) for v in value]
    if origin is dict or kind is dict:
        if not isinstance(value, dict):
            raise invalid(where, key, "a JSON object")
        return value
    raise TypeError(f"the protocol has no codec for {kind!r} ({where}: {key})")  # a model's bug


def _required(field: dataclasses.Field[Any]) -> bool:
    return field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING


class Message:
    """Base of every request and reply model (subclasses are frozen dataclasses).

    Attributes:
        OP: the operation this model belongs to.
    """

    OP: ClassVar[Op]
    ROLE: ClassVar[str] = "reply"

    def to_body(self) -> dict[str, Any]:
        """The JSON object sent on the wire (fields that are ``None`` left out)."""
        return {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if getattr(self, f.name) is not None
        }

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """The model of a received body.

        Raises:
            ValidationFailed: the body is not an object, a required key is missing or empty,
                or a value has the wrong type (the message names the op and the key).
        """
        if not isinstance(body, Mapping):
            raise ValidationFailed(
                f"bad {cls.OP} {cls.ROLE}: the body must be a JSON object", "send a JSON object"
            )
        hints = _hints(cls)
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            value = body.get(f.name)
            if value is None or (value == "" and _required(f)):
                if _required(f):
                    raise ValidationFailed(
                        f"missing {f.name!r} in the {cls.OP} {cls.ROLE}",
                        "pass it (a non-empty string)" if hints[f.name] is str else "pass it",
                    )
                continue
            values[f.name] = _decode(f"{cls.OP} {cls.ROLE}", f.name, hints[f.name], value)
        return cls(**values)


@dataclasses.dataclass(frozen=True)
class Report(Message):
    """A reply whose keys are those of an engine report (``to_dict()`` of a plan, a run…).

    Its shape belongs to the report's own type, so the model carries it whole: the body is the
    report itself, not a key holding it.
    """

    report: dict[str, Any]

    def to_body(self) -> dict[str, Any]:
        """The report, as the body."""
        return dict(self.report)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Self:
        """The report of a received body.

        Raises:
            ValidationFailed: the body is not a JSON object.
        """
        if not isinstance(body, Mapping):
            raise ValidationFailed(
                f"bad {cls.OP} reply: the body must be a JSON object",
                "upgrade the caller or the service (`nika down && nika up`)",
            )
        return cls(report=dict(body))


R = TypeVar("R", bound=Message)


class Request(Message, Generic[R]):
    """A request model; ``REPLY`` is the model of its op's reply."""

    REPLY: ClassVar[type[Message]]
    ROLE = "request"

    def reply(self, body: Mapping[str, Any]) -> R:
        """The reply model of ``body``, the result the service sent for this request."""
        return typing.cast(R, self.REPLY.from_body(body))
