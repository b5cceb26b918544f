"""Usage export (`:export`): what `fleet usage export` gives, every metered window you may see
in id order, and w to write it to a CSV file (the same RFC 4180 writer as the CLI and HTTP).

The table shows the first SHOWN windows and counts them all; w asks for the file (a new
one in the current directory by default), writes the whole export there in a worker, and
says the full path and how many windows went in. An existing file is never overwritten.
Reading the export reads every window, so the view does not refresh by itself (r does).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.binding import Binding, BindingType
from textual.message import Message

from bcfleet.domain.usage_csv import csv_lines
from bcfleet.tui.format import DASH, Cell, short_time
from bcfleet.tui.screens.acting import error_text
from bcfleet.tui.screens.ask import AskValue
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

SHOWN = 1_000
"""The most windows the table holds; the export written holds them all."""


@dataclass(frozen=True)
class ExportRead:
    """The first windows of the export, and how many there are in all."""

    items: list[Mapping[str, Any]]
    total: int


def default_file(now: datetime) -> str:
    """usage-export-20261130T1000Z.csv: a new file in the current directory, named by time."""
    return f"usage-export-{now.strftime('%Y%m%dT%H%M%SZ')}.csv"


def write_export(rows: Iterable[Mapping[str, Any]], path: Path) -> int:
    """The export as CSV in a new file (FileExistsError if it is there); the windows written."""
    count = -1  # the header is the first line
    with path.open("x", encoding="utf-8", newline="") as out:
        for line in csv_lines(rows):
            out.write(line)
            count += 1
    return count


def window_row(window: Mapping[str, Any]) -> Row:
    cells: tuple[Cell, ...] = (
        short_time(window.get("windowStart")),
        str(window.get("tenantId") or DASH),
        str(window.get("subjectId") or DASH),
        str(window.get("meter") or DASH),
        str(window.get("quantity") or "0"),
    )
    sort = (window.get("windowStart") or "", cells[1], cells[2], cells[3],
            float(window.get("quantity") or 0))  # fmt: skip
    return Row(str(window["id"]), cells, sort=sort)


class UsageExportView(TableView):
    TITLE = "Usage export"
    ABOUT = (
        "What `fleet usage export` gives: every metered window you may see (window start, "
        "tenant, subject, meter, quantity), in id order. w writes the whole export to a CSV "
        "file (the CLI's format) and says where; an existing file is never overwritten. It "
        "reads everything, so it does not refresh by itself: r reads again."
    )
    AUTO_REFRESH = False
    CLOCK_DEPENDENT = False
    COLUMNS = (
        Column("window", "WINDOW"),
        Column("tenant", "TENANT", give_way=1, name=True),
        Column("subject", "SUBJECT", crop_to=14, name=True),
        Column("meter", "METER", name=True),
        Column("quantity", "QUANTITY"),
    )
    NOUN = ("window", "windows")
    BINDINGS: ClassVar[list[BindingType]] = [Binding("w", "write", "Write CSV")]

    class Written(Message):
        def __init__(self, text: str, ok: bool) -> None:
            super().__init__()
            self.text, self.ok = text, ok

    def __init__(self) -> None:
        super().__init__()
        self.total = 0

    def fetch(self) -> Any:
        items: list[Mapping[str, Any]] = []
        total = 0
        for window in self.source.usage_export():
            if total < SHOWN:
                items.append(window)
            total += 1
        return ExportRead(items, total)

    def rows(self, data: Any) -> Iterable[Row]:
        self.total = data.total
        return [window_row(w) for w in data.items]

    def item(self, key: str) -> Mapping[str, Any] | None:
        data = self.data.items if isinstance(self.data, ExportRead) else []
        return next((w for w in data if str(w.get("id")) == key), None)

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        del key
        return dict(item)

    def open_row(self, key: str) -> None:
        self.describe_row(key)

    def summary(self) -> Text:
        text = super().summary()
        if self.total > SHOWN:
            text.append(f" · the first {SHOWN:,} of {self.total:,} (w writes them all)")
        return text

    def action_write(self) -> None:
        def answered(text: str | None) -> None:
            if text is not None and text.strip():
                self._write_in_thread(Path(text.strip()).expanduser())

        start = default_file(self.now or self.source.now())
        self.app.push_screen(
            AskValue("Write the usage export (CSV) to which new file?", "a file name", start),
            answered,
        )

    @work(thread=True, group="export", exit_on_error=False)
    def _write_in_thread(self, path: Path) -> None:
        where = path.resolve()
        try:
            count = write_export(self.source.usage_export(), where)
        except FileExistsError:
            self.post_message(self.Written(f"{where} exists: choose another name.", False))
            return
        except OSError as exc:
            self.post_message(self.Written(f"{where}: {exc.strerror or exc}", False))
            return
        except Exception as exc:  # noqa: BLE001 - an API error, said in the CLI's words
            self.post_message(self.Written(error_text(exc), False))
            return
        self.post_message(self.Written(f"Wrote {count:,} windows to {where}", True))

    def on_usage_export_view_written(self, message: Written) -> None:
        self.notify(
            message.text,
            title="Usage export" if message.ok else "Usage export: not written",
            severity="information" if message.ok else "error",
            timeout=12,
        )
