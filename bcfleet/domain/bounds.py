"""The one set of bounds a value crossing an edge (CLI, HTTP, FleetConfig, inventory) is held to.

The API layer calls the ``check_*`` functions before it writes; the FleetConfig checks and the
inventory checks call the ``*_problem`` functions, which return a message instead of raising,
so they can report every problem at its place; renderers call ``printable``. Pure: the standard
library and ``bcfleet.errors`` (a leaf of plain exception classes, as domain/inventory.py uses).

Why these numbers:

- ``INT32_MAX``: every whole-number column is PostgreSQL ``INTEGER`` (flavors' vcpu, memory_gib,
  disk_gib, gpus; quotas' limit and used; node_resources' allocatable, capacity, allocated).
  SQLite keeps 64 bits; the smaller range is the one both engines store.
- ``SHAPE_MAX`` = 1,000,000: a flavor's vcpu, memoryGiB, diskGiB and gpus, a host reserve, and
  what an inventory reports (memoryGiB, diskGiB, CPU and NUMA ids). A capacity row holds
  floor(allocatable × ratio) with a ratio up to 100, so 10^6 × 100 = 10^8 stays far inside
  INTEGER, with room for the sums of allocations. 10^6 GiB is about a pebibyte, and 10^6
  CPUs is more than any one machine has.
- ``QUOTA_MAX`` = 1,000,000,000: a tenant's limit in a pool sums many hosts, so it may exceed
  one host's bound; it stays below 2^31 − 1.
- ``RATIO_MIN``..``RATIO_MAX`` = 0.1..100: the overcommit range of document 000. A ratio outside it is
  clamped into it, never silently: ``check_ratio`` returns the notice every edge shows; NaN and
  infinities are refused everywhere.
- ``PAGE_MAX`` = 1,000: the longest page of a list (events, webhook deliveries, job runs).
- ``BATCH_MAX`` = 1,000: the most instances one create places (``count``, Nova's max_count),
  one transaction whose answer lists each instance, so a page's length as well.
- ``WAIT_SECONDS_MAX`` = 86,400: a wait, poll interval, timeout, grace or simulated delay given
  on the command line or to the API is finite and at most a day; a longer one is a typo, and
  an infinite or NaN one never ends a loop.
- ``AGENT_MESSAGE_MAX`` = 1,024 and ``AGENT_CONDITIONS_MAX`` = 8: what a host agent reports of
  a guest (domain.agent_report): a condition's message (libvirt's errors run to a few hundred
  characters; the agent cuts longer ones) and how many conditions one guest carries (its
  driver holds one at a time). ``AGENT_GUESTS_MAX`` = ``PAGE_MAX``: the guests in one report.
- URLs (webhooks, provider endpoints), one rule (``url_problem``) every edge calls: at most
  ``URL_MAX`` = 2,048 characters (what browsers and proxies carry), no blank (Unicode Zs), control
  or format character anywhere, the shape ``url_pattern`` writes (http or https in any case, an
  optional user, a host name or an address in brackets, an optional port 0..65535), and split by
  Python's URL parser, which also refuses a bracketed host that is no IPv6 address and a host
  whose characters stand for '/', '?', '#', '@' or ':' under NFKC (``http://a＃b``).
- Host labels: a key of at most ``LABEL_KEY_MAX`` = 253 characters, as Kubernetes writes one
  (``LABEL_KEY``: an optional DNS prefix and '/', then 1-63 letters, digits, '.', '_' or '-'
  starting and ending with a letter or digit, such as bc.dev/cap.instance.placement); a value of
  0 to ``LABEL_VALUE_MAX`` = 63 printable characters.
- Tenants: an id is ``TENANT_ID`` (1-63 lower-case letters, digits or '-', starting with a
  letter); a display name 1 to ``TENANT_NAME_MAX`` = 200 printable characters.
- Integers written as text (query parameters): what OpenAPI's ``integer`` and JSON write, ASCII
  digits with an optional leading '-', no leading zeros, at most ``INTEGER_DIGITS_MAX`` = 19
  digits (int64). Python's ``int()`` also takes blanks, '+', '_' and any script's digits
  (Arabic-Indic, full-width), and any number of leading zeros; none of that is a JSON integer.
- Identifiers (names a caller looks things up by and another caller reads: principals,
  policies, tokens' principals, services' workspaces and names): printable text, in the
  form NFKC normalization leaves alone (no full-width, mathematical or ligature look-alikes),
  whose letters come from one script (Latin with Han, Hiragana, Katakana, Bopomofo or Hangul
  counts as one, as Japanese, Chinese and Korean names mix them). A name mixing Latin and
  Cyrillic, such as "аdmin" with a Cyrillic а, is refused: it passes for another. Names in one
  script that look like another script's (all-Cyrillic "асе") are not judged. Pools, hosts,
  flavors, environments and provider accounts are slugs (ASCII), tenant ids are ASCII too.
- Names: printable text only. Control and format characters (Unicode categories Cc and Cf:
  NUL, newlines, tabs, the bidirectional overrides U+202A–U+202E and isolates U+2066–U+2069,
  zero-width characters), surrogates and the line and paragraph separators are refused, since
  they let a name forge rows or reorder text in a table.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit

from bcfleet.errors import InvalidInputError

INT32_MAX = 2**31 - 1
SHAPE_MAX = 1_000_000
QUOTA_MAX = 1_000_000_000
RATIO_MIN, RATIO_MAX = 0.1, 100.0
HUGEPAGE_SIZE_MAX = 1 << 40  # 1 TiB: larger than any page size a CPU offers
HUGEPAGE_SIZES = tuple(1 << bits for bits in range(12, 41))
"""The page sizes a flavor may ask for: powers of two from 4 KiB to 1 TiB (the FleetConfig and
HTTP schemas list them as an enum, so editors flag any other)."""
HUGEPAGE_COUNT_MAX = INT32_MAX
PAGE_MAX = 1_000
BATCH_MAX = 1_000
WAIT_SECONDS_MAX = 86_400.0
AGENT_MESSAGE_MAX = 1_024
AGENT_CONDITIONS_MAX = 8
AGENT_GUESTS_MAX = PAGE_MAX

INTEGER_DIGITS_MAX = 19
INTEGER_TEXT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.0+)?")
INTEGER_TEXT_WORDS = "an optional leading -, an optional fraction of zeros as in 2.0"
NAME_MAX = 253  # free names (instances, labels, display names, keys), as DNS names
SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")  # pools, hosts, flavors, environments
SLUG_MAX = 63
TENANT_ID = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
TENANT_NAME_MAX = 200
LABEL_KEY = re.compile(
    r"^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$"
)
LABEL_KEY_MAX, LABEL_VALUE_MAX = 253, 63
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")  # an environment variable that holds a token
URL_MAX = 2_048

FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# The same rule for JSON Schema readers (OpenAPI, editors), which have no Unicode categories:
# the C0 and C1 controls, soft hyphen, zero-width and bidi characters, separators and BOM.
NAME_PATTERN = (
    "^[^\\u0000-\\u001f\\u007f-\\u009f\\u00ad\\u061c\\u180e\\u200b-\\u200f"
    "\\u2028-\\u202e\\u2060-\\u206f\\ufeff\\ufff9-\\ufffb]*$"
)
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SHOWN = 40


def forbidden(char: str) -> bool:
    """True for a character a name may not hold (see the module docstring)."""
    return unicodedata.category(char) in FORBIDDEN_CATEGORIES


def _escape(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str) -> str:
    """``text`` with every forbidden character written as an escape (\\n, \\u202e), for display."""
    if text.isprintable():
        return text
    return "".join(_escape(c) if forbidden(c) else c for c in text)


def _large(value: int) -> str:
    """A huge whole number in scientific form with its length: 1.000e+308 (309 digits)."""
    try:
        digits = str(abs(value))
    except ValueError:  # more digits than Python writes out (sys.int_max_str_digits)
        return "a number of thousands of digits"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:4]}e+{len(digits) - 1} (a number of {len(digits)} digits)"


def shown(value: Any) -> str:
    """A value as an error message may quote it: escaped and cut short (the one place messages
    echo a value: validators' messages are rewritten through it too)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**_SHOWN:
        return _large(value)
    text = printable(repr(value))
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _raise(field: str, problem: str | None, bound: str) -> None:
    if problem is not None:
        raise InvalidInputError(problem, {"field": field, "bound": bound})


# ---------------------------------------------------------------------------
# Names


def nul_problem(text: str) -> str | None:
    """Why ``text`` can be neither stored nor used as a path or argument (a NUL), or None."""
    return "NUL characters are not allowed" if "\x00" in text else None


def storable_problem(text: str) -> str | None:
    """Why no database can store ``text`` (a NUL, a lone surrogate), or None: any text's rule."""
    problem = nul_problem(text)
    if problem is not None:
        return problem
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "not valid Unicode"
    return None


def check_storable(value: Any, path: str) -> None:
    """INVALID_INPUT for the first text in ``value`` no database can store (storable_problem):
    the text itself, a key or value of a mapping, an item of a list, tuple or set, at any depth.

    The HTTP server applies it to bodies, paths and queries, the Python API to each text or
    sequence argument of a call (named by its parameter); the CLI checks argv with
    storable_problem itself (cli/main.refuse_unstorable), to name the option.
    """
    if isinstance(value, str) and value.isascii() and "\x00" not in value:
        return  # the common case, answered in C: ASCII without a NUL is any database's text
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            _check_storable_text(item, where)
        elif isinstance(item, dict):
            for key, sub in item.items():
                if isinstance(key, str):
                    _check_storable_text(key, where)
                stack.append((sub, f"{where}.{key}"))
        elif isinstance(item, list | tuple):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))
        elif isinstance(item, set | frozenset):
            stack.extend((sub, where) for sub in item)


