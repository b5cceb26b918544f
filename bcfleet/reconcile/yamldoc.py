"""Parse YAML into plain data while remembering the line and column of every key and value.

The loader composes the node graph (``yaml.compose``) instead of loading, so each
value keeps its mark; it rejects duplicate keys, non-string keys, merge keys and
tags beyond YAML's core types, and reports each problem with its position.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

PathKey = tuple[str | int, ...]

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MAX_DEPTH = 64
_MAX_NODES = 2_000_000  # aliases can make a small text expand without bound
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
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
    data: Any
    values: dict[PathKey, Position] = field(default_factory=dict)
    keys: dict[PathKey, Position] = field(default_factory=dict)

    def locate(self, path: PathKey, *, at_key: bool = False) -> Position:
        """Where ``path`` is written, or its nearest written ancestor."""
        if at_key and path in self.keys:
            return self.keys[path]
        probe = path
        while probe:
            if probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
        return self.values.get((), START)


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
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return Position(line, index - (text.rfind("\n", 0, index) + 1) + 1)


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
    position = _mark_position(mark) if mark is not None else START
    return Problem((), f"YAML syntax error: {message}", position=position)


def _compose(text: str) -> Node | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        where = position_in_text(text, exc.start)
        raise YamlProblems([Problem((), "text that is not valid Unicode", position=where)]) from exc
    try:
        node: Node | None = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        raise YamlProblems([_syntax_problem(exc, text)]) from exc
    except yaml.reader.ReaderError as exc:
        where = position_in_text(text, exc.position)
        raise YamlProblems(
            [Problem((), f"YAML syntax error: {exc.reason}", position=where)]
        ) from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise YamlProblems([Problem((), f"YAML syntax error: {exc}", position=START)]) from exc
    return node


class _Converter:
    """Turns a node graph into dicts, lists and scalars, filling a ParsedDocument's positions."""

    def __init__(self, document: ParsedDocument) -> None:
        self.document = document
        self.problems: list[Problem] = []
        self.constructor = SafeConstructor()
        self.nodes = 0

    def problem(self, node: Node, path: PathKey, message: str) -> None:
        self.problems.append(Problem(path, message, position=_mark_position(node.start_mark)))

    def convert(self, node: Node, path: PathKey) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_NODES:
            raise YamlProblems([Problem(path, "the document expands too far (aliases)")])
        if len(path) > _MAX_DEPTH:
            raise YamlProblems([Problem(path, "the document nests too deeply")])
        self.document.values[path] = _mark_position(node.start_mark)
        if isinstance(node, MappingNode):
            return self.mapping(node, path)
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                self.problem(node, path, f"unsupported YAML tag {node.tag}")
            return [self.convert(item, (*path, index)) for index, item in enumerate(node.value)]
        return self.scalar(node, path)

    def scalar(self, node: Node, path: PathKey) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self.problem(node, path, f"unsupported YAML tag {node.tag}")
            return None
        construct = SafeConstructor.yaml_constructors[node.tag]
        try:
            return construct(self.constructor, node)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            self.problem(node, path, f"cannot read this {node.tag.rsplit(':', 1)[-1]}: {exc}")
            return None

    def mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any]:
        if node.tag != _MAP_TAG:
            self.problem(node, path, f"unsupported YAML tag {node.tag}")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = self.key(key_node, path)
            if key is None:
                continue
            key_path = (*path, key)
            if key in result:
                first = self.document.keys[key_path]
                self.problem(
                    key_node,
                    key_path,
                    f"duplicate key {key!r} (first written at line {first.line}, "
                    f"column {first.column})",
                )
                continue
            self.document.keys[key_path] = _mark_position(key_node.start_mark)
            result[key] = self.convert(value_node, key_path)
        return result

    def key(self, node: Node, path: PathKey) -> str | None:
        if node.tag == _MERGE_TAG:
            self.problem(node, path, "merge keys (<<) are not supported; write the fields out")
            return None
        if not isinstance(node, ScalarNode):
            self.problem(node, path, "a key must be a string, not a collection")
            return None
        value = self.scalar(node, path)
        if not isinstance(value, str):
            if value is not None or node.tag in _SCALAR_TAGS:
                self.problem(node, path, f"a key must be a string, got {describe(value)}")
            return None
        return value


def parse_yaml(text: str) -> ParsedDocument:
    """Parse one YAML document; raises YamlProblems listing every problem found."""
    root = _compose(text)
    document = ParsedDocument(data=None)
    if root is None:
        raise YamlProblems([Problem((), "the document is empty", position=START)])
    converter = _Converter(document)
    try:
        document.data = converter.convert(root, ())
    except RecursionError as exc:
        raise YamlProblems([Problem((), "the document nests too deeply", position=START)]) from exc
    if converter.problems:
        raise YamlProblems(converter.problems)
    return document
