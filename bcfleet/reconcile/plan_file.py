"""Where `fleet plan --out` may write a saved plan, and how: reconcile/saved.py calls it.

A plan is never written over the database it was planned against (nor that database's
-wal, -shm or -journal file), over any SQLite database (judged by its header bytes, whatever
its name), or over anything but a regular file; `--force` lifts none of these. A file that
exists, is not empty and is not a saved plan is replaced only with `--force`. The plan is
written to a temporary file in the target's folder, flushed to disk and renamed over the
target, so a crash or a full disk leaves the old file or the new one, never half of either.
A symbolic link is followed: the file it names is replaced, the link stays.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from bcfleet.errors import InvalidInputError
from bcfleet.store.probe import is_sqlite_file, shown, sqlite_file

SIDECARS = ("", "-wal", "-shm", "-journal")
"""The files SQLite keeps for a database: the database itself and its logs."""


def _refused(out: str, why: str, reason: str) -> InvalidInputError:
    return InvalidInputError(
        f"--out {out}: {why}; nothing was written", {"file": out, "reason": reason}
    )


def _same_file(target: Path, other: Path) -> bool:
    if target == Path(os.path.realpath(other)):
        return True
    try:
        return target.exists() and other.exists() and os.path.samefile(target, other)
    except OSError:
        return False


def _database_problem(target: Path, database_url: str | None) -> str | None:
    database = sqlite_file(database_url) if database_url else None
    if database is None:
        return None
    for suffix in SIDECARS:
        if _same_file(target, Path(f"{database}{suffix}")):
            what = "the database" if not suffix else f"the database's {suffix[1:]} file"
            return f"that is {what} this plan was made against ({shown(database_url or '')})"
    return None


def check_target(
    out: str, *, database_url: str | None, force: bool, is_plan: Callable[[Path], bool]
) -> Path:
    """The file a plan may be written to (a link resolved); INVALID_INPUT, writing nothing,
    for the database, an SQLite file, a non-regular file, or (without force) a non-plan."""
    target = Path(os.path.realpath(out))
    problem = _database_problem(target, database_url)
    if problem is not None:
        raise _refused(out, f"{problem}; saving the plan there would destroy the fleet", "database")
    try:
        info = target.stat()
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise _refused(out, f"cannot use that path ({exc.strerror})", "unusable") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refused(out, "that is not a regular file; name a file such as plan.json", "special")
    if is_sqlite_file(target):
        raise _refused(
            out, "that file is an SQLite database; name a file such as plan.json", "sqlite"
        )
    if info.st_size and not force and not is_plan(target):
        raise _refused(
            out,
            "that file exists and is not a saved plan; name another file, or pass --force to "
            "replace it",
            "not_a_plan",
        )
    return target


def _mode_for(target: Path) -> int:
    """The existing file's permissions, else what open() would give a new file (0666 less umask)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def write_atomically(target: Path, body: str) -> None:
    """Write body to a temporary file beside target, fsync it, rename it over target."""
    mode = _mode_for(target)
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(body)
            stream.flush()
            os.fchmod(stream.fileno(), mode)
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    with contextlib.suppress(OSError):  # the rename itself on disk (not every system allows it)
        folder = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
