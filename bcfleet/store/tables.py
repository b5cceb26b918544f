"""Every table as a SQLAlchemy Core Table, for reads that run without SQLModel and the ORM.

Generated from the SQLModel classes (bcfleet/store/models) by `python -m bcfleet.store.table_source`;
tests/store/test_core_tables.py fails when the two differ. Columns, their types and primary keys
only: the schema is created and migrated from the classes, never from these tables.
"""

# Generated: edit the SQLModel classes and run `python -m bcfleet.store.table_source` instead.

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    Integer,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
)

from bcfleet.store.types import (
    BigCounter,
    DeliveryStateColumn,
    HostStateColumn,
    InstanceStateColumn,
    PoolKindColumn,
    ReservationStateColumn,
    UTCDateTime,
)

METADATA = MetaData()
"""Their own metadata: never created, never migrated."""


ALLOCATIONS = Table(
    "allocations",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("node_id", String()),
    Column("consumer_kind", String()),
    Column("consumer_id", String()),
    Column("tenant_id", String()),
    Column("pool_id", String()),
    Column("claims", JSON()),
    Column("starts_at", UTCDateTime()),
    Column("ends_at", UTCDateTime()),
    Column("released_at", UTCDateTime()),
    Column("release_reason", String()),
)


API_TOKENS = Table(
    "api_tokens",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("principal_id", String()),
    Column("token_hash", String()),
    Column("hint", String()),
    Column("created_at", UTCDateTime()),
    Column("expires_at", UTCDateTime()),
    Column("revoked_at", UTCDateTime()),
)


BILLING_METERS = Table(
    "billing_meters",
    METADATA,
    Column("name", String(), primary_key=True),
    Column("unit", String()),
    Column("description", String()),
    Column("created_at", UTCDateTime()),
)


BOOKINGS = Table(
    "bookings",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("atom_id", BigCounter()),
    Column("node_id", String()),
    Column("consumer_kind", String()),
    Column("consumer_id", String()),
    Column("tenant_id", String()),
    Column("spot", Boolean()),
    Column("starts_at", UTCDateTime()),
    Column("ends_at", UTCDateTime()),
    Column("released_at", UTCDateTime()),
)


CLAIM_PERIODS = Table(
    "claim_periods",
    METADATA,
    Column("id", BigCounter(), primary_key=True),
    Column("allocation_id", String()),
    Column("vcpu", Integer()),
    Column("memory_gib", Integer()),
    Column("started_at", UTCDateTime()),
    Column("ended_at", UTCDateTime()),
)


COMPUTE_SETTINGS = Table(
    "compute_settings",
    METADATA,
    Column("tenant_id", String(), primary_key=True),
    Column("sizes", JSON()),
    Column("default_size", String()),
    Column("serverless_pool_id", String()),
    Column("version", BigCounter()),
    Column("managed", Boolean()),
    Column("updated_at", UTCDateTime()),
    Column("spares_checked_at", UTCDateTime()),
)


