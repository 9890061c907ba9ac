"""Agno user memories as rows of ``agent_memories``: one store of memories for Agno and ADK agents alike.

An Agno ``UserMemory`` is a memory of app ``app_name`` (the database's
namespace) and its user: content, topics, the user, then Agno's own fields
(``input``, ``agent_id``, ``team_id``, ``feedback``) under
``custom_metadata["agno"]``.  So:

* the ADK memory service of the same app and user finds Agno's memories
  (``search_memory``, ``preload_memory``), and Agno lists and recalls what
  the ADK service stored (turns, ``add_memory`` facts), by design;
* ``get_user_memories(search_content=...)`` is Agno's contract: a
  case-insensitive substring, every filter held, sorted, paged and counted.
  Agno calls it from one place, AgentOS's memory page ("fuzzy search within
  memory content", sorted by ``updated_at``, with a total for its pager); a
  ranked list there would ignore the sort and could not count pages.
  Relevance is :meth:`search_user_memories`: this project's hybrid retrieval
  (:meth:`OceanBaseMemoryService.search`: vector + BM25 + recency + ...), best
  first, ``topics`` passed as its filter;
* every write locks the user's erasure/opt-out guard row
  (:mod:`adk_oceanbase.governance.guard`) like the memory service's own: an
  opted-out user's memories are not stored (``upsert_user_memory`` returns
  ``None``), a write racing an erasure raises ``MemoryWriteRaceError``;
* text reading as an instruction to the model is stored tainted, and tainted,
  doubtful (below ``min_confidence``), superseded and deleted memories are
  never returned, here as in the memory service's search;
* content, topics and Agno's fields are redacted before anything is written,
  and the embedding is computed in the background by the memory service's
  vectorizer (search works lexically meanwhile);
* a bulk ``upsert_memories`` leaves the new texts' postings (the lexical
  index) to that vectorizer too: its rows are read, listed and found by
  ``search_content`` when the call returns, and found by their words in
  :meth:`search_user_memories` once the vectorizer's round has claimed them
  (``await db.memory_service.flush()`` waits for it), exactly as their
  vectors.  Old postings of a changed text go in the call: a memory is never
  found by words it no longer has.  ``upsert_user_memory`` (one memory)
  writes its postings in its transaction, as before.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence
from uuid import uuid4

from agno.db.schemas.memory import UserMemory
from agno.db.utils import validate_pagination
from sqlalchemy import BigInteger, Select, cast, delete, func, insert, select, text
from sqlalchemy.dialects.mysql import insert as mysql_insert

from ..errors import InvalidValueError, MemoryTooLongError, MemoryWriteRaceError
from ..governance import guard
from ..memory import postings
from ..memory.consolidation import content_hash
from ..memory.extraction import search_text
from ..memory.lexical import doc_terms
from ..schema import agent_memories as M
from ..schema import memory_terms as T
from .core import DEFAULT_USER, AgnoCore, dumps, epoch, loads, now_s, page_of, paged, utc

__all__ = ["MemoriesMixin"]

_SERVER_NOW = text("CURRENT_TIMESTAMP(6)")
_EXTRACTOR = "agno"
_AUTHOR = "user"  # an Agno memory is a fact about the user: the asker signal treats it as the user's words
_FIELDS = ("input", "agent_id", "team_id", "feedback")
_COLUMNS = (M.c.memory_id, M.c.user_id, M.c.content, M.c.topics, M.c.custom_metadata, M.c.created_at, M.c.stored_at)


def _agno_field(name: str) -> Any:
    return func.json_unquote(func.json_extract(M.c.custom_metadata, f"$.agno.{name}"))


def _updated_at() -> Any:
    """Agno's ``updated_at`` (epoch seconds, kept in the metadata: the row's own ``updated_at`` moves when the
    vectorizer stores an embedding); for a memory the ADK service wrote, when the server stored it."""
    return func.coalesce(cast(_agno_field("updated_at"), BigInteger), func.unix_timestamp(M.c.stored_at))


def _lexical(body: str, created: int | None) -> dict[str, Any]:
    """The row's ``search_text`` and its terms (the postings, and ``term_count`` as their sum), computed once.

    Before the transaction (:meth:`MemoriesMixin._draft`): the write then
    holds the user's guard row only for its statements.
    """
    st = search_text(_AUTHOR, utc(created), body)
    return {"search_text": st, "terms": doc_terms(st)}


_REWRITTEN = ("content", "content_hash", "search_text", "term_count", "topics", "custom_metadata", "updated_at", "tainted")
_REEMBEDDED = ("embedding", "embedding_model", "embedding_dim", "embed_status", "embed_attempts", "embed_claim",
               "superseded_by")


def _rewrite(moved: bool) -> Any:
    """Rewrites existing memory rows (locked by the caller), many in one ``INSERT ... ON DUPLICATE KEY UPDATE``.

    Every row exists, so only the update half runs: Agno's fields and the
    lexical form, and when the text ``moved`` (or a tombstone comes back)
    the embedding reset for the vectorizer and ``stored_at`` by the server's
    clock (retention).  ``created_at``, ``author`` and ``extractor`` stay.
    Was one ``UPDATE`` per row: a re-import of 500 memories, 500 round trips.
    """
    stmt = mysql_insert(M)
    assign: dict[str, Any] = {c: stmt.inserted[c] for c in _REWRITTEN + (_REEMBEDDED if moved else ())}
    if moved:
        assign["stored_at"] = _SERVER_NOW
    return stmt.on_duplicate_key_update(**assign)


def _as_dict(row: Any) -> dict[str, Any]:
    meta = (loads(row.custom_metadata) or {}).get("agno") or {}
    return {
        "memory_id": row.memory_id,
        "memory": row.content,
        "topics": loads(row.topics) or [],
        "input": meta.get("input"),
        "user_id": row.user_id,
        "agent_id": meta.get("agent_id"),
        "team_id": meta.get("team_id"),
        "feedback": meta.get("feedback"),
        "created_at": epoch(row.created_at),
        "updated_at": meta.get("updated_at") if meta.get("updated_at") is not None else epoch(row.stored_at),
    }


class MemoriesMixin(AgnoCore):
    """Agno's user-memory methods over ``agent_memories`` (see the module docstring)."""

    def _live(self) -> list[Any]:
        """What search would serve: this app, not deleted, tainted, doubtful or superseded."""
        return [M.c.app_name == self.app_name, M.c.embed_status != "deleted", M.c.tainted == 0,
                M.c.confidence >= self._memory.settings.min_confidence, M.c.superseded_by.is_(None)]

    def _select_live(self, *columns: Any) -> Select:
        """``columns`` of the live memories (:meth:`_live`), read along the primary key's app/user prefix.

        Right after a bulk load (statistics not yet gathered) OceanBase took
        ``embed_status <> 'deleted'`` for a selective range and read every
        app's rows through ``ix_memories_embed_status``, each looked up back
        in the table: AgentOS's memory page at 10k memories of one user
        104 ms, 31-38 ms without that index (seekdb, load 30, 2026-11-26).
        """
        return select(*columns).with_hint(M, "IGNORE INDEX (ix_memories_embed_status)").where(*self._live())

    # ------------------------------------------------------------------ writing
    async def _draft(self, memory: UserMemory) -> dict[str, Any]:
        """One memory's row values, checked and redacted, before any I/O."""
        if not isinstance(memory, UserMemory):
            raise InvalidValueError(f"not an Agno UserMemory: {type(memory).__name__}")
        if memory.memory_id is None:
            memory.memory_id = str(uuid4())  # as Agno's SQL databases do: the caller's object learns its id
        mid = self._id("memory_id", memory.memory_id, max_len=64)
        user = self._id("user_id", memory.user_id if memory.user_id is not None else DEFAULT_USER)
        body = memory.memory
        if not isinstance(body, str):
            raise InvalidValueError(f"UserMemory.memory must be a string, got {type(body).__name__}")
        limit = self._memory.settings.max_content_chars
        if len(body) > limit:
            raise MemoryTooLongError(f"memory is {len(body):,} characters; the limit is {limit:,} (MemorySettings.max_content_chars)")
        topics = list(memory.topics or [])
        if not all(isinstance(t, str) for t in topics):
            raise InvalidValueError("UserMemory.topics must be strings")
        fields = {n: getattr(memory, n) for n in _FIELDS}
        for n in ("agent_id", "team_id"):
            fields[n] = self._opt_id(n, fields[n])
        body, topics, fields["input"], fields["feedback"] = await self._redact(
            [body, topics, fields["input"], fields["feedback"]])
        self._sized("memory", body)
        detector = self._memory.settings.instruction_detector
        reason = detector(body) if detector is not None else None
        meta: dict[str, Any] = {"agno": {k: v for k, v in fields.items() if v is not None}}
        if reason:
            meta["tainted_reason"] = reason
        draft = {"memory_id": mid, "user_id": user, "content": body, "topics": topics, "meta": meta,
                 "tainted": 1 if reason else 0, "created_at": memory.created_at, "updated_at": memory.updated_at,
                 "content_hash": content_hash(body)}
        return {**draft, **_lexical(body, memory.created_at)}

    async def upsert_user_memory(self, memory: UserMemory, deserialize: bool | None = True) -> Any:
        """Inserts or updates one memory; ``None`` when its user opted out of memory."""
        rows = await self._upsert([memory], preserve_updated_at=False, defer_postings=False)
        if not rows:
            return None
        return UserMemory.from_dict(rows[0]) if deserialize else rows[0]

    async def upsert_memories(
        self, memories: Sequence[UserMemory], deserialize: bool | None = True, preserve_updated_at: bool = False
    ) -> list[Any]:
        """Upserts memories, one transaction per user; opted-out users' memories are left out of the result.

        The new texts' postings are written by the vectorizer's round, not in
        the call (module docstring): they were ~250 of the call's ~625 ms for
        500 memories (8,000 postings; benchmarks/README.md, agno_db.py).
        """
        rows = await self._upsert(list(memories), preserve_updated_at=preserve_updated_at, defer_postings=True)
        return [UserMemory.from_dict(r) for r in rows] if deserialize else rows

    async def _upsert(
        self, memories: list[UserMemory], *, preserve_updated_at: bool, defer_postings: bool
    ) -> list[dict[str, Any]]:
        drafts = [await self._draft(m) for m in memories]
        by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for d in drafts:
            by_user[d["user_id"]].append(d)
        out: list[dict[str, Any]] = []
        for user, mine in by_user.items():
            start = await self._read(lambda conn, u=user: guard.started(conn, self.app_name, u))
            out.extend(await self._upsert_user(user, mine, start, preserve_updated_at, defer_postings))
        return out

    async def _upsert_user(
        self, user: str, drafts: list[dict[str, Any]], start: guard.Generation, preserve_updated_at: bool,
        defer_postings: bool,
    ) -> list[dict[str, Any]]:
        app = self.app_name
        entry = self._entry("agno_memory_upsert", user)
        embed: list[str] = []
        model, dim = self._memory.embedder.model_name, self._memory.embedder.dim  # the model meant to embed them

        async def work(conn: Any) -> tuple[list[dict[str, Any]], int]:
            embed.clear()
            gen = await guard.lock(conn, app, user, utc(None))
            if gen.opted_out:
                return [], 0
            if gen.generation != start.generation:
                raise MemoryWriteRaceError("the user's memories were erased while this write was under way; nothing stored")
            ids = [d["memory_id"] for d in drafts]
            found = {r.memory_id: r for r in (await conn.execute(
                select(M.c.memory_id, M.c.content, M.c.created_at, M.c.embed_status, M.c.term_count)
                .where(M.c.app_name == app, M.c.user_id == user, M.c.memory_id.in_(ids)).with_for_update()
            )).all()}
            now = now_s()
            stored, docs_new, docs_moved, inserts = [], [], [], []
            rewrites: dict[bool, list[dict[str, Any]]] = {True: [], False: []}  # existing rows, by "text moved"
            for d in drafts:
                old = found.get(d["memory_id"])
                created = d["created_at"] if old is None else epoch(old.created_at)
                stamp = d["updated_at"] if preserve_updated_at and d["updated_at"] else (created if old is None else now)
                # the lexical form dates the memory: a row kept its own creation time (rare: recomputed)
                lex = d if created == d["created_at"] else _lexical(d["content"], created)
                st, terms = lex["search_text"], lex["terms"]
                meta = {**d["meta"], "agno": {**d["meta"]["agno"], "updated_at": stamp}}
                moved = old is None or old.content != d["content"] or old.embed_status == "deleted"
                # A new text's count is negated while its postings are left to the vectorizer (see
                # memory.postings, deferred postings); an unchanged text keeps its row's count, due or not.
                count = sum(terms.values())
                count = (-count if defer_postings else count) if moved else int(old.term_count)
                values = {
                    "content": d["content"], "content_hash": d["content_hash"], "search_text": st,
                    "term_count": count, "topics": dumps(d["topics"]),
                    "custom_metadata": dumps(meta), "updated_at": utc(None), "tainted": d["tainted"],
                }
                if old is None:
                    inserts.append(dict(memory_id=d["memory_id"], app_name=app, user_id=user, author=_AUTHOR,
                                        created_at=utc(created), extractor=_EXTRACTOR, embedding_model=model,
                                        embedding_dim=dim, **values))
                    docs_new.append((d["memory_id"], terms))
                else:
                    if moved:  # new text: a new embedding, new postings; a revived tombstone too
                        values.update(embedding=None, embedding_model=model, embedding_dim=dim,
                                      embed_status="pending", embed_attempts=0, embed_claim=None, superseded_by=None)
                        docs_moved.append((d["memory_id"], terms))
                    rewrites[moved].append(dict(memory_id=d["memory_id"], app_name=app, user_id=user,
                                                created_at=utc(created), **values))
                if moved:
                    embed.append(d["memory_id"])
                stored.append({"memory_id": d["memory_id"], "memory": d["content"], "topics": d["topics"],
                               "user_id": user, **{k: d["meta"]["agno"].get(k) for k in _FIELDS},
                               "created_at": created, "updated_at": stamp})
            if inserts:  # one multi-row INSERT (a bulk load of 500 memories: one statement, not 500)
                await conn.execute(insert(M), inserts)
            for moved, rows in rewrites.items():  # the rows exist and are locked: one statement each, not one a row
                if rows:
                    await conn.execute(_rewrite(moved), rows)
            if defer_postings:  # the vectorizer's round writes the new ones; the old words go now
                if docs_moved:
                    await conn.execute(*postings.delete_postings(app, user, [mid for mid, _ in docs_moved]))
            else:
                await postings.index_terms(conn, app, user, docs_new, replace=False)
                await postings.index_terms(conn, app, user, docs_moved, replace=True)
            return stored, len(stored)

        stored = await self._write(entry, work)
        if embed:
            self._memory.vectorizer.submit((app, user, mid) for mid in embed)
        return stored

    # ------------------------------------------------------------------ reading
    async def get_user_memory(self, memory_id: str, deserialize: bool | None = True, user_id: str | None = None) -> Any:
        mid = self._id("memory_id", memory_id, max_len=64)
        stmt = self._select_live(*_COLUMNS).where(M.c.memory_id == mid)
        if user_id is not None:
            stmt = stmt.where(M.c.user_id == self._id("user_id", user_id))
        row = await self._read(lambda conn: _first(conn, stmt.limit(1)))
        if row is None:
            return None
        return UserMemory.from_dict(_as_dict(row)) if deserialize else _as_dict(row)

    async def get_user_memories(
        self,
        user_id: str | None = None,
        agent_id: str | None = None,
        team_id: str | None = None,
        topics: list[str] | None = None,
        search_content: str | None = None,
        limit: int | None = None,
        page: int | None = None,
        sort_by: str | None = None,
        sort_order: str | None = None,
        deserialize: bool | None = True,
    ) -> Any:
        """The memories matching every filter, ``search_content`` a case-insensitive substring (as Agno's SQL databases).

        One statement: without ``deserialize`` the total rides on each row
        (``COUNT(*) OVER ()``) instead of a second scan of the user's rows
        (an empty page has no rows to carry it, and Agno answers ``([], 0)``
        there too); with it, nothing is counted and an unsorted page stops
        at its ``limit``-th match.
        """
        validate_pagination(limit, page)
        stmt = self._select_live(*_COLUMNS)
        if user_id is not None:
            stmt = stmt.where(M.c.user_id == self._id("user_id", user_id))
        if agent_id is not None:
            stmt = stmt.where(_agno_field("agent_id") == agent_id)
        if team_id is not None:
            stmt = stmt.where(_agno_field("team_id") == team_id)
        for topic in topics or []:
            stmt = stmt.where(func.json_contains(M.c.topics, dumps(topic)) == 1)
        if search_content is not None:
            stmt = stmt.where(func.lower(M.c.content).contains(search_content.lower(), autoescape=True))
        if not deserialize:
            stmt = stmt.add_columns(func.count().over().label("total"))
        col = {"memory": M.c.content, "updated_at": _updated_at(), "created_at": M.c.created_at,
               "user_id": M.c.user_id, "memory_id": M.c.memory_id}.get(sort_by or "", None)
        if col is not None:
            stmt = stmt.order_by(col.asc() if sort_order == "asc" else col.desc())
        found = await self._read(lambda conn: _all(conn, paged(stmt, limit, page)))
        rows = [_as_dict(r) for r in found]
        if deserialize:
            return [UserMemory.from_dict(r) for r in rows]
        return rows, int(found[0].total) if found else 0

    async def search_user_memories(
        self, query: str, *, user_id: str, topics: list[str] | None = None, limit: int | None = None
    ) -> list[UserMemory]:
        """The user's memories most relevant to ``query`` by hybrid retrieval, best first (an addition to ``BaseDb``).

        Where an Agno application asks for relevance (Agno's own
        ``MemoryManager`` asks a model instead, over every memory): the memory
        service's search, ``topics`` passed as its filter and then all
        required, as Agno's topic filters are.
        """
        user = self._id("user_id", user_id)
        hits = await self._memory.search(self.app_name, user, query, top_k=limit or self._memory.settings.top_k,
                                         filters={"topics": list(topics)} if topics else None)
        ids = [h.memory_id for h in hits]
        if not ids:
            return []
        stmt = self._select_live(*_COLUMNS).where(M.c.user_id == user, M.c.memory_id.in_(ids))
        found = {r.memory_id: _as_dict(r) for r in await self._read(lambda conn: _all(conn, stmt))}
        # the retriever's topic filter is "any"; Agno's filters hold together
        return [UserMemory.from_dict(found[i]) for i in ids
                if i in found and set(topics or ()) <= set(found[i]["topics"])]

    async def get_all_memory_topics(self, user_id: str | None = None) -> list[str]:
        stmt = self._select_live(M.c.topics).where(M.c.topics.is_not(None))
        if user_id is not None:
            stmt = stmt.where(M.c.user_id == self._id("user_id", user_id))
        topics: set[str] = set()
        for row in await self._read(lambda conn: _all(conn, stmt)):
            value = loads(row.topics)
            if isinstance(value, list):
                topics.update(t for t in value if isinstance(t, str))
        return list(topics)

    async def get_user_memory_stats(
        self, limit: int | None = None, page: int | None = None, user_id: str | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        validate_pagination(limit, page)
        stmt = self._select_live(M.c.user_id, func.count(M.c.memory_id).label("total_memories"),
                                 func.max(_updated_at()).label("last"))
        if user_id is not None:
            stmt = stmt.where(M.c.user_id == self._id("user_id", user_id))
        stmt = stmt.group_by(M.c.user_id)
        listing = paged(stmt.order_by(func.max(_updated_at()).desc(), M.c.user_id), limit, page)

        async def read(conn: Any) -> tuple[list[Any], int]:
            rows = (await conn.execute(listing)).all()
            return rows, int((await conn.execute(page_of(stmt))).scalar() or 0) if rows else 0

        rows, total = await self._read(read)
        return [{"user_id": r.user_id, "total_memories": int(r.total_memories), "last_memory_updated_at": int(r.last)}
                for r in rows], total

    # ------------------------------------------------------------------ deleting
    async def delete_user_memory(self, memory_id: str, user_id: str | None = None) -> None:
        await self.delete_user_memories([memory_id], user_id)

    async def delete_user_memories(self, memory_ids: list[str], user_id: str | None = None) -> None:
        """Deletes through the memory service: a tombstone stops re-ingestion from bringing a memory back."""
        mids = [self._id("memory_id", m, max_len=64) for m in self._ids("memory_id", memory_ids)]
        if not mids:
            return
        stmt = select(M.c.user_id, M.c.memory_id).where(
            M.c.app_name == self.app_name, M.c.memory_id.in_(mids), M.c.embed_status != "deleted")
        if user_id is not None:
            stmt = stmt.where(M.c.user_id == self._id("user_id", user_id))
        for row in await self._read(lambda conn: _all(conn, stmt)):
            await self._memory.delete_memory(app_name=self.app_name, user_id=row.user_id, memory_id=row.memory_id)

    async def clear_memories(self) -> None:
        """Deletes every memory of this app (Agno's and the ADK service's alike: they are one store), postings too."""
        entry = self._entry("agno_memories_clear")

        async def work(conn: Any) -> tuple[None, int]:
            await conn.execute(delete(T).where(T.c.app_name == self.app_name))
            n = (await conn.execute(delete(M).where(M.c.app_name == self.app_name))).rowcount
            return None, int(n or 0)

        await self._write(entry, work)


async def _first(conn: Any, stmt: Any) -> Any:
    return (await conn.execute(stmt)).first()


async def _all(conn: Any, stmt: Any) -> list[Any]:
    return list((await conn.execute(stmt)).all())


