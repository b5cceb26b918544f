"""PostgreSQL statements on psycopg's libpq wrapper: sent in pipeline mode, prepared once per connection, answered at one sync.

psycopg's own pipeline flushes and polls the socket after every statement and builds a
cursor's state for each: about 45 us of client CPU a statement, where libpq's calls with
psycopg's adapters cost about 13 (docs/speed.md). store/driver_sql.py sends a transaction's
DriverStatements here when no listener but bcfleet's own would see them; with any other
listener (fault injection, statement counts) they go through psycopg's cursors as before.
Nothing is written to the socket before the sync: a round trip is one write and one wake-up
of the server, however many statements it holds. Where several processes share the cores, a
write a statement cost more than the overlap it bought (docs/speed.md, "One write a round trip").

Values are dumped and rows loaded by psycopg's Transformer, so the same bytes reach the
server as through a cursor. Each statement is prepared on a connection the first time it is
sent with a given set of parameter types (psycopg's own rule: its key is the query and the
types), and is known as prepared once the server has answered the Parse. An error ends the
pipeline's work: the statements after it are not run (PIPELINE_ABORTED), the first error is
raised as psycopg raises it (a psycopg.Error subclass, which SQLAlchemy wraps), and a lost
connection is psycopg's OperationalError with libpq's own message.
"""

from __future__ import annotations

import re
import select
from collections.abc import Sequence
from contextlib import suppress
from itertools import count
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.errors import error_from_result

from bcfleet.store.driver_sql import Answer

_PLACEHOLDER = re.compile(r"%\(([^)]+)\)s|%%")


def numbered(sql: str) -> tuple[bytes, tuple[str, ...]]:
    """A pyformat statement (as SQLAlchemy compiles for psycopg) in libpq's $n form, and its
    parameter names in $n order (a name used twice is one parameter)."""
    names: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _PLACEHOLDER.sub(replace, sql).encode("utf-8"), tuple(names)


Key = tuple[bytes, tuple[int, ...]]  # a statement's query and its parameters' types


class _Kept:
    """What one connection's pipelines share: the statements prepared on it, by key, and the
    numbers their names take; the Transformer that dumps and loads (its adapters looked up
    once, as a cursor's are, not once a round trip); the poll on its socket.

    A name is never given twice on a connection, so a Parse the server skipped or refused
    leaves no name that a later one could meet."""

    __slots__ = ("names", "numbers", "poll", "transformer")

    def __init__(self, driver: psycopg.Connection[Any]) -> None:
        self.names: dict[Key, bytes] = {}
        self.numbers = count()
        self.transformer = Transformer(driver)
        self.poll = select.poll()
        self.poll.register(driver.pgconn.socket, select.POLLIN)


_KEPT: WeakKeyDictionary[Any, _Kept] = WeakKeyDictionary()
_NO_SUCH_STATEMENT = "26000"  # invalid_sql_statement_name: a prepared statement the server lost


def _kept(driver: psycopg.Connection[Any]) -> _Kept:
    kept = _KEPT.get(driver)
    if kept is None:
        kept = _KEPT[driver] = _Kept(driver)
    return kept


