"""agent principals bound to one host

Revision ID: 0004
Revises: 0003

principals.host_id: the host (node id) a principal of the agent role is bound to; NULL for
every other role, so existing principals keep what they had. No foreign key: a removed host
leaves its agent bound to a node that no longer exists, which allows nothing.

The column is added only where it is missing: a database set back to 0002 to be repaired (as
SCHEMA_MISMATCH advises) runs this again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    columns = {c["name"] for c in sa.inspect(op.get_bind()).get_columns("principals")}
    if "host_id" in columns:
        return
    with op.batch_alter_table('principals', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('host_id', sqlmodel.sql.sqltypes.AutoString(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('principals', schema=None) as batch_op:
        batch_op.drop_column('host_id')
