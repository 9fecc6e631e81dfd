"""A yes/no question before an action that is hard to take back (stop a kernel, retire...).

:class:`AskReason` asks the same with a reason box, for decisions whose why is kept.

``AskYesNo(question, detail, yes_label)`` dismisses ``True`` on ``y`` / the yes button, ``False``
on ``n`` / ``escape``: the person always sees what will happen before it does.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label


class AskYesNo(ModalScreen[bool]):
    """A short question with Yes / No."""

    DEFAULT_CSS = """
    AskYesNo { align: center middle; }
    AskYesNo #ask-buttons { height: auto; margin-top: 1; }
    AskYesNo #ask-buttons > Button { margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n", "answer(False)", "No"),
        Binding("escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, question: str, detail: str = "", yes_label: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes_label = yes_label

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(Text(self.question, style="bold"))
            if self.detail:
                yield Label(Text(self.detail))
            with Horizontal(id="ask-buttons"):
                yield Button(f"{self.yes_label} (y)", id="ask-yes", variant="error")
                yield Button("No (n)", id="ask-no")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "ask-yes")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)


class AskReason(ModalScreen[str | None]):
    """A question that also asks why: the reason is kept with the decision (issue 17).

    Dismisses the typed reason (the default when left empty) on ``enter`` or the button,
    ``None`` on ``escape``. The box holds the focus, so letters type the reason and
    never answer the question by accident.
    """

    DEFAULT_CSS = """
    AskReason { align: center middle; }
    AskReason #reason-input { margin-top: 1; }
    AskReason #ask-buttons { height: auto; margin-top: 1; }
    AskReason #ask-buttons > Button { margin-right: 2; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, question: str, detail: str, yes_label: str, default_reason: str) -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes_label = yes_label
        self.default_reason = default_reason
        """What is recorded when the person leaves the box empty."""

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Label(Text(self.question, style="bold"))
            if self.detail:
                yield Label(Text(self.detail))
            yield Label(Text("Why? (kept in the memory's history)", style="dim"))
            yield Input(self.default_reason, placeholder=self.default_reason, id="reason-input")
            with Horizontal(id="ask-buttons"):
                yield Button(f"{self.yes_label} (enter)", id="ask-yes", variant="error")
                yield Button("Cancel (esc)", id="ask-no")

    def on_mount(self) -> None:
        self.query_one("#reason-input", Input).focus()

    def reason(self) -> str:
        """The typed reason, or the default when the box is empty."""
        typed = " ".join(self.query_one("#reason-input", Input).value.split())
        return typed or self.default_reason

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.dismiss(self.reason())

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(self.reason() if event.button.id == "ask-yes" else None)

    def action_cancel(self) -> None:
        """Close without acting."""
        self.dismiss(None)
