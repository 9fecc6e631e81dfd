"""A yes/no question before an action that is hard to take back (stop a kernel, retire...).

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
from textual.widgets import Button, Label


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
        super().__init__(id="ask")
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