def _check_storable_text(text: str, where: str) -> None:
    problem = storable_problem(text)
    if problem is not None:
        raise InvalidInputError(f"{where}: {problem}", {"path": where})


def characters_problem(field: str, text: str) -> str | None:
    """Why ``text`` cannot be shown as one line (a control or format character), or None."""
    if text.isprintable():
        return None
    bad = next((c for c in text if forbidden(c)), None)
    if bad is None:
        return None
    return (
        f"{field} must not contain control or formatting characters "
        f"(found {_escape(bad)} at position {text.index(bad) + 1})"
    )


def text_problem(field: str, value: Any, max_length: int = NAME_MAX) -> str | None:
    """Why ``value`` is not a name of 1..max_length printable characters, or None."""
    if not isinstance(value, str):
        return f"{field} must be text, got {shown(value)}"
    if not value or len(value) > max_length:
        return f"{field} must be 1 to {max_length} characters, got {len(value)}"
    return characters_problem(field, value)


def check_text(field: str, value: Any, max_length: int = NAME_MAX) -> str:
    """``value`` when it is a printable name; INVALID_INPUT naming the field and bound otherwise."""
    _raise(field, text_problem(field, value, max_length), f"1..{max_length} printable characters")
    return str(value)


def check_optional_text(field: str, value: Any, max_length: int = NAME_MAX) -> str | None:
    return None if value is None else check_text(field, value, max_length)


