"""A thin typed wrapper over questionary, with injectable prompt_toolkit input and output.

Every prompt uses ``unsafe_ask()`` so that Ctrl-C raises :class:`KeyboardInterrupt` (the CLI
turns it into exit code 130 with nothing written) instead of questionary's silent ``None``.
Tests pass a ``create_pipe_input()`` and a ``DummyOutput()`` and drive the real prompts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

#: A validator returns ``None`` when the answer is fine, else the reason shown inline.
Validator = Callable[[str], str | None]


@functools.cache
def _style() -> Any:
    """The prompts' colours. questionary (and prompt_toolkit under it) is imported at the first
    prompt, not with this module: importing the wizard (its tests' collection) stays light."""
    import questionary

    return questionary.Style(
        [
            ("qmark", "fg:#5f87ff bold"),
            ("question", "bold"),
            ("answer", "fg:#5fd787 bold"),
            ("pointer", "fg:#5f87ff bold"),
            ("highlighted", "fg:#5f87ff bold"),
            ("instruction", "fg:#808080 italic"),
        ]
    )


def _adapt(validate: Validator | None) -> Callable[[str], bool | str] | None:
    if validate is None:
        return None

    def check(value: str) -> bool | str:
        reason = validate(value)
        return True if reason is None else reason

    return check


class Prompter:
    """Ask questions on a terminal (or on injected prompt_toolkit input/output).

    Args:
        input: A prompt_toolkit ``Input`` (tests: ``create_pipe_input()``), default the TTY.
        output: A prompt_toolkit ``Output`` (tests: ``DummyOutput()``), default the TTY.
    """

    def __init__(self, input: Any = None, output: Any = None) -> None:
        self._io: dict[str, Any] = {}
        if input is not None:
            self._io["input"] = input
        if output is not None:
            self._io["output"] = output

    def text(
        self,
        message: str,
        *,
        default: str = "",
        validate: Validator | None = None,
        instruction: str | None = None,
    ) -> str:
        """A line of text, validated inline (the reason shows under the prompt)."""
        import questionary

        answer = questionary.text(
            message,
            default=default,
            validate=_adapt(validate),
            instruction=instruction,
            style=_style(),
            **self._io,
        ).unsafe_ask()
        return str(answer).strip()

    def password(self, message: str, *, validate: Validator | None = None) -> str:
        """A secret: echoed as ``*``, validated inline, never shown back."""
        import questionary

        answer = questionary.password(
            message, validate=_adapt(validate), style=_style(), **self._io
        ).unsafe_ask()
        return str(answer).strip()

    def select(
        self,
        message: str,
        choices: Sequence[tuple[str, T]],
        *,
        default: T | None = None,
        instruction: str | None = None,
        disabled: Mapping[T, str] | None = None,
    ) -> T:
        """One of ``choices`` (label, value); digits jump to a choice, Enter accepts.

        A value in ``disabled`` is shown with its reason and cannot be picked. Each choice keeps
        the digit of its place, so a disabled one does not shift the digits of those after it.
        """
        import questionary

        off = disabled or {}
        shortcuts = len(choices) <= 9
        items = [
            questionary.Choice(
                title=label,
                value=value,
                disabled=off.get(value),
                shortcut_key=str(i + 1) if shortcuts else None,
            )
            for i, (label, value) in enumerate(choices)
        ]
        start = next((c for c in items if c.value == default and not c.disabled), None)
        answer = questionary.select(
            message,
            choices=items,
            default=start,
            use_shortcuts=shortcuts,
            instruction=instruction,
            style=_style(),
            **self._io,
        ).unsafe_ask()
        result: T = answer
        return result

    def confirm(self, message: str, *, default: bool = True) -> bool:
        """Yes / no: ``y`` or ``n`` then Enter (Enter alone takes the default).

        Not questionary's ``auto_enter``: with it ``y`` answered at once, so the Enter a person
        types after it by habit answered the next question (issue 17).
        """
        import questionary

        return bool(
            questionary.confirm(
                message, default=default, auto_enter=False, style=_style(), **self._io
            ).unsafe_ask()
        )

    def checkbox(
        self,
        message: str,
        choices: Sequence[tuple[str, T, bool]],
        *,
        instruction: str | None = None,
    ) -> list[T]:
        """Any number of ``choices`` (label, value, checked); space toggles, Enter accepts."""
        import questionary

        items = [
            questionary.Choice(title=label, value=value, checked=on) for label, value, on in choices
        ]
        answer = questionary.checkbox(
            message, choices=items, instruction=instruction, style=_style(), **self._io
        ).unsafe_ask()
        return list(answer)
