"""catalog revision: a counter bumped by triggers on every write to tenants, pools, flavors and pool_offers

Revision ID: 0009
Revises: 0008

catalog_revision holds one row (id 1) whose revision the database bumps on every INSERT, UPDATE
or DELETE of the tables a placement's lookup reads (store/catalog_revision.py: on SQLite a row
trigger for each, on PostgreSQL a constraint trigger deferred to COMMIT, once a transaction, and
a TRUNCATE trigger). A fleet handle keeps what the lookup found and uses it while the revision
it reads is the one it was found under.

Everything is created only where it is missing: a database set back to 0002 to be repaired (as
SCHEMA_MISMATCH advises) runs this again, and an existing counter keeps its number.
"""

from collections.abc import Sequence

from alembic import op

from bcfleet.store.catalog_revision import install_catalog_revision, remove_catalog_revision

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    install_catalog_revision(op.get_bind())


def downgrade() -> None:
    remove_catalog_revision(op.get_bind())
