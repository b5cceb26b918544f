"""The limits every document is held to before a parser builds it: size, nesting, aliases, numbers.

One place for the numbers and their messages. Callers: ``bcfleet/input_files.py`` (size and
UTF-8 of FleetConfig files, inventory files and saved plans), ``reconcile/yamlguard.py``
(nesting and alias expansion of FleetConfig YAML, from the parser's events),
``reconcile/yamldoc.py`` (number literals) and ``http/serving.py`` (JSON bodies).
Pure: the standard library only.

Why these numbers:

- ``FLEETCONFIG_MAX_BYTES`` = 8 MiB: the 10,000-object document of ``bench/bench_fleetconfig.py``
  is about 0.75 MiB, so ten times that fits; a larger file is a mistake or an attack.
- ``INVENTORY_MAX_BYTES`` = 4 MiB: the inventory of a large host is a few hundred KiB.
- ``SAVED_PLAN_MAX_BYTES`` = 64 MiB: a saved plan holds the FleetConfig's text and the plan,
  which lists before and after of every object.
- ``MAX_DEPTH`` = 64: a FleetConfig nests about six levels and an inventory four; the C YAML
  composer and the converters recurse once per level, and 100,000 levels crash the process.
- ``MAX_VALUES`` = 2,000,000: the values a YAML document may hold once its aliases are expanded
  (a "billion laughs" document of a few lines expands to 10^9).
- ``MAX_PROBLEMS`` = 1,000: the problems one check of a document reports at most. A file of a
  million wrong values would otherwise take minutes to explain and megabytes to print; the
  first thousand are enough to start fixing.
- ``MAX_NUMBER_CHARS`` = 100: a number literal longer than that is no quantity bcfleet stores
  (the bounds end at 10^12); Python refuses to convert integers past 4,300 digits anyway.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MIB = 1 << 20
FLEETCONFIG_MAX_BYTES = 8 * MIB
INVENTORY_MAX_BYTES = 4 * MIB
SAVED_PLAN_MAX_BYTES = 64 * MIB
MAX_DEPTH = 64
MAX_VALUES = 2_000_000
MAX_NUMBER_CHARS = 100
MAX_PROBLEMS = 1_000
MESSAGE_MAX = 300  # characters of one problem's message; a validator's may quote a whole value

# One JSON token the scan cares about: a whole string (skipped; an unterminated one runs to the
# end, so no text makes the scan quadratic), an opening or closing bracket, or a run of number
# characters, from its first character, too long to be a number bcfleet takes.
_JSON_TOKEN = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[{]|[\]}]|(?<![-+0-9.eE])[-+0-9.eE]{'
    + str(MAX_NUMBER_CHARS + 1)
    + ",}",
    re.DOTALL,
)


@dataclass(frozen=True)
class Located:
    """A refusal at a 1-based line and column of the text."""

    line: int
    column: int
    message: str


def size_text(size: int) -> str:
    """``8 MiB``, ``512 KiB`` or ``100 bytes``."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} bytes"


def too_large(what: str, limit: int) -> str:
    """The message for a file past its size limit."""
    return f"the file is larger than {size_text(limit)}, the most a {what} may be"


def too_deep() -> str:
    return f"nesting deeper than {MAX_DEPTH} levels"


def too_many_values() -> str:
    return f"aliases expand the document past {MAX_VALUES:,} values"


def number_too_long(length: int) -> str:
    return f"a number written with {length:,} characters (at most {MAX_NUMBER_CHARS})"


def cut(message: str) -> str:
    """A problem's message, at most MESSAGE_MAX characters."""
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


def problems_cut() -> str:
    return f"stopped after {MAX_PROBLEMS:,} problems; fix these and check again"


def line_column(text: str, index: int) -> tuple[int, int]:
    """The 1-based line and column of a character offset."""
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def located(text: str, index: int, message: str) -> Located:
    line, column = line_column(text, index)
    return Located(line, column, message)


def utf8_problem(raw: bytes) -> Located | None:
    """Where ``raw`` stops being UTF-8 text, or None when it is (a leading BOM is allowed)."""
    try:
        raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        prefix = raw[: exc.start].decode("utf-8-sig", "replace")
        return located(prefix, len(prefix), "the file is not UTF-8 text")
    return None


def json_problem(text: str) -> Located | None:
    """The first place JSON text nests deeper than MAX_DEPTH or writes an overlong number.

    One linear pass of a regular expression over strings and brackets, before ``json.loads``
    builds anything; text that is not JSON at all is left to the JSON reader to explain.
    """
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        first = text[match.start()]
        if first in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return located(text, match.start(), too_deep())
        elif first in "]}":
            if depth == 0:  # not JSON from here on: the reader stops at this point too
                return None
            depth -= 1
        elif first != '"':
            return located(text, match.start(), number_too_long(match.end() - match.start()))
    return None