GPU_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
"""A pool's GPU model (L40S, H100): it becomes a meter name, gpu.<model lower-cased>.hours, so
it holds only what a meter name may; the FleetConfig schema states the same pattern."""


def check_gpu_model(value: Any) -> str | None:
    """A pool's GPU model, None or empty for none; INVALID_INPUT naming the pattern otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and GPU_MODEL.fullmatch(value):
        return value
    raise InvalidInputError(
        f"gpuModel {shown(value)} must be 1-63 letters, digits, '.', '_' or '-', starting with a "
        "letter or digit, such as L40S (it names the meter gpu.<model>.hours)",
        {"field": "gpuModel", "value": shown(value), "bound": GPU_MODEL.pattern},
    )


def slug_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` is not a name of a pool, host, flavor or environment, or None."""
    if isinstance(value, str) and SLUG.fullmatch(value):
        return None
    return (
        f"{kind} name {shown(value)} must be 1-{SLUG_MAX} lower-case letters, digits, "
        "'.', '_' or '-', starting with a letter or digit"
    )


def check_slug(kind: str, value: Any) -> str:
    """A pool, host, flavor or environment name; INVALID_INPUT otherwise."""
    problem = slug_problem(kind, value)
    if problem is not None:
        raise InvalidInputError(
            problem, {"field": "name", "value": shown(value), "bound": SLUG.pattern}
        )
    return str(value)


