"""instance list indexes: instances.list filtered, sorted and paged in SQL

Revision ID: 0008
Revises: 0007

The console's Instances view and `fleet instances list --sort` page through 50,000 instances:
ordered by name, by creation time or by state, each page walks one of these indexes instead of
sorting every row. ix_instances_search (name, id, state, created_at) also serves a search by
name or id, its count and its page's ids from the index alone; ix_instances_created (created_at,
id, name, state) the newest first, checking a search on the index's entries as it walks; and
(state, created_at, id) the count of the live instances and the pending ones that come first.

An index is created only where it is missing: a database set back to an earlier revision to be
repaired (as SCHEMA_MISMATCH advises) runs this again.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = 'instances'
INDEXES = {
    'ix_instances_search': ['name', 'id', 'state', 'created_at'],
    'ix_instances_created': ['created_at', 'id', 'name', 'state'],
    'ix_instances_state_created_id': ['state', 'created_at', 'id'],
}


def upgrade() -> None:
    present = {i['name'] for i in sa.inspect(op.get_bind()).get_indexes(TABLE)}
    for name, columns in INDEXES.items():
        if name not in present:
            op.create_index(name, TABLE, columns, unique=False)


def downgrade() -> None:
    for name in INDEXES:
        op.drop_index(name, table_name=TABLE)
