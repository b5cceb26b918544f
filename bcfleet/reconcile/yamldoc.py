"""Parse YAML into plain data while remembering the line and column of every key and value.

The loader composes the node graph (``yaml.compose``) instead of loading, so each
value keeps its mark; it rejects duplicate keys, non-string keys, merge keys, tags
beyond YAML's core types and overlong number literals, and reports each problem with
its position. ``yamlguard.guard`` runs first, so nothing composed nests past
``MAX_DEPTH`` or expands past ``MAX_VALUES``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from bcfleet.domain.document_limits import (
    MAX_NUMBER_CHARS,
    MAX_PROBLEMS,
    line_column,
    number_too_long,
)
from bcfleet.reconcile.yaml12 import CoreConstructor, CoreLoader
from bcfleet.reconcile.yamlguard import Refused, guard

PathKey = tuple[str | int, ...]

_LOADER: Any = CoreLoader  # YAML 1.2 core resolution, as editors read the document
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_NUMBER_TAGS = frozenset((_INT_TAG, "tag:yaml.org,2002:float"))
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("null", "bool", "int", "float", "str", "timestamp", "binary")
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Position:
    line: int  # 1-based
    column: int  # 1-based


START = Position(1, 1)


@dataclass(frozen=True)
class Problem:
    """Something wrong in a document: at a path (its key when ``at_key``) or at a position."""

    path: PathKey
    message: str
    at_key: bool = False
    position: Position | None = None


class YamlProblems(Exception):
    """The document is not usable YAML; ``problems`` says where and why."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(problems[0].message if problems else "invalid YAML")
        self.problems = problems


@dataclass
class ParsedDocument:
    """Plain data, and the node graph it came from, so positions are looked up only when needed."""

    data: Any
    root: Node | None = None
    _keys: dict[int, dict[str, tuple[Node, Node]]] = field(default_factory=dict, repr=False)

    def locate(self, path: PathKey, *, at_key: bool = False) -> Position:
        """Where ``path`` is written (its key when ``at_key``), or its nearest written ancestor."""
        if self.root is None:
            return START
        node, key_node = self.root, None
        for part in path:
            child, key_node = self._child(node, part)
            if child is None:
                return _mark_position(node.start_mark)
            node = child
        if at_key and key_node is not None:
            return _mark_position(key_node.start_mark)
        return _mark_position(node.start_mark)

    def _child(self, node: Node, part: str | int) -> tuple[Node | None, Node | None]:
        """The value node under ``part`` and, in a mapping, its key node (a mapping's keys are
        indexed on first use, so locating many problems in a large mapping stays linear)."""
        if isinstance(node, MappingNode) and isinstance(part, str):
            keys = self._keys.get(id(node))
            if keys is None:
                keys = {}
                for key_node, value_node in node.value:
                    if isinstance(key_node, ScalarNode):
                        keys.setdefault(key_node.value, (value_node, key_node))
                self._keys[id(node)] = keys
            value_node, key_node = keys.get(part, (None, None))
            return value_node, key_node
        if isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            return node.value[part], None
        return None, None


def json_path(path: PathKey) -> str:
    """``("flavors", 2, "vcpu")`` → ``$.flavors[2].vcpu``."""
    parts = ["$"]
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            parts.append(f".{part}")
        else:
            parts.append(f"[{json.dumps(part)}]")
    return "".join(parts)


