"""Doctor (`:doctor`): `fleet doctor --invariants` on screen, its warnings then each invariant
check, and r to run it again (it does not rerun by itself: the checks read the whole fleet)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType

from bcfleet.tui.format import DASH, Cell, croppable
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

SUBJECT_FIELDS = ("host", "pool", "id", "job")


def warning_subject(warning: Mapping[str, Any]) -> str:
    """What a warning is about: its host, else its pool, its subject's id or its job."""
    return next((str(warning[f]) for f in SUBJECT_FIELDS if warning.get(f)), DASH)


def doctor_rows(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], Row]]:
    """(key, what Enter shows, row): each warning, then each invariant check, failing first."""
    found: list[tuple[str, Mapping[str, Any], Row]] = []
    for index, warning in enumerate(report.get("warnings") or ()):
        key = f"warning/{index}"
        cells: tuple[Cell, ...] = (
            Text("warning", style="yellow"),
            str(warning.get("code") or DASH),
            warning_subject(warning),
            croppable(str(warning.get("message") or DASH)),
        )
        found.append((key, warning, Row(key, cells, sort=(0, str(cells[1]), str(cells[2])))))
    problems: Mapping[str, list[str]] = (report.get("invariants") or {}).get("problems") or {}
    for name, listed in problems.items():
        key = f"invariant/{name}"
        state: Cell = Text(f"{len(listed)} broken", style="bold red") if listed else "ok"
        cells = (Text("invariant"), name, DASH, croppable("; ".join(listed) or "holds"))
        sort = (1 if listed else 2, name, DASH)
        found.append((key, {"invariant": name, "problems": listed or [DASH]},
                      Row(key, (state, *cells[1:]), sort=sort)))  # fmt: skip
    return found


class DoctorView(TableView):
    TITLE = "Doctor"
    ABOUT = (
        "`fleet doctor --invariants`: the warnings an operator should act on (a host without "
        "capacity rows, an inventory vps.hosts cannot read, a job failing on one item), then "
        "each invariant check (broken ones first, with what breaks them). r runs it again; it "
        "does not rerun by itself. Enter shows a row in full."
    )
    AUTO_REFRESH = False
    CLOCK_DEPENDENT = False
    COLUMNS = (
        Column("kind", "KIND"),
        Column("code", "CHECK", name=True),
        Column("subject", "SUBJECT", give_way=1, name=True),
        Column("message", "MESSAGE", crop_to=20),
    )
    NOUN = ("row", "rows")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "reload", "Rerun")]

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, Mapping[str, Any]] = {}
        self.report: Mapping[str, Any] = {}

    def fetch(self) -> Any:
        return self.source.doctor(True)

    def rows(self, data: Any) -> Iterable[Row]:
        self.report = data
        listed = doctor_rows(data)
        self.found = {key: doc for key, doc, _row in listed}
        return [row for _key, _doc, row in listed]

    def item(self, key: str) -> Mapping[str, Any] | None:
        return self.found.get(key)

    def row_name(self, key: str) -> str:
        return key.partition("/")[2] if key.startswith("invariant/") else key

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        del key
        return dict(item)

    def open_row(self, key: str) -> None:
        self.describe_row(key)

    def summary(self) -> Text:
        text = super().summary()
        warnings = len(self.report.get("warnings") or ())
        invariants = self.report.get("invariants") or {}
        broken = sum(1 for v in (invariants.get("problems") or {}).values() if v)
        text.append(f" · {warnings} warning{'s' if warnings != 1 else ''}")
        if invariants:
            text.append(" · invariants hold" if not broken else f" · {broken} invariants broken",
                        style="" if not broken else "bold")  # fmt: skip
        return text
