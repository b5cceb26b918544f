"""Render a Plan as text in Terraform's conventions or as JSON; `fleet plan` prints either.

Text symbols: ``+`` create, ``~`` update in place, ``-`` delete, ``x`` archive,
``>`` adopt. Updates show only the changed fields; deletions and archives say why.
JSON follows Terraform's plan representation (``format_version``,
``resource_changes[]`` with ``address``, ``actions``, ``before``, ``after``,
``action_reason``) plus ``summary``, ``applyable``, ``warnings`` and ``errors``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bcfleet.reconcile.actions import Action, Attrs, Credits, Plan, Summary, thaw
from bcfleet.reconcile.attrs import diff, leaves

FORMAT_VERSION = "1.0"
NO_CHANGES = "No changes. The fleet matches the configuration."

_SYMBOLS = {"create": "+", "update": "~", "delete": "-", "archive": "x", "adopt": ">"}
_LEGEND = {
    "create": "create",
    "update": "update in place",
    "delete": "delete",
    "archive": "archive (hidden from new instances; instances using it keep running)",
    "adopt": "adopt (brought under FleetConfig management)",
}
_HEADLINES = {
    ("create",): "will be created",
    ("update",): "will be updated in place",
    ("delete",): "will be deleted",
    ("archive",): "will be archived",
    ("adopt",): "will be adopted",
    ("adopt", "update"): "will be adopted and updated in place",
}


def format_value(value: Any) -> str:
    """A value as HCL-ish text: strings quoted, true/false/null, whole floats without ``.0``."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, Mapping | tuple | list):
        return json.dumps(thaw(value), separators=(", ", ": "))
    return json.dumps(value)


def format_count(value: int) -> str:
    return f"{value:,}"


def summary_line(summary: Summary) -> str:
    """``Plan: 3 to add, 1 to change, 0 to delete.``, with adoptions and archives if any."""
    parts = [f"{summary.add} to add", f"{summary.change} to change", f"{summary.delete} to delete"]
    if summary.adopt:
        parts.insert(0, f"{summary.adopt} to adopt")
    if summary.archive:
        parts.append(f"{summary.archive} to archive")
    return f"Plan: {', '.join(parts)}."


def render_text(plan: Plan) -> str:
    """The plan as an operator reads it in a terminal or a CI log."""
    lines: list[str] = []
    changes = plan.changes
    if changes:
        lines += _legend(changes)
        lines += ["bcfleet will perform the following actions:", ""]
        for action in changes:
            lines += _block(action)
            lines.append("")
        lines.append(summary_line(plan.summary))
    else:
        lines.append(NO_CHANGES)
    for warning in plan.warnings:
        lines += ["", f"Warning: {warning.message}"]
    for error in plan.errors:
        lines += ["", f"Error [{error.code}]: {error.message}"]
    if plan.errors:
        lines += ["", f"The plan cannot be applied: {len(plan.errors)} error(s)."]
    return "\n".join(lines) + "\n"


def _legend(changes: tuple[Action, ...]) -> list[str]:
    used = {kind for action in changes for kind in action.actions}
    lines = ["Resource actions are indicated with the following symbols:"]
    lines += [f"  {_SYMBOLS[kind]} {_LEGEND[kind]}" for kind in _LEGEND if kind in used]
    return [*lines, ""]


def _block(action: Action) -> list[str]:
    headline = _HEADLINES.get(action.actions, "will change")
    lines = [f"  # {action.address} {headline}"]
    if action.reason:
        lines.append(f"  # ({action.reason})")
    symbol = _SYMBOLS[action.actions[0]]
    body = _body(action)
    if not body:
        lines.append(f"  {symbol} {action.address}")
        return lines
    lines.append(f"  {symbol} {action.address} {{")
    lines += [f"      {line}" for line in body]
    lines.append("    }")
    return lines


def _body(action: Action) -> list[str]:
    if action.actions == ("create",):
        rows = [("+", path, format_value(value)) for path, value in _leaves(action.after)]
    elif action.actions == ("delete",):
        rows = [("-", path, format_value(value)) for path, value in _leaves(action.before)]
    else:
        changes = action.changes or tuple(diff(action.before or {}, action.after or {}))
        rows = [
            ("~", c.path, f"{format_value(c.before)} -> {format_value(c.after)}") for c in changes
        ]
    width = max((len(path) for _, path, _ in rows), default=0)
    lines = [f"{sign} {path.ljust(width)} = {text}" for sign, path, text in rows]
    lines += _capacity_lines(action) + _credits_lines(action.credits)
    return lines


def _leaves(attrs: Attrs | None) -> list[tuple[str, Any]]:
    """Every non-null leaf of an object, nested maps flattened to dotted paths."""
    if not attrs:
        return []
    return [(path, value) for path, value in leaves(attrs) if value is not None and value != {}]


def _capacity_lines(action: Action) -> list[str]:
    if not action.capacity:
        return []
    parts = ", ".join(
        f"{c.resource} {format_count(c.before)} -> {format_count(c.after)}" for c in action.capacity
    )
    return [f"# pool capacity: {parts}"]


def _credits_lines(credits: Credits | None) -> list[str]:
    if credits is None:
        return []
    parts = [
        f"{line.size} {format_count(line.before)} -> {format_count(line.after)}"
        for line in credits.sizes
        if line.before or line.after
    ]
    total = f"total {format_count(credits.total_before)} -> {format_count(credits.total_after)}"
    return [f"# spare instances, credits per month: {', '.join([*parts, total])}"]


def render_json(plan: Plan) -> dict[str, Any]:
    """The plan as one JSON document (``fleet plan --json``, ``--out``)."""
    summary = plan.summary
    return {
        "format_version": FORMAT_VERSION,
        "config_digest": plan.config_digest,
        "state_revision": plan.state_revision,
        "resource_changes": [_change_json(action) for action in plan.actions],
        "summary": {
            "adopt": summary.adopt,
            "add": summary.add,
            "change": summary.change,
            "delete": summary.delete,
            "archive": summary.archive,
        },
        "applyable": plan.applyable,
        "warnings": [warning.to_json() for warning in plan.warnings],
        "errors": [error.to_json() for error in plan.errors],
    }


def _change_json(action: Action) -> dict[str, Any]:
    credits = action.credits
    return {
        "address": action.address,
        "type": action.type,
        "actions": list(action.actions),
        "before": thaw(action.before),
        "after": thaw(action.after),
        "action_reason": action.reason or None,
        "changes": [
            {"path": c.path, "before": thaw(c.before), "after": thaw(c.after)}
            for c in action.changes
        ],
        "capacity": [
            {"resource": c.resource, "before": c.before, "after": c.after} for c in action.capacity
        ],
        "credits": None
        if credits is None
        else {
            "sizes": [
                {"size": line.size, "before": line.before, "after": line.after}
                for line in credits.sizes
            ],
            "total": {"before": credits.total_before, "after": credits.total_after},
        },
    }


def render_json_text(plan: Plan) -> str:
    return json.dumps(render_json(plan), indent=2) + "\n"
