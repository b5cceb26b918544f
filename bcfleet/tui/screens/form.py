"""A small form of named fields (a new instance, a new reservation): Enter goes to the next field
and, on the last, submits; Esc cancels. Dismissed with the values typed, or None."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    value: str = ""
    placeholder: str = ""


class FormScreen(ModalScreen[dict[str, str] | None]):
    """The fields in order, each an Input; the values come back by name, stripped."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    FormScreen { align: center middle; }
    FormScreen #dialog { width: 64; max-height: 100%; padding: 0 1; }
    FormScreen .field { height: 1; margin-top: 1; }
    FormScreen .field Label { width: 20; }
    FormScreen .field Input { width: 1fr; }
    """

    def __init__(self, title: str, fields: Sequence[Field]) -> None:
        super().__init__()
        self.title_text, self.fields = title, tuple(fields)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(self.title_text, id="question")
            for field in self.fields:  # one line each: 80×24 holds six fields and the hint
                with Horizontal(classes="field"):
                    yield Label(field.label)
                    yield Input(
                        field.value,
                        placeholder=field.placeholder,
                        id=f"field-{field.name}",
                        compact=True,
                    )
            yield Static("Enter: next field, and creates on the last. Esc cancels.", classes="hint")

    def on_mount(self) -> None:
        self.query(Input).first().focus()

    def values(self) -> dict[str, str]:
        return {
            f.name: self.query_one(f"#field-{f.name}", Input).value.strip() for f in self.fields
        }

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        inputs = list(self.query(Input))
        index = inputs.index(event.input)
        if index + 1 < len(inputs):
            inputs[index + 1].focus()
        else:
            self.dismiss(self.values())

    def action_cancel(self) -> None:
        self.dismiss(None)
