"""host conditions

Revision ID: 0005
Revises: 0004

hosts.conditions holds a host's conditions as instances hold theirs (a JSON list of
{type, status, reason, message, lastTransitionTime}): InventoryShortfall, set when a host's
latest inventory no longer has what its guests hold. Existing hosts start with none. Run
again (a database stamped back to an older revision), it finds the column and does nothing.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if 'conditions' in {c['name'] for c in sa.inspect(op.get_bind()).get_columns('hosts')}:
        return
    with op.batch_alter_table('hosts', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('conditions', sa.JSON(), nullable=False, server_default=sa.text("'[]'"))
        )


def downgrade() -> None:
    with op.batch_alter_table('hosts', schema=None) as batch_op:
        batch_op.drop_column('conditions')
