"""``adk-oceanbase selftest``: the cluster test kit, one pass/fail line per check; exit 1 when any failed."""

from __future__ import annotations

import argparse
import sys

from .output import line
from .registry import command, flag
from .services import config as command_config


@command(
    "selftest", "check a database end to end (version, schema, session contract, concurrent writers and "
    "compare-and-set, durability across a reconnect or failover, search recall); selftest.run()",
    flag("--check", action="append", choices=("server", "schema", "contract", "writers", "cas", "durability", "recall"),
         help="run only this check (repeatable; default: all, in order)"),
    flag("--embedder", choices=("default", "hash"), default="default",
         help="memory embedder for the recall check: the service's default (MiniLM), or the model-free hashing one "
              "(its vectors are kept apart from MiniLM's only on a database holding no other memories)"),
    flag("--min-recall", type=float, default=0.9, help="recall@5 the recall check needs (default: 0.9)"),
    flag("--failover-wait", type=float, default=0.0, metavar="SECONDS",
         help="durability: print where the leaders are, wait this long for you to kill that node, then reconnect"),
    flag("--json", action="store_true", help="one JSON line per check instead of a table row"),
)
async def selftest(args: argparse.Namespace) -> int:
    from .. import selftest as kit

    config = command_config(args)  # selftest opens (and creates, when missing) the database itself
    embedder = None
    if args.embedder == "hash":
        from ..memory import HashEmbedder

        embedder = HashEmbedder(config.embedding_dim)

    def report(o: kit.Outcome) -> None:
        if args.json:
            line(o.as_dict())
        else:
            print(f"{'PASS' if o.ok else 'FAIL'}  {o.check:<10} {o.ms:8.0f} ms  {o.detail}", flush=True)

    print(f"selftest of {config.redacted_url()}", file=sys.stderr)
    outcomes = await kit.run(
        config, embedder=embedder, checks=tuple(args.check or kit.CHECKS), min_recall=args.min_recall,
        failover_wait_s=args.failover_wait, say=lambda m: print(m, file=sys.stderr, flush=True), report=report,
    )
    failed = [o.check for o in outcomes if not o.ok]
    print(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""),
          file=sys.stderr)
    return 1 if failed else 0
