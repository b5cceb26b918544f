"""FleetApp, the `fleet tui` dashboard: one mode per view, a refresh timer, keys and the palette."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from textual import events, work
from textual.app import App, ScreenStackError, SystemCommand
from textual.binding import Binding, BindingType
from textual.filter import LineFilter, Monochrome
from textual.screen import Screen

from bcfleet.tui.contrast import ReadableText
from bcfleet.tui.history import History, Place
from bcfleet.tui.key_order import KeyOrder
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.help import HelpScreen, keys_table, views_table
from bcfleet.tui.source import FleetSource
from bcfleet.tui.views import VIEWS, find_view
from bcfleet.tui.widgets.bars import acting_as
from bcfleet.tui.widgets.prompt import Prompt

QUIT = "Quit"


def freeze_heap() -> None:
    """Collect, then move every object that survived out of the collector's sight (gc.freeze).

    A full collection walks every tracked object. The dashboard's process holds some 140,000
    that live as long as it does (modules, the fleet's table mappings, Textual's widgets),
    and 5,000 rows of hosts add as many again: each full collection took over 100 ms, and
    refreshing 5,000 hosts set one off about every other refresh. Frozen, a full collection
    walks only what changed since: a few milliseconds.
    """
    gc.collect()
    gc.freeze()


class FleetApp(App[None]):
    """The dashboard over a FleetSource; views switch with `:name`, number keys or the palette."""

    CSS_PATH = Path(__file__).with_name("fleet.tcss")
    TITLE = "bcfleet"
    MODES: ClassVar = {view.name: view.screen for view in VIEWS}
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(view.key, f"view('{view.name}')", view.title, show=False)
            for view in VIEWS
            if view.key
        ),
        Binding("question_mark", "keys", "Keys"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", show=False, priority=True),  # the keys panel lists it
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
        freeze_heap: bool = False,
    ) -> None:
        super().__init__()
        self.cursor_blink = cursor_blink
        self.source = source
        self.read_only = read_only
        self.refresh_seconds = refresh_seconds
        self.tenant = tenant
        self.start = start
        self.freeze_heap = freeze_heap
        """Keep long-lived objects out of later garbage collections (`fleet tui` sets it)."""
        self._frozen_after_load = False
        self._readable = ReadableText(monochrome=self.no_color)
        self.opened: weakref.WeakSet[ViewScreen] = weakref.WeakSet()
        """Every view shown so far (each mode keeps its own), asked for unsaved edits on quit."""
        self.keys = KeyOrder(self, super().on_event)
        self.history = History()
        """The places visited: `[` and `]` walk it (history.py)."""
        self.identity: str | None = None
        """Whom the console acts as, in the header's words (None until the source said)."""

    async def on_event(self, event: events.Event) -> None:
        """Each key as it is read goes through KeyOrder (key_order.py); Ctrl+C quits at once."""
        if isinstance(event, events.Key) and not event.is_forwarded and event.key != "ctrl+c":
            await self.keys.read(event)
            return
        await super().on_event(event)

    async def on_prompt_closed(self, _message: Prompt.Closed) -> None:
        await self.keys.resume()

    def on_key(self, event: events.Key) -> None:
        """A key back from the widgets, about to run a binding: one typed before the confirm on
        top appeared never answers it."""
        try:
            screen = self.screen
        except ScreenStackError:  # exiting
            return
        if isinstance(screen, Confirm) and screen.typed_before(event):
            event.stop()
            event.prevent_default()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's filters, then every text at least 4.5:1 on its background (contrast.py);
        under NO_COLOR that filter draws in greys itself, in place of Textual's Monochrome."""
        kept = [f for f in super().get_line_filters() if not isinstance(f, Monochrome)]
        return [*kept, self._readable]

    def on_mount(self) -> None:
        if self.freeze_heap:
            freeze_heap()  # the modules, the fleet's mappings, the app: they live as long as we do
        self.switch_mode(self.start)
        self.history.visit(Place(self.start))
        self._learn_identity()
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self._tick)

    def first_load_shown(self) -> None:
        """A view has shown its first data: freeze what the dashboard holds, once, after the paint.

        Its widgets and most of the first 5,000 rows stay for the session; rows that change
        later are still freed (rows hold no reference cycles), only no collection walks them.
        """
        if self.freeze_heap and not self._frozen_after_load:
            self._frozen_after_load = True
            self.call_after_refresh(freeze_heap)

    @work(thread=True, group="identity", exclusive=True, exit_on_error=False)
    def _learn_identity(self) -> None:
        """Ask the source whom the console acts as (once; again on a tick until it answers)."""
        try:
            said = acting_as(self.source.whoami())
        except Exception:  # noqa: BLE001 - the header says it once the source answers
            return
        if self.is_running:
            self.call_from_thread(self._know_identity, said)

    def _know_identity(self, said: str) -> None:
        self.identity = said
        for screen in self.screen_stack:
            if isinstance(screen, ViewScreen) and screen.is_mounted:
                screen.update_title()

    def _tick(self) -> None:
        try:
            screen = self.screen
        except ScreenStackError:  # exiting, or between modes: nothing on screen to refresh
            return
        if isinstance(screen, ViewScreen):
            screen.tick()
            if self.identity is None:  # the source had not answered yet (a server down)
                self._learn_identity()

    def view_names(self) -> list[str]:
        return [view.name for view in VIEWS] + ["quit"]

    def open_view(self, name: str) -> bool:
        """Switch to the view a `:` command names; False (and a notice) when none matches."""
        view = find_view(name)
        if view is None:
            self.notify(f"No view named {name!r}. Views: {', '.join(self.view_names()[:-1])}.")
            return False
        self.show_view(view.name)
        return True

    def action_view(self, name: str) -> None:
        self.show_view(name)

    def show_view(self, name: str) -> None:
        """Switch to a view's list itself, leaving any drill-down that was open over it.

        The view left may ask first (the Compute tab with unsaved edits).
        """
        self.go(Place(name), keep_filter=True)

    # -- drill-downs and the history (history.py) -----------------------------------------------

    def drill(self, view: str, filter_text: str) -> None:
        """Enter on a row that leads to another view: that view, filtered to the row's objects."""
        self.go(Place(view, filter_text))

    def open_host(self, host_id: str, name: str) -> None:
        """Enter on a host (or on what sits on one): the host's page over the current view."""
        base = self._base_view()
        here = self.current_mode
        self.go(Place(here, base.filter_now() if base else "", (host_id, name)))

    def go(self, place: Place, *, keep_filter: bool = False, step: int = 0) -> None:
        """Show a place: its view (the one left may ask first), its filter, its host page.

        keep_filter: the view keeps the filter it has (a view switched to by name); step: the
        place is `step` places back or forward in the history, not a new one."""

        def arrive() -> None:
            base = self._base_view()
            if base is not None:
                self.history.note_filter(base.filter_now())
            if step:
                self.history.step(step)
            self._switch_to(place.view)
            view = self._base_view()
            reached = place
            if view is not None and keep_filter:
                reached = Place(place.view, view.filter_now(), place.host)
            elif view is not None:
                view.restore_filter(place.filter)
            if place.host is not None:
                from bcfleet.tui.screens.host_detail import HostDetail

                self.push_screen(HostDetail(*place.host))
            if not step:
                self.history.visit(reached)

        screen = self.screen
        if place.view != self.current_mode and isinstance(screen, ViewScreen):
            screen.leave(arrive)
        else:
            arrive()

    def _base_view(self) -> ViewScreen | None:
        """The view at the bottom of the current mode's stack (under any drill-down)."""
        stack = self.screen_stack
        return stack[0] if stack and isinstance(stack[0], ViewScreen) else None

    def action_history(self, by: int) -> None:
        """`[` back, `]` forward through the places visited, each with its filter."""
        target = self.history.ahead(by)
        if target is None:
            self.notify(
                "Nothing further back." if by < 0 else "Nothing further forward.",
                title="History",
            )
            return
        self.go(self.history.places[target], step=by)  # a view left with edits may say no

    def _switch_to(self, name: str) -> None:
        self.switch_mode(name)
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_keys(self) -> None:
        screen = self.screen
        if not isinstance(screen, ViewScreen):
            return
        title = " › ".join(screen.crumbs())
        self.push_screen(HelpScreen(title, screen.ABOUT, keys_table(screen), views_table(VIEWS)))

    async def action_quit(self) -> None:
        self.request_quit()

    def request_quit(self) -> None:
        """q, Ctrl+C, :quit: quit, asking first when a view holds unsaved edits (Ctrl+C again
        while asked quits)."""
        if isinstance(self.screen, Confirm) and self.screen.verb == QUIT:
            self.quit_now()
            return
        unsaved = [" › ".join(s.crumbs()) for s in self.opened if s.has_unsaved_edits()]
        if not unsaved:
            self.quit_now()
            return
        question = f"Quit? Unsaved changes in {', '.join(sorted(unsaved))} are lost."
        self.push_screen(Confirm(question, QUIT), lambda yes: self.quit_now() if yes else None)

    def quit_now(self) -> None:
        """Quit: the keys read after the one that quit do nothing (a `u` behind the `q` opened
        a confirm on a closing app)."""
        self.keys.quitting = True
        self.exit()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for view in VIEWS:
            yield SystemCommand(
                f"View: {view.title}",
                f"{view.key} or :{view.name}" if view.key else f":{view.name}",
                lambda name=view.name: self.show_view(name),
            )
        if isinstance(screen, ViewScreen):
            yield from screen.commands()
            yield SystemCommand("Keys of this view", "?", self.action_keys)
        yield SystemCommand("Quit", "q or Ctrl+C", self.request_quit)