def describe(value: object) -> str:
    """A value as a message names it: its JSON type, and the value when short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"a string ({shown!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, bytes):
        return "binary data"
    return f"a {type(value).__name__} ({value}); quote it to make it a string"


def position_in_text(text: str, index: int) -> Position:
    """The line and column of a character offset."""
    return Position(*line_column(text, index))


def _mark_position(mark: Any) -> Position:
    return Position(int(mark.line) + 1, int(mark.column) + 1)


def _syntax_problem(exc: yaml.MarkedYAMLError, text: str) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    problem, context = exc.problem or "", exc.context or ""
    if mark is not None and text[mark.index : mark.index + 1] == "\t":
        problem = f"{problem}: a tab (YAML indents with spaces)"
    if problem.startswith("but ") and context:
        message = f"{context}, {problem}"
    elif context and exc.context_mark is not None:
        where = _mark_position(exc.context_mark)
        message = f"{problem} ({context} at line {where.line}, column {where.column})"
    else:
        message = problem or context or "invalid document"
    if mark is None:
        position = START
    elif mark.index >= len(text):  # libyaml puts the end of the stream on a line of its own
        position = position_in_text(text, len(text))
    else:
        position = _mark_position(mark)
    return Problem((), f"YAML syntax error: {message}", position=position)


def _compose(text: str) -> Node | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = position_in_text(text, exc.start)
        raise YamlProblems([Problem((), "text that is not valid Unicode", position=where)]) from exc
    try:
        guard(text, _LOADER)
        node: Node | None = yaml.compose(text, Loader=_LOADER)
    except Refused as exc:
        raise YamlProblems([Problem((), exc.message, position=_mark_position(exc.mark))]) from None
    except yaml.MarkedYAMLError as exc:
        raise YamlProblems([_syntax_problem(exc, text)]) from exc
    except yaml.reader.ReaderError as exc:
        where = position_in_text(text, exc.position)
        raise YamlProblems(
            [Problem((), f"YAML syntax error: {exc.reason}", position=where)]
        ) from exc
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError) as exc:
        # a YAMLError without a mark, or what a parser raised on an escape it cannot decode
        raise YamlProblems([Problem((), f"YAML syntax error: {exc}", position=START)]) from exc
    return node


class _Converter:
    """Turns a node graph into dicts, lists and scalars, collecting problems with their paths.

    The current path is one list pushed and popped as the walk goes, so a large
    document costs no per-node path objects.
    """

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.constructor = CoreConstructor()
        self.path: list[str | int] = []

    def problem(self, node: Node, message: str, *extra: str) -> None:
        if len(self.problems) > MAX_PROBLEMS:  # one past the limit tells the caller it stopped
            return
        where = _mark_position(node.start_mark)
        self.problems.append(Problem((*self.path, *extra), message, position=where))

    def convert(self, node: Node) -> Any:
        if isinstance(node, MappingNode):
            return self.mapping(node)
        if isinstance(node, SequenceNode):
            return self.sequence(node)
        return self.scalar(node)

    def sequence(self, node: SequenceNode) -> list[Any]:
        if node.tag != _SEQ_TAG:
            self.problem(node, f"unsupported YAML tag {node.tag}")
        result = []
        path = self.path
        for index, item in enumerate(node.value):
            path.append(index)
            result.append(self.convert(item))
            path.pop()
        return result

    def scalar(self, node: Node) -> Any:
        tag, text = node.tag, node.value
        if tag == _STR_TAG:
            return text
        if tag in _NUMBER_TAGS and len(text) > MAX_NUMBER_CHARS:
            self.problem(node, number_too_long(len(text)))
            return None
        if tag == _INT_TAG and text.isdigit() and text[0] != "0":
            return int(text)
        if tag not in _SCALAR_TAGS:
            self.problem(node, f"unsupported YAML tag {tag}")
            return None
        try:
            return CoreConstructor.yaml_constructors[tag](self.constructor, node)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            self.problem(node, f"cannot read this {tag.rsplit(':', 1)[-1]}: {exc}")
            return None

    def mapping(self, node: MappingNode) -> dict[str, Any]:
        if node.tag != _MAP_TAG:
            self.problem(node, f"unsupported YAML tag {node.tag}")
        result: dict[str, Any] = {}
        first: dict[str, Node] = {}
        path = self.path
        for key_node, value_node in node.value:
            key = self.key(key_node)
            if key is None:
                continue
            if key in first:
                where = _mark_position(first[key].start_mark)
                message = (
                    f"duplicate key {key!r} (first written at line {where.line}, "
                    f"column {where.column})"
                )
                self.problem(key_node, message, key)
                continue
            first[key] = key_node
            path.append(key)
            result[key] = self.convert(value_node)
            path.pop()
        return result

    def key(self, node: Node) -> str | None:
        if node.tag == _MERGE_TAG:
            self.problem(node, "merge keys (<<) are not supported; write the fields out")
            return None
        if not isinstance(node, ScalarNode):
            self.problem(node, "a key must be a string, not a collection")
            return None
        reported = len(self.problems)
        value = self.scalar(node)
        if not isinstance(value, str):
            if len(self.problems) == reported:
                self.problem(node, f"a key must be a string, got {describe(value)}")
            return None
        return value


def parse_yaml(text: str) -> ParsedDocument:
    """Parse one YAML document; raises YamlProblems listing every problem found."""
    root = _compose(text)
    if root is None:
        raise YamlProblems([Problem((), "the document is empty", position=START)])
    converter = _Converter()
    try:
        document = ParsedDocument(converter.convert(root), root)
    except RecursionError as exc:
        raise YamlProblems([Problem((), "the document nests too deeply", position=START)]) from exc
    if converter.problems:
        raise YamlProblems(converter.problems)
    return document
