"""what host agents report: guests' conditions and balloons, the host's health

Revision ID: 0006
Revises: 0005

instances.agent_conditions (JSON list) and instances.balloon_bytes (BIGINT): a guest's
conditions and current balloon as its host's agent last reported them, kept apart from the
server's own instances.conditions. hosts.agent_health (JSON): ok or degraded, with a message
and a time. All nullable, so existing rows keep what they had (NULL reads as nothing reported).

Each column is added only where it is missing: a database set back to 0002 to be repaired (as
SCHEMA_MISMATCH advises) runs this again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = {
    'instances': (
        ('agent_conditions', sa.JSON()),
        ('balloon_bytes', sa.BigInteger()),
    ),
    'hosts': (('agent_health', sa.JSON()),),
}


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, columns in COLUMNS.items():
        present = {c["name"] for c in inspector.get_columns(table)}
        missing = [(name, kind) for name, kind in columns if name not in present]
        if not missing:
            continue
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, kind in missing:
                batch_op.add_column(sa.Column(name, kind, nullable=True))


def downgrade() -> None:
    for table, columns in COLUMNS.items():
        with op.batch_alter_table(table, schema=None) as batch_op:
            for name, _kind in columns:
                batch_op.drop_column(name)
