"""YAML 1.2's core schema for PyYAML: how plain scalars resolve, as editors' YAML readers do.

PyYAML implements YAML 1.1, where ``yes``, ``off`` and ``on`` are booleans, ``1e1`` is a
string, ``0o17`` is a string, ``010`` is octal and ``2024-01-01`` is a timestamp. The YAML
language server (and every YAML 1.2 reader the FleetConfig JSON Schema meets in an editor)
reads them as strings, a float, an int, the int 10 and a string. This module gives PyYAML's
composer the 1.2 core schema's resolution (YAML 1.2.2, section 10.3.2) so that
``fleet validate`` and an editor agree on every document:

- null: ``null``, ``Null``, ``NULL``, ``~`` and the empty scalar;
- bool: ``true``, ``True``, ``TRUE``, ``false``, ``False``, ``FALSE``;
- int: ``[-+]?[0-9]+``, ``0o[0-7]+``, ``0x[0-9a-fA-F]+``;
- float: ``[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?``, ``.inf``, ``-.inf``, ``.nan``
  (in their three spellings);
- anything else plain is a string; ``<<`` keeps its merge tag so the loader can refuse merge
  keys by name.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_TAG = "tag:yaml.org,2002:"
_resolve: Any = Resolver.resolve  # PyYAML's own, by its implicit resolvers (untyped)


class CoreResolver(Resolver):
    """Resolves plain scalars by YAML 1.2's core schema instead of YAML 1.1's rules.

    A plain scalar's tag depends on its text alone, so each text is resolved once a document
    (a 10,000-object FleetConfig repeats a few hundred texts over 100,000 scalars, and the
    regular expressions cost a fifth of composing it).
    """

    yaml_implicit_resolvers: dict[Any, Any] = {}

    def __init__(self) -> None:
        super().__init__()
        self._plain_tags: dict[str, str] = {}

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is ScalarNode and implicit[0]:
            tag = self._plain_tags.get(value)
            if tag is None:
                tag = self._plain_tags[value] = _resolve(self, kind, value, implicit)
            return tag
        return _resolve(self, kind, value, implicit)


for tag, pattern, first in (
    ("null", NULL, ["~", "n", "N", ""]),
    ("bool", BOOL, list("tTfF")),
    ("int", INT, list("-+0123456789")),
    ("float", FLOAT, list("-+.0123456789")),
    ("merge", re.compile(r"^<<$"), ["<"]),  # not 1.2 core, but named so it is refused clearly
):
    CoreResolver.add_implicit_resolver(_TAG + tag, pattern, first)


class CoreConstructor(SafeConstructor):
    """Builds Python values from 1.2 core scalars (0o octal, 0x hex, no sexagesimal)."""

    def construct_yaml_bool(self, node: ScalarNode) -> bool:
        return str(self.construct_scalar(node)).lower() == "true"

    def construct_yaml_int(self, node: ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text, 10)

    def construct_yaml_float(self, node: ScalarNode) -> float:
        text = str(self.construct_scalar(node)).lower()
        if text.endswith(".inf"):
            return -math.inf if text.startswith("-") else math.inf
        if text == ".nan":
            return math.nan
        return float(text)


CoreConstructor.add_constructor(_TAG + "bool", CoreConstructor.construct_yaml_bool)  # type: ignore[type-var]
CoreConstructor.add_constructor(_TAG + "int", CoreConstructor.construct_yaml_int)  # type: ignore[type-var]
CoreConstructor.add_constructor(_TAG + "float", CoreConstructor.construct_yaml_float)  # type: ignore[type-var]

_Parser: Any = getattr(yaml, "cyaml", None) and getattr(yaml.cyaml, "CParser", None)
if _Parser is not None:

    class CoreLoader(_Parser, CoreConstructor, CoreResolver):  # type: ignore[misc]
        """libyaml's parser with the 1.2 core schema."""

        def __init__(self, stream: Any) -> None:
            _Parser.__init__(self, stream)
            CoreConstructor.__init__(self)
            CoreResolver.__init__(self)

else:  # pragma: no cover - PyYAML built without libyaml

    class CoreLoader(  # type: ignore[no-redef]
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,
        yaml.composer.Composer,
        CoreConstructor,
        CoreResolver,
    ):
        """PyYAML's pure-Python parser with the 1.2 core schema."""

        def __init__(self, stream: Any) -> None:
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            CoreConstructor.__init__(self)
            CoreResolver.__init__(self)
