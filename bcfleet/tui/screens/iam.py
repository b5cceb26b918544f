"""IAM tokens (`:tokens`) and policies (`:policies`) of every tenant you may see.

A token row says whose it is, its role, when it expires and its state; the token itself
and its hash are never read (iam.tokens.list does not carry them), only the last four
characters the API keeps to tell tokens apart are not shown either: the token's id does
that. Ctrl+D revokes the token under the cursor.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, Cell, age, croppable, short_id, short_time
from bcfleet.tui.screens.objects import ObjectsView
from bcfleet.tui.widgets.keyed_table import Column, Row

TOKEN_STYLE = {"active": "green", "expired": "yellow", "revoked": "dim"}


def token_row(token: Mapping[str, Any], now: datetime) -> Row:
    state = str(token.get("state") or DASH)
    since, seconds = age(token.get("createdAt"), now, short=True)
    expires = short_time(token.get("expiresAt")) if token.get("expiresAt") else "never"
    cells: tuple[Cell, ...] = (
        str(token.get("tenantId") or DASH),
        str(token.get("principal") or DASH),
        str(token.get("role") or DASH),
        Text(state, style=TOKEN_STYLE.get(state, "")),
        short_id(str(token["id"])),
        expires,
        since,
    )
    sort = (cells[0], cells[1], cells[2], state, str(cells[4]), token.get("expiresAt") or "~",
            seconds)  # fmt: skip
    return Row(str(token["id"]), cells, sort=sort)


class TokensView(ObjectsView):
    TITLE = "Tokens"
    ABOUT = (
        "Every tenant's API tokens: the principal and role each acts as, its state (active, "
        "expired, revoked), its id, when it expires and its age. The token, its hash and its "
        "last characters are never shown. Ctrl+D revokes one, naming the host "
        "agent it serves or this console's own session first."
    )
    COLUMNS = (
        Column("tenant", "TENANT", give_way=2, name=True),
        Column("principal", "PRINCIPAL", name=True),
        Column("role", "ROLE"),
        Column("state", "STATE"),
        Column("id", "ID", give_way=3),
        Column("expires", "EXPIRES", give_way=1),
        Column("age", "AGE", give_way=4),
    )
    NOUN = ("token", "tokens")
    ACTIONS = actions_for("tokens")
    READ = "tokens"
    row_of = staticmethod(token_row)

    def row_name(self, key: str) -> str:
        item = self.item(key) or {}
        return f"{short_id(key)} of {item.get('principal')}" if item else short_id(key)


def policy_row(policy: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(policy.get("createdAt"), now, short=True)
    statements = policy.get("statements") or []
    actions = sorted({a for s in statements for a in _listed(s.get("actions"))})
    cells: tuple[Cell, ...] = (
        str(policy.get("tenantId") or DASH),
        str(policy["name"]),
        str(len(statements)),
        croppable(", ".join(policy.get("attachedTo") or ()) or DASH),
        croppable(", ".join(actions) or DASH),
        since,
    )
    sort = (cells[0], cells[1], len(statements), str(cells[3]), str(cells[4]), seconds)
    return Row(str(policy["id"]), cells, sort=sort)


def _listed(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value or ()]


class PoliciesView(ObjectsView):
    TITLE = "Policies"
    ABOUT = (
        "Every tenant's IAM policies: how many statements, the principals each is attached "
        "to and the actions its statements name. Enter or d shows the statements in full."
    )
    COLUMNS = (
        Column("tenant", "TENANT", give_way=2, name=True),
        Column("name", "NAME", name=True),
        Column("statements", "STMTS", give_way=1),
        Column("attached", "ATTACHED TO", crop_to=14),
        Column("actions", "ACTIONS", crop_to=16),
        Column("age", "AGE", give_way=3),
    )
    NOUN = ("policy", "policies")
    READ = "policies"
    row_of = staticmethod(policy_row)