ENVIRONMENTS = Table(
    "environments",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("name", String()),
    Column("size", String()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
)


EVENTS = Table(
    "events",
    METADATA,
    Column("seq", BigCounter(), primary_key=True),
    Column("id", String()),
    Column("type", String()),
    Column("tenant_id", String()),
    Column("subject_id", String()),
    Column("data", JSON()),
    Column("at", UTCDateTime()),
)


FLAVORS = Table(
    "flavors",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("pool_id", String()),
    Column("name", String()),
    Column("vcpu", Integer()),
    Column("memory_gib", Integer()),
    Column("disk_gib", Integer()),
    Column("gpus", Integer()),
    Column("offer_id", String()),
    Column("placement", JSON()),
    Column("archived", Boolean()),
    Column("version", BigCounter()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
    Column("managed", Boolean()),
)


FLEET_IDENTITY = Table(
    "fleet_identity",
    METADATA,
    Column("id", Integer(), primary_key=True),
    Column("fleet_id", String()),
    Column("created_at", UTCDateTime()),
)


GPU_ATOMS = Table(
    "gpu_atoms",
    METADATA,
    Column("id", BigCounter(), primary_key=True),
    Column("node_id", String()),
    Column("index", Integer()),
    Column("model", String()),
    Column("pci_address", String()),
    Column("numa_node", Integer()),
    Column("present", Boolean()),
)


GPU_NODE_VERSIONS = Table(
    "gpu_node_versions",
    METADATA,
    Column("node_id", String(), primary_key=True),
    Column("pool_id", String()),
    Column("version", BigCounter()),
)


GPU_POOL_VERSIONS = Table(
    "gpu_pool_versions",
    METADATA,
    Column("pool_id", String(), primary_key=True),
    Column("version", BigCounter()),
    Column("token", String()),
)


HOSTS = Table(
    "hosts",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("name", String()),
    Column("pool_id", String()),
    Column("labels", JSON()),
    Column("tenant_controlled", Boolean()),
    Column("state", HostStateColumn()),
    Column("inventory", JSON()),
    Column("inventory_reported_at", UTCDateTime()),
    Column("inventory_generation", BigCounter()),
    Column("inventory_error", Text()),
    Column("agent_health", JSON()),
    Column("created_at", UTCDateTime()),
    Column("managed", Boolean()),
    Column("conditions", JSON()),
)


INSTANCES = Table(
    "instances",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("pool_id", String()),
    Column("flavor_id", String()),
    Column("name", String()),
    Column("state", InstanceStateColumn()),
    Column("shape", JSON()),
    Column("node_id", String()),
    Column("allocation_id", String()),
    Column("host_placement", JSON()),
    Column("conditions", JSON()),
    Column("agent_conditions", JSON()),
    Column("balloon_bytes", BigInteger()),
    Column("purpose", String()),
    Column("size", String()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
    Column("ready_at", UTCDateTime()),
    Column("deleted_at", UTCDateTime()),
    Column("provider_server_id", String()),
    Column("provider_status", String()),
    Column("idempotency_key", String()),
    Column("input_hash", String()),
)


JOB_FAULTS = Table(
    "job_faults",
    METADATA,
    Column("job", String(), primary_key=True),
    Column("subject_kind", String(), primary_key=True),
    Column("subject_id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("error", Text()),
    Column("message", Text()),
    Column("failures", Integer()),
    Column("first_failed_at", UTCDateTime()),
    Column("last_failed_at", UTCDateTime()),
    Column("since", UTCDateTime()),
)


JOB_RUNS = Table(
    "job_runs",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("job", String()),
    Column("holder", String()),
    Column("started_at", UTCDateTime()),
    Column("finished_at", UTCDateTime()),
    Column("outcome", String()),
    Column("counts", JSON()),
    Column("error", Text()),
)


JOB_STATE = Table(
    "job_state",
    METADATA,
    Column("job", String(), primary_key=True),
    Column("last_run_at", UTCDateTime()),
    Column("last_outcome", String()),
    Column("next_due_at", UTCDateTime()),
    Column("watermark", UTCDateTime()),
)


LOCKS = Table(
    "locks",
    METADATA,
    Column("name", String(), primary_key=True),
    Column("id", String()),
    Column("holder", String()),
    Column("pid", Integer()),
    Column("hostname", String()),
    Column("operation", String()),
    Column("created_at", UTCDateTime()),
    Column("expires_at", UTCDateTime()),
)


NODE_RESOURCES = Table(
    "node_resources",
    METADATA,
    Column("node_id", String(), primary_key=True),
    Column("resource", String(), primary_key=True),
    Column("allocatable", Integer()),
    Column("ratio", Float()),
    Column("capacity", Integer()),
    Column("allocated", Integer()),
    Column("generation", BigCounter()),
)


PIPELINE_INDEXES = Table(
    "pipeline_indexes",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("workspace", String()),
    Column("name", String()),
    Column("pod_size", String()),
    Column("deployed", Boolean()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
)


POLICIES = Table(
    "policies",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("name", String()),
    Column("statements", JSON()),
    Column("created_at", UTCDateTime()),
)


POLICY_ATTACHMENTS = Table(
    "policy_attachments",
    METADATA,
    Column("policy_id", String(), primary_key=True),
    Column("principal_id", String(), primary_key=True),
)


POOL_OFFERS = Table(
    "pool_offers",
    METADATA,
    Column("pool_id", String(), primary_key=True),
    Column("tenant_id", String(), primary_key=True),
)


POOLS = Table(
    "pools",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("name", String()),
    Column("kind", PoolKindColumn()),
    Column("owner_tenant_id", String()),
    Column("gpu_model", String()),
    Column("overcommit", JSON()),
    Column("host_reserve", JSON()),
    Column("provider_account_id", String()),
    Column("created_at", UTCDateTime()),
    Column("version", BigCounter()),
    Column("managed", Boolean()),
)


PRINCIPALS = Table(
    "principals",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("name", String()),
    Column("role", String()),
    Column("created_at", UTCDateTime()),
    Column("host_id", String()),
)


PROVIDER_ACCOUNTS = Table(
    "provider_accounts",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("name", String()),
    Column("provider", String()),
    Column("token_env", String()),
    Column("sealed_token", String()),
    Column("endpoint", String()),
    Column("created_at", UTCDateTime()),
    Column("managed", Boolean()),
)


QUOTA_STRIPES = Table(
    "quota_stripes",
    METADATA,
    Column("tenant_id", String(), primary_key=True),
    Column("pool_id", String(), primary_key=True),
    Column("resource", String(), primary_key=True),
    Column("stripe", Integer(), primary_key=True),
    Column("used", Integer()),
)


QUOTAS = Table(
    "quotas",
    METADATA,
    Column("tenant_id", String(), primary_key=True),
    Column("pool_id", String(), primary_key=True),
    Column("resource", String(), primary_key=True),
    Column("limit", Integer()),
    Column("used", Integer()),
    Column("managed", Boolean()),
)


RESERVATIONS = Table(
    "reservations",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("pool_id", String()),
    Column("gpus", Integer()),
    Column("nodes", Integer()),
    Column("binding", String()),
    Column("spot", Boolean()),
    Column("state", ReservationStateColumn()),
    Column("requested_start", UTCDateTime()),
    Column("duration_seconds", Integer()),
    Column("starts_at", UTCDateTime()),
    Column("ends_at", UTCDateTime()),
    Column("deadline", UTCDateTime()),
    Column("preempted_by", String()),
    Column("preempted_by_tenant", String()),
    Column("node_ids", JSON()),
    Column("last_attempt_at", UTCDateTime()),
    Column("idempotency_key", String()),
    Column("input_hash", String()),
    Column("conditions", JSON()),
    Column("release_reason", String()),
    Column("quota_charged", Boolean()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
    Column("activated_at", UTCDateTime()),
    Column("released_at", UTCDateTime()),
)


SERVICES = Table(
    "services",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("workspace", String()),
    Column("name", String()),
    Column("hosting", String()),
    Column("deployed", Boolean()),
    Column("size", String()),
    Column("environment_id", String()),
    Column("instance_id", String()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
    Column("deployed_at", UTCDateTime()),
)


STATE_REVISION = Table(
    "state_revision",
    METADATA,
    Column("id", Integer(), primary_key=True),
    Column("revision", BigCounter()),
)


TENANTS = Table(
    "tenants",
    METADATA,
    Column("id", String(length=63), primary_key=True),
    Column("name", String()),
    Column("created_at", UTCDateTime()),
    Column("managed", Boolean()),
)


USAGE_DEAD_LETTERS = Table(
    "usage_dead_letters",
    METADATA,
    Column("id", BigCounter(), primary_key=True),
    Column("tenant_id", String()),
    Column("subject_id", String()),
    Column("subject_kind", String()),
    Column("pool_id", String()),
    Column("meter", String()),
    Column("window_start", UTCDateTime()),
    Column("quantity", Numeric(precision=20, scale=6)),
    Column("reason", String()),
    Column("created_at", UTCDateTime()),
    Column("replayed_at", UTCDateTime()),
)


USAGE_WINDOWS = Table(
    "usage_windows",
    METADATA,
    Column("id", BigCounter(), primary_key=True),
    Column("tenant_id", String()),
    Column("subject_id", String()),
    Column("subject_kind", String()),
    Column("pool_id", String()),
    Column("meter", String()),
    Column("window_start", UTCDateTime()),
    Column("quantity", Numeric(precision=20, scale=6)),
    Column("created_at", UTCDateTime()),
)


WEBHOOK_DELIVERIES = Table(
    "webhook_deliveries",
    METADATA,
    Column("id", BigCounter(), primary_key=True),
    Column("webhook_id", String()),
    Column("tenant_id", String()),
    Column("event_seq", BigCounter()),
    Column("event_id", String()),
    Column("event_type", String()),
    Column("payload", JSON()),
    Column("state", DeliveryStateColumn()),
    Column("attempts", Integer()),
    Column("next_attempt_at", UTCDateTime()),
    Column("last_status", Integer()),
    Column("last_error", String()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
    Column("delivered_at", UTCDateTime()),
)


WEBHOOKS = Table(
    "webhooks",
    METADATA,
    Column("id", String(), primary_key=True),
    Column("tenant_id", String()),
    Column("url", String()),
    Column("secret", String()),
    Column("event_types", JSON()),
    Column("active", Boolean()),
    Column("cursor", BigCounter()),
    Column("created_at", UTCDateTime()),
    Column("updated_at", UTCDateTime()),
)