LABEL_KEY_WORDS = (
    "an optional DNS prefix and '/', then 1-63 letters, digits, '.', '_' or '-' starting and "
    f"ending with a letter or digit, at most {LABEL_KEY_MAX} characters in all"
)


def label_problem(key: Any, value: Any) -> str | None:
    """Why a host label cannot be stored, or None: the key LABEL_KEY's form within LABEL_KEY_MAX
    characters, the value 0 to LABEL_VALUE_MAX printable characters."""
    if not isinstance(key, str) or len(key) > LABEL_KEY_MAX or not LABEL_KEY.fullmatch(key):
        return f"label key {shown(key)} must be {LABEL_KEY_WORDS}"
    if not isinstance(value, str):
        return f"label value must be text, got {shown(value)}"
    if len(value) > LABEL_VALUE_MAX:
        return f"label value must be 0 to {LABEL_VALUE_MAX} characters, got {len(value)}"
    return characters_problem("label value", value)


def tenant_id_problem(value: Any) -> str | None:
    """Why ``value`` is not a tenant id (TENANT_ID), or None."""
    if isinstance(value, str) and TENANT_ID.fullmatch(value):
        return None
    return (
        f"tenant id {shown(value)} must be 1-63 lower-case letters, digits and '-', "
        "starting with a letter"
    )


SCRIPT_MIXES = (
    frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "CJK", "BOPOMOFO"}),
    frozenset({"LATIN", "CJK", "HANGUL"}),
)
"""Scripts one name may mix (Japanese, Chinese and Korean names, with Latin)."""


def _script(char: str) -> str | None:
    """The script of a letter, as the first word of its Unicode name (None: not a letter)."""
    if not unicodedata.category(char).startswith("L"):
        return None  # digits, punctuation, marks and symbols belong to no one script
    name = unicodedata.name(char, "")
    return name.split(" ")[0].split("-")[0] or None


def _compatibility(char: str) -> bool:
    """Whether the character is a compatibility form (full-width, superscript, ligature, …)."""
    return unicodedata.normalize("NFKC", char) != unicodedata.normalize("NFC", char)


def identifier_problem(field: str, value: Any, max_length: int = NAME_MAX) -> str | None:
    """Why ``value`` is not an identifier (see the module docstring), or None."""
    problem = text_problem(field, value, max_length)
    if problem is not None:
        return problem
    if unicodedata.normalize("NFKC", value) != unicodedata.normalize("NFC", value):
        at = next(i for i, c in enumerate(value) if _compatibility(c))
        return (
            f"{field} must not contain compatibility forms of other characters (found "
            f"{_escape(value[at])} at position {at + 1}, which stands for "
            f"{shown(unicodedata.normalize('NFKC', value[at]))})"
        )
    scripts = {script for script in map(_script, value) if script is not None}
    if len(scripts) > 1 and not any(scripts <= mix for mix in SCRIPT_MIXES):
        return (
            f"{field} must not mix letters of different scripts ({', '.join(sorted(scripts))}), "
            "as a look-alike of another name does"
        )
    return None


def check_identifier(field: str, value: Any, max_length: int = NAME_MAX) -> str:
    """An identifier: printable, NFKC-stable, one script's letters; INVALID_INPUT otherwise."""
    bound = f"1..{max_length} printable characters, letters of one script"
    _raise(field, identifier_problem(field, value, max_length), bound)
    return str(value)


# ---------------------------------------------------------------------------
# Numbers


def integer_form(text: str) -> bool:
    """Whether ``text`` writes a whole number as JSON writes one that JSON Schema's ``integer``
    takes (ASCII digits, an optional leading '-', no leading zeros, an optional fraction of
    zeros: 2 and 2.0 are both 2), however many digits."""
    return INTEGER_TEXT.fullmatch(text) is not None


def parse_integer(text: str) -> int | None:
    """The integer ``text`` writes in integer_form with at most INTEGER_DIGITS_MAX digits before
    any fraction (what a query parameter may hold), else None."""
    digits = text.partition(".")[0]
    if len(digits.removeprefix("-")) > INTEGER_DIGITS_MAX or not integer_form(text):
        return None
    return int(digits)


