"""What every `fleet` command shares: --db/--json/--token, the fleet handle, output and errors.

Imported by every command and by `fleet --help`, so it imports no database code itself: the
fleet (and SQLAlchemy with it) is imported on first use of the fleet handle.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from bcfleet.domain.bounds import (
    INTEGER_TEXT_WORDS,
    WAIT_SECONDS_MAX,
    integer_form,
    printable,
    seconds_problem,
    shown,
)
from bcfleet.errors import FleetError, NotFoundError, exit_code_for

if TYPE_CHECKING:
    from bcfleet.api.auth import Credential
    from bcfleet.fleet import Fleet

F = TypeVar("F", bound=Callable[..., Any])

CREATES_DATABASE = frozenset({"create", "adopt", "setup", "upgrade", "apply", "demo", "serve"})
"""Verbs that make a new fleet where the database holds none; every other verb refuses."""
PLANS_ON_EMPTY = frozenset({"plan", "validate"})


@dataclass
class CliState:
    """Options gathered from the root group and the command itself (the command's win)."""

    db: str | None = None
    json: bool = False
    debug: bool = False
    token: str | None = None
    busy_timeout_s: float | None = None
    """How long the fleet's SQLite connections wait for another process's lock (None: the
    store's default); the dashboard waits a second, then says busy."""
    _fleet: Fleet | None = field(default=None, repr=False)
    _made_file: Path | None = field(default=None, repr=False)
    """The SQLite file this run created: removed again if the command fails before any change."""

    @property
    def fleet(self) -> Fleet:
        if self._fleet is None:
            from bcfleet.fleet import Fleet

            url = self._url_to_open()
            if self.busy_timeout_s is None:
                self._fleet = Fleet.open(url)
            else:
                self._fleet = Fleet.open(url, busy_timeout_s=self.busy_timeout_s)
        return self._fleet

    def _url_to_open(self) -> str | None:
        """The database to open: one that holds a fleet; a new one only for verbs that make
        things (said on stderr); an empty one in memory for plan and validate."""
        from bcfleet.fleet import Fleet

        found, where = Fleet.probe(self.db)
        if found == "fleet":
            return self.db
        context = click.get_current_context(silent=True)
        verb = context.info_name if context is not None else None
        if verb in PLANS_ON_EMPTY:
            click.echo(f"No fleet in {where} yet: planning against an empty one.", err=True)
            return "sqlite://"
        if verb not in CREATES_DATABASE:
            raise NotFoundError(
                f"no fleet in {where}: check --db or BCFLEET_DB; a command that creates "
                "something (or `fleet db upgrade`) makes a new fleet there",
                {"db": where, "reason": "no_fleet"},
            )
        click.echo(f"Creating a new fleet in {where}.", err=True)
        if found == "missing":
            self._made_file = Fleet.sqlite_file(self.db)
        return self.db

    def close_fleet(self, *, succeeded: bool = True) -> None:
        """Close the fleet handle, if one is open; the next use opens it again.

        A command that failed leaves no database behind that it created and never changed
        (a refused `fleet apply PLAN`, a create that was refused): the file is removed.
        """
        if self._fleet is None:
            return
        made, fleet = self._made_file, self._fleet
        discard = not succeeded and made is not None and _unchanged(fleet)
        fleet.close()
        self._fleet = self._made_file = None
        if discard and made is not None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{made}{suffix}").unlink(missing_ok=True)
            click.echo(f"Removed the new fleet in {made} again: nothing was changed.", err=True)

    @property
    def credential(self) -> Credential:
        """--token, else BCFLEET_TOKEN, else the local operator.

        Only an absent token means the local operator: a given but empty or blank one
        (``--token ""``, ``BCFLEET_TOKEN=``) is passed on and refused as UNAUTHENTICATED.
        """
        from bcfleet.api.auth import LOCAL_OPERATOR

        if self.token is not None:
            return self.token
        return os.environ.get("BCFLEET_TOKEN", LOCAL_OPERATOR)


def _unchanged(fleet: Fleet) -> bool:
    """Whether the fleet is as made (False when that cannot be told: the file is kept)."""
    try:
        return fleet.unchanged()
    except Exception:  # noqa: BLE001 - the command's own error is the one to report
        return False


_current: list[CliState] = [CliState()]


def reset_state() -> CliState:
    """A fresh CliState for one run of the CLI (main() calls it; tests that call main() twice rely on it)."""
    _current[0] = CliState()
    return _current[0]


def state() -> CliState:
    return _current[0]


def _remember(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value not in (None, False):
            setattr(state(), name, value)
        return value

    return callback


def common_options(func: F) -> F:
    """--db, --json, --token and --debug, accepted on the root group and on every command."""
    options = [
        click.option(
            "--db",
            "db_opt",
            envvar="BCFLEET_DB",
            expose_value=False,
            is_eager=True,
            callback=_remember("db"),
            help="Database URL (default sqlite:///fleet.db).",
        ),
        click.option(
            "--json",
            "json_opt",
            is_flag=True,
            expose_value=False,
            is_eager=True,
            callback=_remember("json"),
            help="Print one JSON document on stdout.",
        ),
        click.option(
            "--token",
            "token_opt",
            envvar="BCFLEET_TOKEN",
            expose_value=False,
            is_eager=True,
            callback=_remember("token"),
            help="Act as this token's principal (default: the local operator).",
        ),
        click.option(
            "--debug",
            "debug_opt",
            is_flag=True,
            envvar="BCFLEET_DEBUG",
            expose_value=False,
            is_eager=True,
            callback=_remember("debug"),
            help="Print the traceback of an internal error on stderr.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def fleet_command(group: click.Group, name: str, **kwargs: Any) -> Callable[[F], F]:
    """A command of a group with the common options and FleetError handling."""

    def decorate(func: F) -> F:
        @wraps(func)
        def wrapper(*args: Any, **kw: Any) -> Any:
            return func(*args, **kw)

        return cast(F, group.command(name, **kwargs)(common_options(wrapper)))

    return decorate


class Whole(click.IntRange):
    """A whole number on the command line, written as the HTTP API's integers are
    (bounds.integer_form: ASCII digits, an optional leading '-', 2.0 is 2), within min..max if
    given; click's int also takes blanks, '+', '_' and other scripts' digits. How large it may
    be is the API's bound to say, naming the field's range."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            if not integer_form(value):
                self.fail(
                    f"{shown(value)} is not a whole number written in ASCII digits "
                    f"({INTEGER_TEXT_WORDS})",
                    param,
                    ctx,
                )
            value = value.partition(".")[0]
        return super().convert(value, param, ctx)


WHOLE = Whole()


class Seconds(click.ParamType[float]):
    """A number of seconds on the command line (an interval, a timeout, a delay): finite and
    within low..high (bounds.seconds_problem), so that no loop or sleep gets NaN, infinity or
    a negative number."""

    name = "seconds"

    def __init__(self, low: float = 0.0, high: float = WAIT_SECONDS_MAX) -> None:
        self.low, self.high = low, high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float | int) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{printable(repr(value))[:40]} is not a number of seconds", param, ctx)
        flag = param.opts[0] if isinstance(param, click.Option) else "seconds"
        problem = seconds_problem(flag, number, self.low, self.high)
        if problem is not None:
            self.fail(problem, param, ctx)
        return number


JSON_BLOCK = 1 << 16
"""Characters of JSON written at a time: a large document is written as it is encoded."""


def print_json(data: Any) -> None:
    """`data` as indented JSON and a newline, written a block at a time as it is encoded, so a
    listing of 100,000 hosts is not also held whole as text, nor as the encoder's pieces."""
    block: list[str] = []
    size = 0
    for piece in json.JSONEncoder(indent=2, default=str).iterencode(data):
        block.append(piece)
        size += len(piece)
        if size >= JSON_BLOCK:
            click.echo("".join(block), nl=False)
            block, size = [], 0
    click.echo("".join(block))


def output(data: Any, human: Callable[[Any], str] | None = None) -> None:
    """One JSON document with --json, else the human rendering (or the JSON when there is none)."""
    if state().json or human is None:
        print_json(data)
    else:
        text = human(data)
        if text:
            click.echo(text)


def table(
    rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], empty: str = "(none)"
) -> str:
    """A plain aligned table: columns are (header, key) pairs."""
    if not rows:
        return empty
    cells = [[_cell(row.get(key)) for _, key in columns] for row in rows]
    headers = [header for header, _ in columns]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for line in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    return "\n".join(lines)


def _cell(value: Any) -> str:
    """A value as one line of a table: control and bidi characters written as \\n, \\u202e."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return printable(",".join(f"{k}={v}" for k, v in value.items())) or "-"
    if isinstance(value, list | tuple):
        return printable(",".join(str(v) for v in value)) or "-"
    return printable(str(value))


def render_error(error: FleetError, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(error.to_json(), indent=2, default=str))
        return
    click.echo(f"error: {error.code}: {error.message}", err=True)
    for line in _detail_lines(error.details):
        click.echo(f"  {line}", err=True)


def _detail_lines(details: dict[str, Any]) -> Iterable[str]:
    for key, value in details.items():
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            yield f"{key}:"
            for item in value:
                yield f"  - {item}"
        elif isinstance(value, dict) and value and all(isinstance(v, str) for v in value.values()):
            for sub, text in value.items():
                yield f"{sub}: {text}"


def fail(error: FleetError) -> None:
    """Render a FleetError and exit with its code (1, 3 for LOCKED, 4 for STALE_PLAN)."""
    render_error(error, state().json)
    sys.exit(exit_code_for(error))


def parse_labels(values: Sequence[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--label")
        labels[key] = value
    return labels


def parse_pairs(text: str | None, option: str) -> dict[str, float]:
    """'vcpu=2,memoryGiB=1.5' → {'vcpu': 2.0, 'memoryGiB': 1.5}."""
    result: dict[str, float] = {}
    if not text:
        return result
    for item in text.split(","):
        key, sep, value = item.partition("=")
        try:
            result[key.strip()] = float(value)
        except ValueError:
            raise click.BadParameter(f"{item!r} is not KEY=NUMBER", param_hint=option) from None
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=NUMBER", param_hint=option)
    return result
