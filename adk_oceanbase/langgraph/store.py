"""``OceanBaseStore``: LangGraph's ``BaseStore`` (long-term memory for graphs) on OceanBase, seekdb and MySQL/MariaDB.

Items live in ``lg_store_items`` (namespace labels joined by ``"."``, the value
as JSON text, TTL on the database clock); semantic search goes through the
memory service's hybrid retrieval (see :mod:`.store_index`).  A batch runs
like LangGraph's ``InMemoryStore``: its reads see the data as it was before
the batch, then its writes apply, the last write to a key winning.  Its
writes are one transaction: one round trip, two when it links field memories
(they are locked and checked before the COMMIT, see ``_apply_puts``).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, Sequence

from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)
from sqlalchemy.ext.asyncio import AsyncEngine

from .._lifecycle import DatabaseService
from ..audit import AuditEntry, AuditSettings, Auditor, audited, current_entry
from ..config import Config
from ..engine import Database
from ..errors import CheckpointTooLargeError, ConfigurationError, InvalidValueError, MemoryWriteRaceError, is_rerunnable
from ..gateway import retrying
from ..governance.langgraph_sweep import EXPIRED_PURGE
from ..memory import HitJoin, MemorySettings, OceanBaseMemoryService
from ..rawtx import COMMIT
from ..validation import check_id, check_text
from . import store_index as ix
from . import store_queries as q
from .bridge import Home, HomeLifecycle

__all__ = ["OceanBaseStore"]

logger = logging.getLogger(__name__)

NAMESPACE_LEN, KEY_LEN = 300, 255
_RELINK_ATTEMPTS = 5
"""Times a put adds its field memories again after concurrent deletes purged them (see ``_apply_puts``)."""
UserOf = Callable[[tuple[str, ...]], "str | None"]


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=timezone.utc)


def _encode(namespace: tuple[str, ...]) -> str:
    text = ".".join(namespace)
    if len(text) > NAMESPACE_LEN:
        raise InvalidValueError(f"namespace {namespace!r} is {len(text)} characters joined; the limit is {NAMESPACE_LEN}")
    return check_text("namespace", text, InvalidValueError)


def _puts_entry(call: Any) -> AuditEntry:
    return AuditEntry("lg_store_put", call.arguments["self"].app_name)


class OceanBaseStore(HomeLifecycle, DatabaseService, BaseStore):
    """LangGraph long-term Store on the ADK services' database, schema and governance.

    Args:
        url / config / database / engine: as for the ADK services (``database=``
            shares one; not closed by us).
        app_name: first key column of every row; also the memory service's
            app for the semantic index (default ``"langgraph-store"``, apart
            from any ADK agent's memories).
        index: ``{"dims", "embed", "fields"}`` as LangGraph's stores take it; turns
            on semantic search through the memory service.  ``embed`` may be
            omitted: the packaged MiniLM (384 dims) is the default.  ``dims``
            must equal the database's vector column (``Config.embedding_dim``).
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` minutes, ``refresh_on_read``).
        user_of: which user a namespace belongs to (e.g. ``lambda ns: ns[1]`` for
            ``("memories", user_id)``): its items carry that user, so
            ``delete_user_data`` erases them, and its indexed fields go to
            that user's memory pool (search a prefix that names the user).
        memory: a ready ``OceanBaseMemoryService`` for the index (else one is
            made on the same database with ``embed`` and ``MemorySettings(consolidate=False,
            ann_pool=50)``: items are records, and near-duplicate merging would supersede one
            item's field memory by another's, dropping the first item from search; give
            yours the same setting.  ``ann_pool=50``: a search asks for 50 hits (``top_k``,
            for a page of 10), so the HNSW list holds those 50 instead of the service's 100).
        max_value_bytes: largest item value as JSON (``CheckpointTooLargeError``).
        audit: ``AuditSettings``: one ``audit_log`` row per batch of writes.
    """

    supports_ttl = True

    def __init__(
        self,
        url: str | None = None,
        *,
        config: Config | None = None,
        database: Database | None = None,
        engine: AsyncEngine | None = None,
        app_name: str = "langgraph-store",
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        user_of: UserOf | None = None,
        memory: OceanBaseMemoryService | None = None,
        max_value_bytes: int = 16 * 1024 * 1024,
        audit: AuditSettings | None = None,
        auto_setup: bool = True,
    ) -> None:
        self._bind_database(url, config, database, engine, auto_setup)
        self.app_name = check_id("app_name", app_name)
        self.ttl_config = ttl
        self.index_config = dict(index) if index else None
        self._user_of = user_of
        self._auditor = Auditor(audit)
        self.max_value_bytes = max_value_bytes
        self._home = Home()
        self._owns_memory = False
        self.memory: OceanBaseMemoryService | None = memory
        if self.index_config is not None:
            dims = self.index_config.get("dims")
            if dims is not None and int(dims) != self.config.embedding_dim:
                raise ConfigurationError(
                    f"index['dims'] is {dims} but the database's vectors have {self.config.embedding_dim} dimensions "
                    "(Config.embedding_dim)"
                )
            self.index_config["fields"] = list(self.index_config.get("fields") or ["$"])
            if memory is None:
                embed = self.index_config.get("embed")
                embedder = ix.IndexEmbedder(embed, self.config.embedding_dim) if embed is not None else None
                # consolidate=False: two items with near-identical text are two records (LangGraph's
                # stores never merge items), and the merge check was a vector query per field at
                # load: 19 of 24 s of a 500-item batch at 1,500 items (cProfile, 2026-11-26).
                # ann_pool=50: a page of 10 asks top_k 50 (_semantic), and the HNSW list then holds
                # those 50, not the service's 100 (a graph step, a row lookup, a cosine and a ranking
                # row less per candidate): 30,000 items (tune seed 27, load 2) p50 / p95 18.5 / 31.2 ->
                # 16.6 / 23.6 ms, top 10 identical in 400 of 400 searches (benchmarks/README.md).
                self.memory = OceanBaseMemoryService(database=self._db, embedder=embedder, audit=audit,
                                                     settings=MemorySettings(consolidate=False, ann_pool=50))
                self._owns_memory = True

    async def _close(self) -> None:
        """What ``aclose`` / ``close`` release (:class:`.bridge.HomeLifecycle`): our memory service, then the engine."""
        if self._owns_memory and self.memory is not None:
            await self.memory.close()
        await self._release()

    def user_of(self, namespace: tuple[str, ...]) -> str:
        """The user ``namespace`` is tied to (``''``: none)."""
        user = self._user_of(namespace) if self._user_of is not None and namespace else None
        return "" if user is None else check_id("user_id", user)

    # ------------------------------------------------------------------ batches
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return self._home.run_sync(lambda: self._batch(ops), "batch")

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await self._home.run(lambda: self._batch(ops))

    async def _batch(self, ops: list[Op]) -> list[Result]:
        for op in ops:
            validate_op_namespace(op)
        await self._engine()
        results: list[Result] = [None] * len(ops)
        puts: dict[tuple[tuple[str, ...], str], PutOp] = {}
        gets = [(i, op) for i, op in enumerate(ops) if isinstance(op, GetOp)]
        if gets:
            await self._get(gets, results)
        for i, op in enumerate(ops):
            if isinstance(op, SearchOp):
                results[i] = await self._search(op)
            elif isinstance(op, ListNamespacesOp):
                results[i] = await self._list_namespaces(op)
            elif isinstance(op, PutOp):
                puts[(op.namespace, op.key)] = op
            elif not isinstance(op, GetOp):
                raise InvalidValueError(f"unknown store operation {type(op).__name__}")
        if puts:
            await self._apply_puts(list(puts.values()))
        return results

    async def _write(self, statements: list[tuple[Any, Any]], *, locked: int = 0) -> bool:
        """Commits ``statements`` (re-run after a deadlock); one round trip, two with ``locked``.

        ``locked``: the first statement is :func:`.store_queries.lock_memories`
        and must find that many rows; when it finds fewer, nothing is
        committed and the answer is False.
        """
        if (entry := current_entry()) is not None:
            statements = [*statements, (entry.insert(), None)]

        async def once() -> bool:
            async with self._raw_tx() as tx:
                if not locked:
                    await tx.batch([*statements, (COMMIT, None)])
                    return True
                results = await tx.batch(statements)
                if len(results[0][1]) < locked:
                    await tx.rollback()
                    return False
                await tx.batch([(COMMIT, None)])
                return True

        # a put locking memory rows against a purging delete may meet it in a deadlock (the loser is rolled back)
        return await retrying(once, when=is_rerunnable, attempts=4, what="a store write")

    async def _refresh(self, keys: Sequence[tuple[str, str]]) -> None:
        """Restarts the TTL of items read (``refresh_ttl``): only those that have one are passed here."""
        if keys:
            await self._write([(q.REFRESH, {"app": self.app_name, "ns": ns, "key": key}) for ns, key in keys])

    @staticmethod
    def _item(row: Sequence[Any], cls: type = Item, **extra: Any) -> Any:
        ns, key, value, created, updated = row[:5]
        return cls(namespace=tuple(ns.split(".")), key=key, value=json.loads(value),
                   created_at=_aware(created), updated_at=_aware(updated), **extra)

    # ------------------------------------------------------------------ reads
    async def _get(self, gets: list[tuple[int, GetOp]], results: list[Result]) -> None:
        keys = [(_encode(op.namespace), op.key) for _, op in gets]
        ((_, rows),) = await self._read_batch([q.get_items(self.app_name, sorted(set(keys)))])
        found = {(r[0], r[1]): r for r in rows}
        for (i, op), k in zip(gets, keys):
            results[i] = self._item(found[k]) if k in found else None
        await self._refresh(sorted({k for (_, op), k in zip(gets, keys) if k in found and op.refresh_ttl
                                    and found[k][5] is not None}))

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = ".".join(op.namespace_prefix)
        if len(prefix) > NAMESPACE_LEN:
            return []
        if op.limit < 0 or op.offset < 0:
            raise InvalidValueError("search limit and offset must not be negative")
        if op.query and self.memory is not None:
            rows = await self._semantic(op, prefix)
        else:
            pairs, exact = ix.sql_prefilter(op.filter)
            sql = q.search_items(self.app_name, prefix, pairs, op.limit if exact else None, op.offset)
            ((_, rows),) = await self._read_batch([sql])
            if not exact:
                rows = [r for r in rows if ix.matches(json.loads(r[2]), op.filter)][op.offset : op.offset + op.limit]
        if op.refresh_ttl:
            await self._refresh([(r[0], r[1]) for r in rows if r[5] is not None])
        return [self._item(r, SearchItem, score=r[6] if len(r) > 6 else None) for r in rows]

    async def _semantic(self, op: SearchOp, prefix: str) -> list[Sequence[Any]]:
        """The memory service's hybrid search over the pool's field memories, joined back to live items under ``prefix``."""
        assert self.memory is not None
        pool = self.user_of(op.namespace_prefix) or ix.SHARED_POOL
        wanted = min(1000, max(50, 5 * (op.offset + op.limit)))
        # The topic filter keeps a user's ADK memories out of the ranking; the shared pool holds
        # store fields only, and the join to lg_store_fields below drops anything else anyway, so
        # there it is left off: it is a JSON_CONTAINS per candidate row (5,000 rows, loaded 2 vCPU:
        # exact top-200 vector scan 42 ms without it, 206 ms with it; whole search 85 vs 138 ms p50).
        topics = None if pool == ix.SHARED_POOL else {"topics": [ix.TOPIC]}
        # The items of the hits come with the search, its statement ending in their join (one round trip
        # on OceanBase, where a second read of lg_store_fields + lg_store_items followed it).
        join = HitJoin(*q.field_hits(self.app_name, pool, prefix, None if op.filter else op.offset + op.limit))
        found = await self.memory.search_joined(self.app_name, pool, op.query, join=join, top_k=wanted, filters=topics)
        best: dict[tuple[str, str], tuple[float, Sequence[Any]]] = {}
        for _, score, *item in found:
            k = (item[0], item[1])
            if k not in best or score > best[k][0]:
                best[k] = (score, item)
        ranked = sorted(best.values(), key=lambda p: (-p[0], p[1][0], p[1][1]))
        if op.filter:
            ranked = [(s, item) for s, item in ranked if ix.matches(json.loads(item[2]), op.filter)]
        rows = [(*item, float(s)) for s, item in ranked[op.offset : op.offset + op.limit]]
        if len(rows) < op.limit:
            # As InMemoryStore does: items with no indexed field fill the rest, unscored.
            need = None if op.filter else op.limit - len(rows)
            ((_, plain),) = await self._read_batch([q.unindexed_items(self.app_name, prefix, need)])
            plain = [(*r, None) for r in plain if ix.matches(json.loads(r[2]), op.filter)]
            rows += plain[: op.limit - len(rows)]
        return rows

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = op.match_conditions or ()
        sql_prefix = ""
        for c in conditions:
            if c.match_type == "prefix" and "*" not in c.path:
                sql_prefix = ".".join(c.path)
                break
        ((_, rows),) = await self._read_batch([q.list_namespaces(self.app_name, sql_prefix)])
        spaces = [tuple(r[0].split(".")) for r in rows]
        spaces = [ns for ns in spaces if all(_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            spaces = list({ns[: op.max_depth] for ns in spaces})
        return sorted(spaces)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------------ writes
    @audited(_puts_entry)
    async def _apply_puts(self, puts: list[PutOp]) -> None:
        """One transaction for the batch's items and field links, after one ``add_memory`` per memory pool.

        Field memories whose last link goes (a delete, an overwrite with other
        text) are deleted in it (:func:`.store_queries.purge_items`, two statements for the batch).  The
        memories the batch links to are locked first and must all be there: a
        concurrent purge may have removed one between ``add_memory`` and this
        transaction, which is then rolled back, the memories added again and
        the transaction re-run.
        """
        entries: dict[str, dict[str, MemoryEntry]] = {}
        now = datetime.now(timezone.utc).replace(tzinfo=None)
        planned: list[tuple[dict[str, Any], dict[str, Any] | None, list[dict[str, Any]]]] = []
        for op in puts:
            ns, key = _encode(op.namespace), op.key
            if not isinstance(key, str) or not key or len(key) > KEY_LEN:
                raise InvalidValueError(f"item keys must be strings of 1 to {KEY_LEN} characters, got {key!r}")
            check_text("item key", key, InvalidValueError)
            ids = {"app": self.app_name, "ns": ns, "key": key}
            if op.value is None:
                planned.append((ids, None, []))
                continue
            value = _value_json(op.value, self.max_value_bytes)
            user = self.user_of(op.namespace)
            links = self._links(op, user, entries)
            ttl = None if op.ttl is None else float(op.ttl)
            if ttl is not None and not ttl > 0:
                raise InvalidValueError(f"ttl must be a positive number of minutes, got {op.ttl!r}")
            row = {**ids, "user": user, "value": value, "now": now, "ttl": ttl, "fields": len(links)}
            planned.append((ids, row, [{**ids, "user": user, **link} for link in links]))
        linked = sorted({(link["muser"], link["mid"]) for _, _, links in planned for link in links})
        keep = sorted({mid for _, mid in linked})
        statements: list[tuple[Any, Any]] = [q.lock_memories(self.app_name, linked)] if linked else []
        statements += q.purge_items(self.app_name, [(ids["ns"], ids["key"]) for ids, _, _ in planned], keep)
        for ids, row, links in planned:
            statements.append((q.DELETE_FIELDS, ids))
            if row is None:
                statements.append((q.DELETE_ITEM, ids))
                continue
            statements.append((q.UPSERT_ITEM, row))
            if links:
                statements.append((q.INSERT_FIELDS, links))
        for _ in range(_RELINK_ATTEMPTS):
            if entries and self.memory is not None:
                for pool, memories in entries.items():
                    await self.memory.add_memory(app_name=self.app_name, user_id=pool, memories=list(memories.values()),
                                                 custom_metadata={"topics": [ix.TOPIC]})
            if await self._write(statements, locked=len(linked)):
                break
        else:
            raise MemoryWriteRaceError(
                f"the items' field memories were deleted by concurrent deletes {_RELINK_ATTEMPTS} times in a row; "
                "nothing of this batch was stored"
            )
        if entries and self.memory is not None:
            await self.memory.flush()  # searchable when put returns, as LangGraph's stores are

    def _links(self, op: PutOp, user: str, entries: dict[str, dict[str, MemoryEntry]]) -> list[dict[str, Any]]:
        """The put's indexed fields as ``lg_store_fields`` rows; their memories are added to ``entries`` (by pool)."""
        if self.memory is None or self.index_config is None or op.index is False:
            return []
        fields = self.index_config["fields"] if op.index is None else list(op.index)
        pool = user or ix.SHARED_POOL
        links = []
        for no, (path, text) in enumerate(ix.field_texts(op.value, fields)):  # type: ignore[arg-type]
            mid = ix.memory_id_for_text(self.app_name, pool, text)
            links.append({"no": no, "path": path[:255], "muser": pool, "mid": mid})
            entries.setdefault(pool, {})[mid] = MemoryEntry(id=mid, content=types.Content(parts=[types.Part(text=text)]))
        return links

    async def asweep_ttl(self) -> int:
        """Deletes expired items (their field links, and the field memories no live item links to) now; returns how many items went."""

        async def sweep() -> int:
            await self._engine()
            params = {"app": self.app_name}
            statements = [(sql, params) for sql in (*EXPIRED_PURGE, q.SWEEP_FIELDS, q.SWEEP_ITEMS)]
            async with self._raw_tx() as tx:
                results = await tx.batch([*statements, (COMMIT, None)])
            return int(results[3][0])

        return await self._home.run(sweep)


def _value_json(value: Any, limit: int) -> str:
    if not isinstance(value, dict):
        raise InvalidValueError(f"store values must be dicts, got {type(value).__name__}")
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"store values must be JSON (strings, numbers, lists, dicts): {exc}") from exc
    check_text("store value", text, InvalidValueError)
    if limit and len(text) * 4 > limit and len(text.encode("utf-8")) > limit:
        raise CheckpointTooLargeError(f"store value is {len(text.encode('utf-8')):,} bytes as JSON; the limit is {limit:,}")
    return text


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    if condition.match_type not in ("prefix", "suffix"):
        raise InvalidValueError(f"unsupported match type {condition.match_type!r}")
    return all(p == "*" or p == n for p, n in zip(path, part))
