"""Opt-in placement of our tables on an OceanBase cluster, so one append stays on one node (``db upgrade --colocate``).

An append writes four tables in one transaction (the session row's
compare-and-set, the event, the state rows and, with auditing, the audit row).
On a cluster each table's leader may sit on another node, and every append
becomes a distributed (two-phase) transaction whose gated statements (each
reading the rows the one before wrote) run remotely.  Two placements keep it local:

``one-node``
    ``CREATE TABLEGROUP ... SHARDING = 'NONE'`` with every table of ours: the
    tables stay unpartitioned and the cluster keeps all their leaders on one
    node.  No append is ever distributed; the data set is bounded by that node.
``by-user``
    ``PARTITION BY KEY(app_name, user_id) PARTITIONS N`` on the per-user tables
    (:data:`PER_USER_TABLES`) in a ``SHARDING = 'PARTITION'`` table group, so
    partition *i* of every one of them sits on one node and one user's rows are
    together.  The full-text and vector indexes are local (OceanBase supports
    only local full-text indexes), so a search filtered by user is pruned to
    one partition.  ``audit_log`` stays outside: its key is ``audit_id`` alone
    and a key-partitioned table's primary key must hold the partitioning
    columns (error 1503), so with auditing on an append has one more
    participant.  App-scope state rows (``app:`` keys) sit in the partition of
    user ``''``.

Both also want the tenant's leaders in one zone: ``ALTER TENANT <tenant>
PRIMARY_ZONE = 'zone1'`` as ``root@sys`` (OceanBase 4.x sets the primary zone
per tenant); with ``RANDOM`` leaders spread over zones and cross-zone commits
pay the inter-zone round trip.

On seekdb (one node, nothing to co-locate) the partitioning is accepted and
applied, which is how the tests check its syntax and that every behaviour
still holds on partitioned tables; seekdb 1.4 rejects ``CREATE TABLEGROUP``,
``ALTER TABLEGROUP`` and ``PRIMARY_ZONE`` (error 1064), so those are skipped
there.  MySQL/MariaDB are refused: InnoDB has no full-text index on a
partitioned table, and a single server has nothing to co-locate.

The same statements, for a DBA to run by hand, are in
``sql/oceanbase/colocation.sql``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import text

from . import setup_lock, server_version
from .engine import Database
from .errors import ConfigurationError, typed_errors
from .schema import metadata

__all__ = ["Colocation", "PER_USER_TABLES", "apply", "statements"]

PER_USER_TABLES = (
    "agent_sessions", "session_events", "session_state", "agent_memories", "memory_terms", "memory_opt_out",
    "debug_archive",
)
"""The tables whose primary key holds ``(app_name, user_id)``: ``by-user`` partitions these."""

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

_PARTITIONED = text(
    "SELECT table_name, COUNT(*) FROM information_schema.partitions "
    "WHERE table_schema = DATABASE() AND partition_name IS NOT NULL GROUP BY table_name"
)


@dataclass(frozen=True)
class Colocation:
    """Where our tables go on a cluster (see the module docstring)."""

    mode: Literal["one-node", "by-user"]
    partitions: int = 16
    """``by-user`` only: partitions per table; more than the cluster's nodes, so they can spread and grow."""
    tablegroup: str = "adk_oceanbase_tg"
    """The table group's name (per tenant)."""

    def __post_init__(self) -> None:
        if self.mode not in ("one-node", "by-user"):
            raise ConfigurationError(f"co-location mode must be one-node or by-user, got {self.mode!r}")
        if not 1 <= self.partitions <= 8192:
            raise ConfigurationError(f"partitions must be between 1 and 8192, got {self.partitions}")
        if not _NAME.match(self.tablegroup):
            raise ConfigurationError(f"table group name must be a plain identifier, got {self.tablegroup!r}")


def statements(colocation: Colocation) -> list[str]:
    """The DDL of ``colocation``, in order (partitioning first: a table joins a group with its final layout)."""
    c = colocation
    if c.mode == "one-node":
        tables = [t.name for t in metadata.sorted_tables]
        sharding = "NONE"
        out = []
    else:
        tables = list(PER_USER_TABLES)
        sharding = "PARTITION"
        out = [f"ALTER TABLE {t} PARTITION BY KEY(app_name, user_id) PARTITIONS {c.partitions}" for t in tables]
    out.append(f"CREATE TABLEGROUP IF NOT EXISTS {c.tablegroup} SHARDING = '{sharding}'")
    out.append(f"ALTER TABLEGROUP {c.tablegroup} ADD TABLE {', '.join(tables)}")
    return out


async def apply(db: Database, colocation: Colocation) -> list[tuple[str, str]]:
    """Runs :func:`statements` that are not done yet, under the schema lock; returns ``(statement, outcome)`` pairs.

    Re-running is a no-op for tables already partitioned.  Bounded by
    ``Config.setup_timeout_s`` like every setup (re-partitioning rewrites the table).

    Raises:
        ConfigurationError: on MySQL/MariaDB.
    """
    await db.start()
    server = await server_version.require_supported(db)
    if server.engine in ("mariadb", "mysql"):
        raise ConfigurationError(
            f"co-location is for OceanBase clusters; {db.config.redacted_url()} runs {server.describe()} "
            "(InnoDB has no full-text index on a partitioned table)"
        )
    with typed_errors():
        return await _run(setup_lock.SetupDeadline(db, "co-location"), colocation, server.engine)


async def _run(deadline: setup_lock.SetupDeadline, colocation: Colocation, engine: str) -> list[tuple[str, str]]:
    done: list[tuple[str, str]] = []
    async with setup_lock.schema_lock(deadline), deadline.connection() as conn:
        partitioned = {row[0]: int(row[1]) for row in (await conn.execute(_PARTITIONED)).all()}
        for stmt in statements(colocation):
            table = stmt.split()[2] if stmt.startswith("ALTER TABLE ") else None
            if table is not None and partitioned.get(table, 0) > 1:
                done.append((stmt, f"skipped: {table} is already partitioned ({partitioned[table]} partitions)"))
                continue
            if "TABLEGROUP" in stmt.split()[1] and engine == "seekdb":
                # seekdb 1.4 answers 1064 to CREATE/ALTER TABLEGROUP: one node, nothing to group.
                done.append((stmt, "skipped: seekdb has no table groups (one node)"))
                continue
            async with deadline.bound(conn, stmt):
                await conn.execute(text(stmt))
            done.append((stmt, "done"))
    return done