def whole_value(value: Any) -> Any:
    """The one reading of a whole number: a float with no fractional part (2.0) is the int it
    equals, as JSON Schema's ``integer`` counts it; anything else is returned unchanged."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def whole_problem(field: str, value: Any, low: int, high: int) -> str | None:
    """Why ``value`` is not a whole number in low..high (2.0 is one: whole_value), or None."""
    value = whole_value(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        return f"{field} must be a whole number from {low} to {high:,}, got {shown(value)}"
    return None


def schema_whole_problem(error: Any) -> str | None:
    """A fraction where a JSON schema wants a bounded integer, in whole_problem's words naming
    the path's last field (what the schema-checked edges say for 2.5), or None otherwise.

    ``error`` is a validator's error, read by its attributes (validator, schema, instance,
    absolute_path, and context: the failures of anyOf's branches, searched too).
    """
    schema, value = error.schema, error.instance
    if error.validator == "type" and isinstance(schema, Mapping) and isinstance(value, float):
        low, high = schema.get("minimum"), schema.get("maximum")
        if schema.get("type") == "integer" and isinstance(low, int) and isinstance(high, int):
            path = list(error.absolute_path)
            field = next((str(p) for p in reversed(path) if isinstance(p, str)), "value")
            return whole_problem(field, value, low, high)
    for branch in error.context or ():
        words = schema_whole_problem(branch)
        if words is not None:
            return words
    return None


def check_whole(field: str, value: Any, low: int, high: int) -> int:
    """``value`` as an int when it is a whole number in low..high (2.0 is 2); INVALID_INPUT
    naming the bound otherwise."""
    _raise(field, whole_problem(field, value, low, high), f"{low}..{high}")
    return int(value)


def _bound(number: float) -> str:
    """A bound as a message writes it: 1,000,000 and 0.1, never 1e+06."""
    if float(number).is_integer():
        return f"{int(number):,}"
    return f"{number:g}"


def number_problem(field: str, value: Any, low: float, high: float) -> str | None:
    """Why ``value`` is not a finite number in low..high (NaN and infinities never are), or None."""
    span = f"from {_bound(low)} to {_bound(high)}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{field} must be a number {span}, got {shown(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{field} must be a finite number {span}, got {value}"
    if not low <= value <= high:
        return f"{field} must be {span}, got {shown(value)}"
    return None


def check_number(field: str, value: Any, low: float, high: float) -> float:
    bound = f"{_bound(low)}..{_bound(high)}".replace(",", "")
    _raise(field, number_problem(field, value, low, high), bound)
    return float(value)


def ratio_problem(field: str, value: Any) -> str | None:
    """Why ``value`` cannot be an overcommit ratio (not a finite number), or None.

    A finite number outside 0.1..100 is no problem: document 000 clamps it (clamp_ratio).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{field} must be a number, got {shown(value)}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{field} must be a finite number, got {value}"
    return None


def clamp_ratio(value: float) -> float:
    """The one overcommit clamp (document 000): a finite ratio kept within 0.1..100."""
    return min(RATIO_MAX, max(RATIO_MIN, float(value)))


def stored_ratio(value: Any) -> float | None:
    """A stored ratio as the API shows it and placement uses it: clamped (a row written before
    the clamp, or straight into the table), or None for what is not a finite number."""
    finite = finite_or_none(value)
    return None if finite is None else clamp_ratio(finite)


def ratio_notice(field: str, value: float) -> str | None:
    """What a caller is told when clamp_ratio changed a ratio, or None when it kept it."""
    kept = clamp_ratio(value)
    if kept == value:
        return None
    return (
        f"{field} must be from {_bound(RATIO_MIN)} to {_bound(RATIO_MAX)}: "
        f"you entered {value:g}, so we keep {kept:g}"
    )


def check_ratio(field: str, value: Any) -> tuple[float, str | None]:
    """An overcommit ratio as stored, clamped to 0.1..100, with the notice saying so (or None).

    NaN, infinities and what is no number are INVALID_INPUT.
    """
    _raise(field, ratio_problem(field, value), "finite")
    return clamp_ratio(value), ratio_notice(field, float(value))


