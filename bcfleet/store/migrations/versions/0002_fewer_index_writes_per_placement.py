"""fewer index writes per placement

Revision ID: 0002
Revises: 0001

ix_node_resources_resource_free (resource, capacity, allocated) served no query (each reads a
host's rows by node_id, the primary key's first column), yet every claim rewrote three of its
entries, and on PostgreSQL it made each claim's UPDATE write new entries in every index of the
table instead of updating the row in place (HOT). ix_instances_tenant_id repeated the first
column of the (tenant_id, idempotency_key) unique index, which serves the same lookups, and
every new instance wrote both. ix_instances_allocation_id served no query either (the reads
that join an instance to its allocation look the allocation up by its own id).
"""

from collections.abc import Sequence

from alembic import op

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('node_resources', schema=None) as batch_op:
        batch_op.drop_index('ix_node_resources_resource_free')
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.drop_index('ix_instances_tenant_id')
        batch_op.drop_index('ix_instances_allocation_id')


def downgrade() -> None:
    with op.batch_alter_table('instances', schema=None) as batch_op:
        batch_op.create_index('ix_instances_allocation_id', ['allocation_id'], unique=False)
        batch_op.create_index('ix_instances_tenant_id', ['tenant_id'], unique=False)
    with op.batch_alter_table('node_resources', schema=None) as batch_op:
        batch_op.create_index(
            'ix_node_resources_resource_free', ['resource', 'capacity', 'allocated'], unique=False
        )
