"""FleetApp, the `fleet tui` dashboard: one mode per view, a refresh timer, keys and the palette."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen

from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.help import HelpScreen, keys_table, views_table
from bcfleet.tui.source import FleetSource
from bcfleet.tui.views import VIEWS, find_view


class FleetApp(App[None]):
    """The dashboard over a FleetSource; views switch with `:name`, number keys or the palette."""

    CSS_PATH = Path(__file__).with_name("fleet.tcss")
    TITLE = "bcfleet"
    MODES: ClassVar = {view.name: view.screen for view in VIEWS}
    BINDINGS: ClassVar[list[BindingType]] = [
        *(Binding(view.key, f"view('{view.name}')", view.title, show=False) for view in VIEWS),
        Binding("question_mark", "keys", "Keys"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        source: FleetSource,
        *,
        read_only: bool = False,
        refresh_seconds: float = 2.0,
        tenant: str | None = None,
        start: str = "hosts",
        cursor_blink: bool = True,
    ) -> None:
        super().__init__()
        self.cursor_blink = cursor_blink
        self.source = source
        self.read_only = read_only
        self.refresh_seconds = refresh_seconds
        self.tenant = tenant
        self.start = start

    def on_mount(self) -> None:
        self.switch_mode(self.start)
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self._tick)

    def _tick(self) -> None:
        screen = self.screen
        if isinstance(screen, ViewScreen):
            screen.tick()

    def view_names(self) -> list[str]:
        return [view.name for view in VIEWS] + ["quit"]

    def open_view(self, name: str) -> bool:
        """Switch to the view a `:` command names; False (and a notice) when none matches."""
        view = find_view(name)
        if view is None:
            self.notify(f"No view named {name!r}. Views: {', '.join(self.view_names()[:-1])}.")
            return False
        self.switch_mode(view.name)
        return True

    def action_view(self, name: str) -> None:
        self.switch_mode(name)

    def action_keys(self) -> None:
        screen = self.screen
        if not isinstance(screen, ViewScreen):
            return
        title = " › ".join(screen.crumbs())
        self.push_screen(HelpScreen(title, screen.ABOUT, keys_table(screen), views_table(VIEWS)))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for view in VIEWS:
            yield SystemCommand(
                f"View: {view.title}",
                f"{view.key} or :{view.name}",
                lambda name=view.name: self.switch_mode(name),
            )
        if isinstance(screen, ViewScreen):
            yield from screen.commands()
            yield SystemCommand("Keys of this view", "?", self.action_keys)
        yield SystemCommand("Quit", "q", self.exit)
