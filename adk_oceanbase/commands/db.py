"""``adk-oceanbase db ...``: schema migrations (Alembic, bundled), one command per :mod:`adk_oceanbase.migrations` function."""

from __future__ import annotations

import argparse
import sys

from .output import confirm, spinner
from .registry import SETUP_TIMEOUT, command, flag, group
from .services import database

group("db", "schema migrations (Alembic, bundled)")


@command(
    "db upgrade", "migrate to the newest schema (no-op when current)",
    flag("--revision", default="head", help="target revision (default: head)"),
    SETUP_TIMEOUT,
    flag("--colocate", choices=("one-node", "by-user"),
         help="OceanBase cluster: afterwards place the tables so an append stays on one node: one-node (a table group "
              "of every table) or by-user (PARTITION BY KEY(app_name, user_id) + a table group); see the README"),
    flag("--partitions", type=int, default=16, help="with --colocate by-user: partitions per table (default: 16)"),
    flag("--tablegroup", default="adk_oceanbase_tg", help="with --colocate: the table group's name"),
)
async def upgrade(args: argparse.Namespace) -> int:
    from .. import migrations

    colocation = None
    if args.colocate:
        from ..colocation import Colocation

        colocation = Colocation(args.colocate, partitions=args.partitions, tablegroup=args.tablegroup)  # checked first
    db = database(args, create=True)  # upgrading a new database is the way to start one
    where = db.config.redacted_url()
    try:
        with spinner(f"migrating {where} to {args.revision} ..."):
            rev = await migrations.upgrade(db, args.revision)
        if colocation is not None:
            from ..colocation import apply

            with spinner(f"placing the tables of {where} ({colocation.mode}) ..."):
                for stmt, outcome in await apply(db, colocation):
                    print(f"colocate: {stmt}: {outcome}", file=sys.stderr)
    finally:
        await db.close()
    print(f"{where}: at revision {rev}" + (f", co-located {colocation.mode}" if colocation else ""))
    return 0


@command(
    "db downgrade", "revert the schema to REVISION ('base' drops our tables and their data)",
    flag("revision", metavar="REVISION"),
    flag("--yes", "-y", action="store_true", help="do not ask for confirmation"),
    SETUP_TIMEOUT,
)
async def downgrade(args: argparse.Namespace) -> int:
    from .. import migrations

    what = "drop every adk-oceanbase table and its data" if args.revision == "base" else f"revert the schema to {args.revision}"
    prompt = f"This will {what} in {args.url or 'the default database'}. Continue? [y/N] "
    if not args.yes and not confirm(what, prompt=prompt, cancelled="downgrade"):
        return 2
    db = database(args)
    where = db.config.redacted_url()
    try:
        with spinner(f"migrating {where} down to {args.revision} ..."):
            rev = await migrations.downgrade(db, args.revision)
    finally:
        await db.close()
    print(f"{where}: at revision {rev or 'base'}")
    return 0


@command("db current", "print the schema revision")
async def current(args: argparse.Namespace) -> int:
    from .. import migrations

    db = database(args)
    try:
        rev = await migrations.current_revision(db)
    finally:
        await db.close()
    print(f"{db.config.redacted_url()}: at revision {rev or 'none'} (head is {migrations.head_revision()})")
    return 0


@command("db check", "exit 0 when the schema is at head, else 1 with the command to run")
async def check(args: argparse.Namespace) -> int:
    from .. import migrations
    from ..errors import SchemaMissingError, SchemaOutdatedError

    db = database(args)
    try:
        await db.start()
        await migrations.check_schema(db)
    except (SchemaMissingError, SchemaOutdatedError) as exc:
        print(f"adk-oceanbase: {exc}", file=sys.stderr)
        return 1
    finally:
        await db.close()
    print(f"{db.config.redacted_url()}: up to date (revision {migrations.head_revision()})")
    return 0


@command(
    "db stamp", "record REVISION as current without migrating (a schema made by hand)",
    flag("revision", metavar="REVISION"),
)
async def stamp(args: argparse.Namespace) -> int:
    from .. import migrations

    db = database(args)
    try:
        rev = await migrations.stamp(db, args.revision)
    finally:
        await db.close()
    print(f"{db.config.redacted_url()}: stamped at revision {rev or 'base'}")
    return 0


# --url is accepted like everywhere (scripts pass it to every command); these read the package, not the database.
@command("db history", "the revisions this package ships, newest first")
async def history(args: argparse.Namespace) -> int:
    from .. import migrations

    for rev, down, doc in migrations.history():
        print(f"{down or 'base'} -> {rev}{' (head)' if rev == migrations.head_revision() else ''}, {doc}")
    return 0


@command("db heads", "the newest revision this package ships")
async def heads(args: argparse.Namespace) -> int:
    from .. import migrations

    print(migrations.head_revision())
    return 0
