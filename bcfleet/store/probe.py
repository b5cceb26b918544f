"""What a database URL points at, before anything is opened or created: `fleet --db` and BCFLEET_DB.

- A URL that is neither SQLite nor PostgreSQL, or an SQLite URL without a file
  path (``sqlite://fleet.db``, ``sqlite:fleet.db``), is INVALID_INPUT; so is a
  path that is a directory, a new file whose folder does not exist, a file that is
  not an SQLite database, and a database whose tables are not bcfleet's.
- A PostgreSQL server that does not answer, refuses the login or has no such
  database is DATABASE_UNAVAILABLE.
- Otherwise the answer says whether the database holds a fleet (bcfleet's
  schema) or nothing yet ("missing" file, or "empty" database): the CLI
  creates a fleet there only for verbs that make things, and says so.

Messages show the URL with its password hidden.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from sqlalchemy import create_engine, inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from bcfleet.errors import DatabaseUnavailableError, InvalidInputError
from bcfleet.store.engine import normalize_url

Found = Literal["missing", "empty", "fleet"]
SQLITE_HEADER = b"SQLite format 3\x00"
SCHEMES = "sqlite:///PATH, a bare file path, or postgresql://USER@HOST:PORT/DATABASE"
FLEET_TABLES = frozenset({"alembic_version", "tenants", "pools", "hosts"})


def shown(url: str) -> str:
    """The URL as messages show it: the password hidden (a path or an SQLite URL as given)."""
    if "://" not in url or url.startswith("sqlite:"):
        return url
    try:
        return make_url(normalize_url(url)).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):  # ValueError: an unclosed [ in the host
        return url


def _bad(url: str, why: str) -> InvalidInputError:
    return InvalidInputError(
        f"--db {shown(url)}: {why}", {"db": shown(url), "reason": "bad_database"}
    )


def check_url(url: str) -> str:
    """The normalized URL of an SQLite file or a PostgreSQL database; INVALID_INPUT otherwise."""
    if "://" not in url and url.split(":", 1)[0].lower().startswith(("sqlite", "postgres")):
        raise _bad(url, f"not a database URL; use {SCHEMES}")  # sqlite:fleet.db, a typo
    normalized = normalize_url(url.strip())
    try:
        parsed = make_url(normalized)
        backend = parsed.get_backend_name()
    except (ArgumentError, ValueError):  # ValueError: an unclosed [ in the host
        raise _bad(url, f"not a database URL; use {SCHEMES}") from None
    if backend == "sqlite":
        if not parsed.database or parsed.host or not normalized.startswith("sqlite:///"):
            raise _bad(url, f"an SQLite URL names a file, as sqlite:///fleet.db; use {SCHEMES}")
        if "?" in normalized:  # SQLAlchemy would open the file before the ? (options ignored)
            raise _bad(
                url,
                "an SQLite URL takes no query string; a ? in the file's name is written %3F "
                "(or give the bare path)",
            )
        return normalized
    if backend == "postgresql" and parsed.get_driver_name() == "psycopg":
        if not parsed.database:
            raise _bad(url, "a PostgreSQL URL names its database, as postgresql://…/fleet")
        return normalized
    raise _bad(url, f"bcfleet keeps its state in SQLite or PostgreSQL; use {SCHEMES}")


def sqlite_file(url: str) -> Path | None:
    """The file an SQLite URL names; None for PostgreSQL, an in-memory database or a URL that
    names no database (`fleet plan --out` keeps plans off the file, reconcile/plan_file.py)."""
    try:
        normalized = check_url(url)
    except InvalidInputError:
        return None
    if not normalized.startswith("sqlite"):
        return None
    database = make_url(normalized).database or ""
    return None if database in ("", ":memory:") else Path(database)


def is_sqlite_file(path: Path) -> bool:
    """Whether the file begins with SQLite's header (an unreadable file is not judged one)."""
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def probe(url: str) -> Found:
    """Whether the database holds a fleet, nothing yet, or (as an error) something else."""
    normalized = check_url(url)
    if normalized.startswith("sqlite"):
        database = make_url(normalized).database or ""
        if database == ":memory:":
            return "empty"
        path = Path(database)
        try:
            if path.is_dir():
                raise _bad(url, "that is a directory; name a file such as fleet.db")
            if not path.exists():
                _check_folder(url, path.parent)
                return "missing"
            if not path.is_file():  # a device such as /dev/null, a FIFO, a socket
                raise _bad(url, "that is not a regular file; name a file such as fleet.db")
        except OSError as exc:  # a name too long, a parent that is a file, no permission
            raise _bad(url, f"cannot use that path ({exc.strerror})") from None
        if path.stat().st_size and _header(path) != SQLITE_HEADER:
            raise _bad(url, "that file is not an SQLite database")
    return _tables_say(url, normalized)


def _check_folder(url: str, folder: Path) -> None:
    """INVALID_INPUT, before anything is said or made, when a new file's folder is not there."""
    if folder.is_dir():
        return
    why = "does not exist" if not folder.exists() else "is not a folder"
    raise _bad(
        url,
        f"the folder {str(folder)!r} {why}; create it first, or name a file in a folder that exists",
    )


def _header(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise _bad(str(path), f"cannot read it ({exc.strerror})") from None


def _tables_say(url: str, normalized: str) -> Found:
    options = {} if normalized.startswith("sqlite") else {"connect_args": {"connect_timeout": 5}}
    engine = create_engine(normalized, **options)
    try:
        tables = set(inspect(engine).get_table_names())
    except DBAPIError as exc:
        if normalized.startswith("sqlite"):
            raise _bad(url, "that file is not an SQLite database") from None
        first = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise DatabaseUnavailableError(
            f"cannot reach the database {shown(url)}: {first}",
            {"db": shown(url), "reason": "cannot_connect"},
        ) from None
    finally:
        engine.dispose()
    if not tables:
        return "empty"
    if tables >= FLEET_TABLES:
        return "fleet"
    raise _bad(url, "that database holds tables, but not bcfleet's")
