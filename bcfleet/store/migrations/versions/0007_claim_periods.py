"""claim periods: an allocation's earlier claims, so usage splits a window where a resize changed them

Revision ID: 0007
Revises: 0006

claim_periods holds, per resize, the vcpu and memoryGiB an allocation claimed before it and the
interval [started_at, ended_at) they held. vps.usage meters each period at its own claims.

The table and its index are created only where they are missing: a database set back to 0002
to be repaired (as SCHEMA_MISMATCH advises) runs this again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import bcfleet.store.types

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = 'claim_periods'
INDEX = 'ix_claim_periods_allocation_id'


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if TABLE not in inspector.get_table_names():
        op.create_table(
            TABLE,
            sa.Column('id', bcfleet.store.types.BigCounter(), nullable=False),
            sa.Column('allocation_id', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
            sa.Column('vcpu', sa.Integer(), nullable=False),
            sa.Column('memory_gib', sa.Integer(), nullable=False),
            sa.Column('started_at', bcfleet.store.types.UTCDateTime(), nullable=False),
            sa.Column('ended_at', bcfleet.store.types.UTCDateTime(), nullable=False),
            sa.ForeignKeyConstraint(['allocation_id'], ['allocations.id'], ),
            sa.PrimaryKeyConstraint('id'),
        )
    indexes = {i['name'] for i in sa.inspect(op.get_bind()).get_indexes(TABLE)}
    if INDEX not in indexes:
        with op.batch_alter_table(TABLE, schema=None) as batch_op:
            batch_op.create_index(INDEX, ['allocation_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table(TABLE, schema=None) as batch_op:
        batch_op.drop_index(INDEX)
    op.drop_table(TABLE)