class PqPipeline:
    """One pipeline on a psycopg connection's libpq handle: statements sent, answered at end()."""

    def __init__(self, driver: psycopg.Connection[Any]) -> None:
        self.driver = driver
        self.pgconn = driver.pgconn
        self.kept = kept = _kept(driver)
        self.transformer = kept.transformer
        # In the order sent: an Answer to fill, None (an answer nobody reads), or a Parse
        # (its key, its name), recorded as prepared when the server accepts it.
        self.waiting: list[Any] = []
        self.parsing: dict[Key, bytes] = {}
        self.poll = kept.poll
        self.pgconn.enter_pipeline_mode()

    def send(self, sql: bytes, values: Sequence[Any], *, read: bool) -> Answer | None:
        """Queue one statement with its values; its Answer (filled by end()) when read.

        Nothing is written to the socket until end(), unless libpq's buffer fills (module
        docstring)."""
        transformer = self.transformer
        dumped = transformer.dump_sequence(values, [PyFormat.AUTO] * len(values))  # sends nothing
        key = (sql, tuple(transformer.types or ()))
        formats = transformer.formats
        try:
            name = self.kept.names.get(key) or self.parsing.get(key)
            if name is None:
                name = b"bcfleet_%d" % next(self.kept.numbers)
                self.parsing[key] = name
                self.pgconn.send_prepare(name, sql, param_types=key[1])
                self.waiting.append((key, name))
            self.pgconn.send_query_prepared(name, dumped, param_formats=formats)
        except BaseException:
            self._close()
            raise
        answer = Answer() if read else None
        self.waiting.append(answer)
        return answer

    def send_text(self, sql: bytes) -> None:
        """Queue a statement without parameters (BEGIN, COMMIT), its answer not read (sent at end())."""
        try:
            self.pgconn.send_query_params(sql, None)
        except BaseException:
            self._close()
            raise
        self.waiting.append(None)

    def end(self) -> None:
        """Sync, read every answer and leave pipeline mode; raise the first error the server sent."""
        pgconn = self.pgconn
        first: psycopg.Error | None = None
        try:
            pgconn.pipeline_sync()
            self._flush()
            for waiting in self.waiting:
                error = self._read_one(waiting)
                first = first or error
            while (result := self._next_result()) is not None:  # the sync's own
                if result.status == pq.ExecStatus.PIPELINE_SYNC:
                    break
            pgconn.exit_pipeline_mode()
        except BaseException:
            self._close()
            raise
        finally:
            self.waiting = []
            self.parsing = {}
        if first is not None:
            if first.sqlstate == _NO_SUCH_STATEMENT:  # gone from the server: prepare afresh
                self.kept.names.clear()
            raise first

    def _close(self) -> None:
        """Lost, interrupted or unreadable half way, the pipeline's state is unknown (answers may
        still be on their way): the connection is closed, so SQLAlchemy drops it, never reused.

        Called from each sending method's own `except BaseException` (a context manager there
        cost a placement 16 generator frames)."""
        self.driver.close()

    def abandon(self) -> None:
        """Leave pipeline mode quietly on a connection being dropped (its answers no longer matter)."""
        with suppress(psycopg.Error):
            self.pgconn.exit_pipeline_mode()

    def _read_one(self, waiting: Any) -> psycopg.Error | None:
        """The results of one statement sent, up to its end (a None result); its error, if any."""
        error: psycopg.Error | None = None
        while (result := self._next_result()) is not None:
            status = result.status
            if status == pq.ExecStatus.FATAL_ERROR:
                error = error_from_result(result, encoding=self.driver.info.encoding)
            elif status == pq.ExecStatus.PIPELINE_ABORTED:
                continue
            elif type(waiting) is tuple:  # a Parse the server accepted
                key, name = waiting
                self.kept.names[key] = name
            elif waiting is not None:
                transformer = self.transformer
                transformer.set_pgresult(result)
                waiting.rows = transformer.load_rows(0, result.ntuples, tuple)
                tuples = result.command_tuples
                waiting.rowcount = tuples if tuples is not None else -1
        return error

    def _flush(self) -> None:
        pgconn = self.pgconn
        while pgconn.flush() == 1:  # libpq's rule in non-blocking mode: read while waiting to write
            writable = select.poll()
            writable.register(pgconn.socket, select.POLLIN | select.POLLOUT)
            if any(events & select.POLLIN for _, events in writable.poll()):
                pgconn.consume_input()

    def _next_result(self) -> pq.abc.PGresult | None:
        pgconn = self.pgconn
        while pgconn.is_busy():
            self.poll.poll()  # poll, not select: a socket numbered past 1,023 is fine
            pgconn.consume_input()
        return pgconn.get_result()
