"""The SQLite file an engine opened, and what stands at its path now: the same file, none, or another.

A process keeps reading and writing the file it opened even after it was deleted
(`rm fleet.db*`) or replaced (`fleet demo --reset` from another terminal); its writes
then land in a file nobody will open again, and it would report them done. Every
transaction therefore begins by comparing the file at the path with the one first
opened (device and inode): a file gone or replaced is DATABASE_UNAVAILABLE with reason
``database_file_missing`` or ``database_file_replaced``, nothing read, nothing saved.
"""

from __future__ import annotations

import os
import threading

from bcfleet.errors import DatabaseUnavailableError

FILE_MISSING = "database_file_missing"
FILE_REPLACED = "database_file_replaced"


class FileIdentity:
    """The (device, inode) of the file first opened at a path; `check` compares the path's now."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.opened: tuple[int, int] | None = None
        self._lock = threading.Lock()

    def connected(self) -> None:
        """A connection opened the file: the first one fixes which file this engine works on."""
        with self._lock:
            if self.opened is None:
                found = _identity(self.path)
                self.opened = found

    def check(self) -> None:
        """Raise DATABASE_UNAVAILABLE when the file first opened is no longer at the path."""
        opened = self.opened
        if opened is None:
            return
        now = _identity(self.path)
        if now == opened:
            return
        if now is None:
            raise DatabaseUnavailableError(
                f"the database file {self.path} was deleted while this process had it open; "
                "nothing was read or saved: open the fleet again",
                {"reason": FILE_MISSING, "path": self.path},
                retry_after_seconds=None,
            )
        raise DatabaseUnavailableError(
            f"the database file {self.path} was replaced by another file while this process "
            "had it open; nothing was read or saved: open the fleet again",
            {"reason": FILE_REPLACED, "path": self.path},
            retry_after_seconds=None,
        )


def _identity(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_dev, found.st_ino