def check_limit(value: Any, high: int = PAGE_MAX) -> int:
    """The length of a page of a list: a whole number from 1 to ``high``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InvalidInputError(f"limit must be between 1 and {high}", {"limit": value})
    return value


def check_count(value: Any) -> int:
    """How many instances one create places: a whole number from 1 to ``BATCH_MAX``."""
    return check_whole("count", value, 1, BATCH_MAX)


def seconds_problem(
    field: str, value: Any, low: float = 0.0, high: float = WAIT_SECONDS_MAX
) -> str | None:
    """Why ``value`` is not a finite number of seconds in low..high (a day by default), or None."""
    return number_problem(field, value, low, high)


def check_seconds(
    field: str, value: Any, low: float = 0.0, high: float = WAIT_SECONDS_MAX
) -> float:
    """A wait, poll interval or timeout in seconds: finite and in low..high, else INVALID_INPUT."""
    return check_number(field, value, low, high)


def finite_or_none(value: Any) -> float | int | None:
    """A stored number as JSON may carry it: NaN, infinities and non-numbers become None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---------------------------------------------------------------------------
# URLs


BLANKS = "\\u0020\\u00a0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000"
"""The blanks (Unicode category Zs) as the inside of a regex character class; no URL holds one."""

PORT = "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
"""A TCP port, 0..65535, written without leading zeros beyond four digits."""


def url_pattern(excluded: str = "") -> str:
    """The shape of a URL url_problem accepts, as a JSON Schema pattern (ECMA-262 and Python read
    it alike): http or https in any case, an optional user, a host (a name, or an address in
    brackets), an optional port, then a path, query or fragment. No part holds a blank, nor a
    character of ``excluded`` (the inside of a character class: the forbidden characters, which
    url_problem checks by their Unicode category and the OpenAPI document spells out)."""
    other = BLANKS + excluded
    host = f"(?:\\[[0-9A-Fa-f:.]+\\]|[^/?#@:\\[\\]{other}]+)"
    return f"^[Hh][Tt][Tt][Pp][Ss]?://(?:[^/?#@{other}]*@)?{host}(?::{PORT})?(?:[/?#][^{other}]*)?$"


_URL_SHAPE = re.compile(url_pattern())

URL_PARSER_WORDS = (
    "a URL parser splits: a host in brackets is an IPv6 address, and no character before the "
    "path stands for '/', '?', '#', '@' or ':'"
)
"""What url_problem asks beyond url_pattern (the OpenAPI document and FleetConfig schema say it)."""

URL_WORDS = (
    "an http or https URL with a host and, if any, a port from 0 to 65535, without blanks, "
    f"control or formatting characters, that {URL_PARSER_WORDS}"
)
"""The whole URL rule in words, for the schemas' descriptions."""


def http_url(value: Any) -> SplitResult | None:
    """``value`` split into its parts when it is an http(s) URL with a host and a valid port
    (or none), else None; never raises, whatever the text."""
    if not isinstance(value, str) or nul_problem(value) is not None:
        return None
    try:
        parts = urlsplit(value)
        _ = parts.port  # a port that is not a number in 0..65535 raises ValueError
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts


def url_problem(field: str, value: Any, max_length: int = URL_MAX) -> str | None:
    """Why ``value`` is not a URL of a webhook or a provider endpoint, or None: the one URL rule
    of the CLI, the HTTP API and FleetConfig (see the module docstring)."""
    if not isinstance(value, str):
        return f"{field} must be an http or https URL, got {shown(value)}"
    if len(value) > max_length:
        return f"{field} must be at most {max_length:,} characters, got {len(value):,}"
    bad = next((c for c in value if forbidden(c) or unicodedata.category(c) == "Zs"), None)
    if bad is not None:
        return (
            f"{field} must not contain blanks, control or formatting characters "
            f"(found {_escape(bad)} at position {value.index(bad) + 1})"
        )
    if _URL_SHAPE.fullmatch(value) is None:
        return (
            f"{field} must be an http or https URL with a host and, if any, a port from 0 to "
            f"65535, got {shown(value)}"
        )
    if http_url(value) is None:
        return f"{field} must be an http or https URL that {URL_PARSER_WORDS}, got {shown(value)}"
    return None
