"""Revoking API tokens: the one rule (a revoked token keeps its first time), and the live tokens of a host's agents."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Session, col, select

from bcfleet.store.models import ApiToken, Principal


def revoke(session: Session, row: ApiToken, at: datetime) -> datetime:
    """Revoke the token at `at`; one revoked already keeps the time it was first revoked
    (returned either way)."""
    if row.revoked_at is None:
        row.revoked_at = at
        session.add(row)
    return row.revoked_at


def host_agent_tokens(session: Session, node_id: str) -> list[tuple[ApiToken, Principal]]:
    """The unrevoked tokens (expired ones too) of the principals bound to a host, by principal
    name then creation: what removing the host revokes."""
    query = (
        select(ApiToken, Principal)
        .join(Principal, Principal.id == ApiToken.principal_id)  # type: ignore[arg-type]
        .where(Principal.host_id == node_id, col(ApiToken.revoked_at).is_(None))
        .order_by(col(Principal.name), col(ApiToken.created_at), col(ApiToken.id))
    )
    return [(token, principal) for token, principal in session.exec(query).all()]
