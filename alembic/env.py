"""Alembic environment for adk-oceanbase, driven from code (``adk_oceanbase.migrations``).

The caller hands over a live synchronous connection (an ``AsyncConnection``
run through ``run_sync``) in ``config.attributes["connection"]``, plus the
engine dialect and embedding dimension the revisions need.  Our version table
is ``adk_oceanbase_version`` so we never collide with an application's own
Alembic history in the same database.
"""

from alembic import context

from adk_oceanbase.schema import VERSION_TABLE, metadata

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "adk-oceanbase migrations run from code: use `adk-oceanbase db upgrade --url URL` "
        "or `await adk_oceanbase.upgrade(url)`"
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    transaction_per_migration=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
