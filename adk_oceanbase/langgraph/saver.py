"""``OceanBaseSaver``: LangGraph's ``BaseCheckpointSaver`` on OceanBase, seekdb and MySQL/MariaDB.

The design is the Postgres saver's: a checkpoint row holding the small
scalar channel values (:func:`.codec.inline_values`) and no other, one blob
per (channel, version) written only for the other channels a step changed
(``new_versions``), pending writes keyed by task.  What this adds:
the tables live in the ADK services' Alembic chain and can share their
``Database`` (one seekdb process, one pool), rows carry the thread's user so
``delete_user_data`` erases it, ``created_at`` is the database clock for
retention, ids and sizes are checked before any I/O (typed errors), values
pass the app's redaction policy, and writes are audited.

Each write is one transaction sent in one packet (blob inserts, checkpoint
upsert, audit row, COMMIT) on the driver connection.  The common put is one
statement: one changed value (the message list's delta when the step
appended to it) rides in the checkpoint row itself (``lg_checkpoints.delta_*``,
revision 0023), and a lone statement is sent without a COMMIT on a
connection in autocommit mode (:meth:`adk_oceanbase.rawtx.RawTransaction.single`):
seekdb commits a one-statement autocommit transaction cheaper (0.54 against
0.69 ms for ``INSERT blob; UPSERT checkpoint; COMMIT``, 0.61 for ``UPSERT;
COMMIT``: bare aiomysql, interleaved, load 2.0, 2026-11-28).  Only the kept
connection of a saver on its own engine stays in autocommit mode; on a
shared ``Database`` the statement and its COMMIT go in one packet.  Further
changed values, an audit row or writes merged by :mod:`.writer` make it a
transaction as before.  A ``put_writes`` call is one statement too, however many
writes it carries (one multi-row INSERT, :func:`.queries.insert_writes`).  Each checkpoint names the rows holding the values
it reads (:data:`.delta.ROWS_KEY`), fetched by primary key with the blobs;
before checkpoint rows of a living thread are deleted (``delete_for_runs``,
``prune``) the values they hold are copied to the blob table, where a read
also looks.  Reads (``get_tuple``, ``list``: two round trips, one after this
saver's own put or get of the thread) are :mod:`.reader`'s; this module keeps
the write side and the public class.  Payloads of
1 kB and more are stored compressed, the codec named in the row's type tag
(:func:`.codec.pack`): the server's cost of a put grows with the bytes it stores.
For the same reason a list channel that grew by appending (a message list) is
stored as the appended elements on its previous version (:mod:`.delta`), the
checkpoint naming the versions a read must fetch with it.

What a put costs on seekdb (2 vCPU, 2026-11-28): the server's share of its one
packet is ~0.75-0.9 ms, about half of it the COMMIT; the client's, ~0.5 ms
plus serializing the changed values (0.4 ms for 150 LangChain messages, the
same for every saver).  So the client keeps to a minimum around the packet:
scalars need no blob row, the audit row is driver text, and a saver on its
own engine keeps the connection of its last call (:class:`adk_oceanbase.rawtx.ConnectionLease`,
~75 us of pool checkout saved per call).
"""

from __future__ import annotations

import logging
from typing import Any, AsyncIterator, Iterator, Optional, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol
from sqlalchemy.ext.asyncio import AsyncEngine

from .._lifecycle import DatabaseService
from ..audit import RAW_INSERT_AUDIT, AuditEntry, AuditSettings, Auditor, audited, current_entry
from ..config import Config
from ..engine import Database
from ..errors import ConfigurationError, InvalidValueError, is_rerunnable
from ..gateway import retrying
from ..rawtx import COMMIT, ConnectionLease
from ..redaction import RedactionPolicy, redact_value
from ..validation import check_id
from . import codec, delta
from . import queries as q
from .bridge import Home, HomeLifecycle
from .reader import Reader, Recall, Recent, chains_of
from .writer import GroupWriter

__all__ = ["OceanBaseSaver"]

_WRITES_STATEMENT_BYTES = 4 * 1024 * 1024
"""Payload (hex text) one ``put_writes`` statement carries at most, before the call's next writes go in another.

A call is one statement in the common case; bigger ones stay within the server's packet where statements
are sent one by one (``batch_statements=False``), as one statement per write did."""

logger = logging.getLogger(__name__)


def _audit(operation: str, arg: str | None = None, *, read: bool = False):
    def describe(call: Any) -> AuditEntry:
        a = call.arguments
        conf = ((a.get("config") or {}).get("configurable") or {}) if arg == "config" else {}
        thread = conf.get("thread_id") if arg == "config" else (a[arg] if arg is not None else None)
        user = conf.get("user_id")
        return AuditEntry(operation, a["self"].app_name, None if user is None else str(user),
                          None if thread is None else str(thread))

    if read:  # sampled by AuditSettings.read_sample, as the session service's reads are
        return audited(describe, read=True, count=lambda result: len(result) if isinstance(result, list) else int(result is not None))
    return audited(describe)


class OceanBaseSaver(HomeLifecycle, DatabaseService, BaseCheckpointSaver[str]):
    """LangGraph checkpointer on OceanBase/seekdb/MySQL, sharing the ADK services' database and schema.

    Args:
        url: ``seekdb:///dir``, ``oceanbase://...`` or ``mysql+aiomysql://...``;
            default ``ADK_OCEANBASE_URL`` or the embedded home.
        config / database / engine: as for the ADK services (``database=`` shares
            one with ``OceanBaseSessionService(...).database``; not closed by us).
        app_name: the first key column of every row (threads of two apps never
            meet); audit rows and redaction modes are per app.
        serde: LangGraph serializer (default ``JsonPlusSerializer``).
        redaction: a :class:`~adk_oceanbase.redaction.RedactionPolicy`; when it
            covers ``app_name``, channel values and pending writes are redacted
            before they are serialized (metadata is not: ``list`` filters on it).
        audit: :class:`~adk_oceanbase.audit.AuditSettings`: one ``audit_log`` row per
            write (``lg_put``, ``lg_put_writes``, ``lg_delete_thread``, ...).
        max_value_bytes: largest serialized checkpoint, channel value or write
            (``CheckpointTooLargeError`` beyond it; 16 MiB), before compression.
        compression: ``"zstd"`` (the default when ``zstandard`` is installed),
            ``"zlib"``, or ``None``: how payloads of 1 kB and more are stored
            (:func:`.codec.pack`).  Rows are read whichever way they were written.
        delta_every: a list channel that grew by appending (a message list) is
            stored as the appended elements only, on the version before it, with
            a whole snapshot every ``delta_every`` versions: a read fetches at most
            that many rows, in the same round trip (:mod:`.delta`).  ``1`` stores
            every version whole, as the Postgres saver does.

    A thread is tied to a user by ``configurable["user_id"]`` in the config of
    its calls (LangGraph passes the run's whole ``configurable`` to the saver):
    its rows carry it and ``delete_user_data(app_name, user_id)`` erases them.

    Example:
        >>> async with OceanBaseSaver.from_conn_string("seekdb:///tmp/lg") as saver:  # doctest: +SKIP
        ...     graph = builder.compile(checkpointer=saver)
        ...     await graph.ainvoke(inputs, {"configurable": {"thread_id": "t1", "user_id": "u1"}})
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        config: Config | None = None,
        database: Database | None = None,
        engine: AsyncEngine | None = None,
        app_name: str = "langgraph",
        serde: SerializerProtocol | None = None,
        redaction: RedactionPolicy | None = None,
        audit: AuditSettings | None = None,
        max_value_bytes: int = 16 * 1024 * 1024,
        compression: str | None = codec.WRITER,
        delta_every: int = 8,
        auto_setup: bool = True,
    ) -> None:
        BaseCheckpointSaver.__init__(self, serde=serde)
        if compression not in (None, *codec.CODECS):
            hint = " (zstd needs the zstandard package)" if compression == "zstd" else ""
            raise ConfigurationError(f"compression must be one of {codec.CODECS} or None, got {compression!r}{hint}")
        self.compression = compression
        if not isinstance(delta_every, int) or isinstance(delta_every, bool) or delta_every < 1:
            raise ConfigurationError(f"delta_every must be a positive integer, got {delta_every!r}")
        self.delta_every = delta_every
        self._bind_database(url, config, database, engine, auto_setup)
        self.app_name = check_id("app_name", app_name)
        self._redaction = redaction
        self._auditor = Auditor(audit)
        self.max_value_bytes = max_value_bytes
        self._home = Home()
        self._writer = GroupWriter(self._commit)
        # The connection of the last transaction is kept for the next (a graph's calls come one at a time),
        # when the engine is ours: a saver on a shared Database may never be closed, and a connection
        # kept past its owner's life would hold a pool slot until the garbage collector ends it.
        self._lease = ConnectionLease(self.database.config.pool_recycle) if self._owns_db else None
        self._recall = Recall()

    # ------------------------------------------------------------------ helpers
    def get_next_version(self, current: Optional[str], channel: None = None) -> str:  # type: ignore[override]
        return codec.next_version(current)

    async def _redacted(self, values: Any) -> Any:
        redactor = self._redaction.redactor_for(self.app_name) if self._redaction is not None else None
        return values if redactor is None or not values else await redact_value(redactor, values)

    def _serialize(self, what: str, value: Any) -> tuple[str, bytes]:
        vtype, payload = self.serde.dumps_typed(value)
        codec.check_size(what, payload, self.max_value_bytes)
        return vtype, payload  # type: ignore[return-value]

    def _dump(self, what: str, value: Any) -> tuple[str, bytes]:
        """The value as stored: serialized, size-checked, then compressed when that pays (:func:`.codec.pack`)."""
        return codec.pack(*self._serialize(what, value), self.compression)  # type: ignore[return-value]

    def _loads(self, typed: tuple[str, Any]) -> Any:
        return self.serde.loads_typed(codec.unpack(typed[0], typed[1]))

    async def _close(self) -> None:
        """What ``aclose`` / ``close`` release (:class:`.bridge.HomeLifecycle`): after the writes in flight, the engine."""
        await self._writer.idle()
        if self._lease is not None:
            await self._lease.release()
        await self._release()

    async def _write(self, statements: list[tuple[Any, Any]]) -> None:
        """Commits ``statements`` with the call's audit row, in a group with the writes that arrive meanwhile (:mod:`.writer`)."""
        await self._engine()
        if (entry := current_entry()) is not None:
            # Driver text, not ``entry.insert()``: compiling the Core INSERT cost ~0.2 ms of CPU per write.
            statements = [*statements, (RAW_INSERT_AUDIT, entry.row())]
        await self._writer.write(statements)

    async def _fetch(self, statements: list[Any]) -> list[Any]:
        """Read-only ``statements`` in one round trip, on the kept connection when it is free (:class:`.rawtx.ConnectionLease`)."""
        return await self._read_batch(statements, lease=self._lease)

    async def _commit(self, statements: list[tuple[Any, Any]]) -> None:
        """One transaction in one round trip; re-run after a deadlock or a lost connection (every write is idempotent)."""

        async def once() -> None:
            async with self._raw_tx(self._lease) as tx:
                if len(statements) == 1:  # the common put: one statement, in autocommit mode where allowed
                    await tx.single(*statements[0])
                else:
                    await tx.batch([*statements, (COMMIT, None)])

        await retrying(once, when=is_rerunnable, what="a checkpoint write")

    # ------------------------------------------------------------------ writes
    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        return await self._home.run(lambda: self._put(config, checkpoint, metadata, new_versions))

    @_audit("lg_put", "config")
    async def _put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: Any, new_versions: Any) -> RunnableConfig:
        thread, ns, parent = codec.key_of(config)
        user = codec.user_of(config)
        cid = codec.check_id_of(checkpoint)
        stored = dict(checkpoint)
        values = dict(stored.pop("channel_values", None) or {})
        versions = {ch: str(v) for ch, v in (stored.get("channel_versions") or {}).items()}
        # Small scalars ride in the checkpoint row, changed or not, as in the Postgres saver: no blob row each.
        inline = codec.inline_values(values, versions)
        changed = {codec.check_channel(ch): values[ch] for ch in new_versions if ch in values and ch not in inline}
        redacted = await self._redacted({**changed, **inline})
        changed = {ch: redacted[ch] for ch in changed}
        inline = {ch: redacted[ch] for ch in inline}
        prev = self._recall.get(thread, ns)
        # The parent as this saver last stored or read it: the namespace's newest in a graph's run, another
        # checkpoint for an ``update_state`` fork (which reads the thread's newest after its fork point).
        base = self._recall.get(thread, ns, parent) if parent is not None else None
        # A channel this step left alone keeps its blob, and the chain that blob is built on (a version names
        # one blob: whichever checkpoint said its chain is right; the parent's word last).
        chains = {}
        for known in (prev, base):
            if known is not None:
                chains.update((ch, c) for ch, c in known.chains.items() if versions.get(ch) == known.versions.get(ch))
        # A delta rests on the channel's version in the parent checkpoint, as this saver last stored or read it.
        parents = base.versions if base is not None else {}
        md, run_id = codec.metadata_json(config, metadata)
        blobs, lists = [], {}
        riders: list[tuple[bool, int]] = []  # (is a delta, index in blobs): values that may ride in the row
        for ch, version in new_versions.items():
            version = str(version)
            blob = {"app": self.app_name, "thread": thread, "ns": ns, "channel": ch, "version": version, "user": user}
            chains.pop(ch, None)
            if ch in inline:
                continue
            if ch in changed:
                vtype, payload = self._serialize(f"channel {ch!r}", changed[ch])
                known = self._recall.value(thread, ns, ch) if codec.names_one_value(version) else None
                if known is not None and known.version != version and parents.get(ch) != known.version:
                    known = None
                plan = delta.plan(known, version, vtype, payload, user, self.delta_every)
                btype, data = codec.pack(plan.vtype, plan.payload, self.compression)
                riders.append((bool(plan.chain), len(blobs)))
                blobs.append((q.INSERT_BLOBS, {**blob, "type": btype, "payload": codec.hex_of(data)}))
                if plan.chain:
                    chains[ch] = plan.chain
                if codec.names_one_value(version):
                    lists[ch] = plan.known
            else:
                blobs.append((q.INSERT_EMPTY_BLOB, {**blob, "type": codec.EMPTY}))
        # One changed value (the message list's delta when there is one) rides in the checkpoint row, so the
        # common put is one statement (see the module docstring); not into a checkpoint this saver wrote
        # before: a re-put would replace the value that row holds, which later checkpoints may name.
        rider = self._rider(blobs, riders) if prev is None or prev.cid != cid else None
        before = {**((prev.rows or {}) if prev is not None else {}), **((base.rows or {}) if base is not None else {})}
        rows = self._rows_for(versions, chains, inline, before, cid, rider)
        body = {**stored, "channel_values": inline}
        if chains:
            body[delta.CHAIN_KEY] = {ch: list(c) for ch, c in chains.items()}
        if rows:
            body[delta.ROWS_KEY] = by_channel = {}
            for (ch, v), holder in rows.items():
                by_channel.setdefault(ch, {})[v] = holder
        vtype, payload = self._dump("the checkpoint", body)
        row = {"app": self.app_name, "thread": thread, "ns": ns, "id": cid, "parent": parent, "user": user,
               "run": run_id, "type": vtype, "checkpoint": codec.hex_of(payload), "metadata": md}
        if rider is None:
            checkpoint = (q.UPSERT_CHECKPOINT, row)
        else:
            checkpoint = (q.UPSERT_CHECKPOINT_DELTA, {**row, "channel": rider["channel"], "version": rider["version"],
                                                      "dtype": rider["type"], "payload": rider["payload"]})
        await self._write([*blobs, checkpoint])
        self._recall.remember(thread, ns, Recent(cid, versions, chains, frozenset(inline), rows), lists)
        return codec.config_for(thread, ns, cid)  # type: ignore[return-value]

    @staticmethod
    def _rider(blobs: list[tuple[Any, Any]], riders: list[tuple[bool, int]]) -> dict[str, Any] | None:
        """The blob row that rides in the checkpoint row instead (taken out of ``blobs``).

        A delta first (the message list's), else the first changed value."""
        if not riders:
            return None
        return blobs.pop(max(riders, key=lambda r: (r[0], -r[1]))[1])[1]

    @staticmethod
    def _rows_for(versions: dict[str, str], chains: dict[str, tuple[str, ...]], inline: dict[str, Any],
                  before: dict[tuple[str, str], str], cid: str, rider: dict[str, Any] | None) -> dict[tuple[str, str], str]:
        """Where each value a read of this checkpoint needs is held, for those in a checkpoint row (:data:`.delta.ROWS_KEY`).

        The rider is in this checkpoint's row; a version this step did not
        write (an unchanged channel, a delta's bases) is where ``before`` says:
        what the parent checkpoint, and the namespace's newest, named as this
        saver stored or read them.
        """
        mine = (rider["channel"], rider["version"]) if rider is not None else None
        rows = {}
        for ch, v in versions.items():
            if ch in inline:
                continue
            for version in (v, *chains.get(ch, ())):
                holder = cid if (ch, version) == mine else before.get((ch, version))
                if holder is not None:
                    rows[(ch, version)] = holder
        return rows

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        await self._home.run(lambda: self._put_writes(config, writes, task_id, task_path))

    @_audit("lg_put_writes", "config")
    async def _put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str) -> None:
        thread, ns, cid = codec.key_of(config)
        if cid is None:
            raise InvalidValueError("put_writes needs config['configurable']['checkpoint_id']")
        task = check_id("task_id", task_id, max_len=64)
        if len(task_path) > 255:
            raise InvalidValueError(f"task_path is {len(task_path)} characters; the limit is 255")
        user = codec.user_of(config)
        values = await self._redacted([value for _, value in writes])
        rows = []
        for idx, ((channel, _), value) in enumerate(zip(writes, values)):
            wtype, blob = self._dump(f"the write to {channel!r}", value)
            rows.append((codec.write_index(codec.check_channel(channel), idx), channel, wtype, codec.hex_of(blob)))
        if rows:
            # One statement for all of them: alone, it is sent in autocommit mode as a put is (see the module docstring).
            key = {"app": self.app_name, "thread": thread, "ns": ns, "id": cid, "task": task, "user": user, "path": task_path}
            special = all(r[0] < 0 for r in rows)
            await self._write([q.insert_writes(key, part, special) for part in self._parts(rows)])

    @staticmethod
    def _parts(rows: list[tuple[int, str, str, str]]) -> list[list[tuple[int, str, str, str]]]:
        """``rows`` in order, cut where a part's payloads would pass ``_WRITES_STATEMENT_BYTES`` (one row at least each)."""
        parts: list[list[tuple[int, str, str, str]]] = [[]]
        size = 0
        for row in rows:
            if parts[-1] and size + len(row[3]) > _WRITES_STATEMENT_BYTES:
                parts.append([])
                size = 0
            parts[-1].append(row)
            size += len(row[3])
        return parts

    async def adelete_thread(self, thread_id: str) -> None:
        await self._home.run(lambda: self._delete_thread(thread_id))

    @_audit("lg_delete_thread", "thread_id")
    async def _delete_thread(self, thread_id: str) -> None:
        params = {"app": self.app_name, "thread": codec.thread_of(thread_id)}
        self._recall.forget([params["thread"]])
        await self._write([(sql, params) for sql in q.DELETE_THREAD])

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._home.run(lambda: self._delete_for_runs(run_ids))

    @_audit("lg_delete_runs")
    async def _delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Deletes the runs' checkpoints and their writes; blobs stay (a later checkpoint may name the same version)."""
        runs = [check_id("run_id", r) for r in run_ids]
        if runs:
            statements, params = q.delete_runs(self.app_name, runs)
            await self._write([(sql, params) for sql in statements])

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._home.run(lambda: self._copy_thread(source_thread_id, target_thread_id))

    @_audit("lg_copy_thread", "target_thread_id")
    async def _copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copies every checkpoint (the whole parent chain), blob and write of a thread, in one transaction."""
        params = {"app": self.app_name, "source": codec.thread_of(source_thread_id),
                  "target": codec.thread_of(target_thread_id)}
        self._recall.forget([params["target"]])
        await self._write([(q.COPY_CHECKPOINTS, params), (q.COPY_BLOBS, params), (q.COPY_WRITES, params)])

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._home.run(lambda: self._prune(thread_ids, strategy))

    @_audit("lg_prune")
    async def _prune(self, thread_ids: Sequence[str], strategy: str) -> None:
        """``keep_latest``: each namespace's newest checkpoint, its writes and the blobs it names stay; ``delete``: all goes.

        Not ``DeltaChannel``-aware (see LangGraph's ``prune`` note): a graph
        using delta channels should not be pruned with ``keep_latest``.
        """
        if strategy not in ("keep_latest", "delete"):
            raise InvalidValueError(f"strategy must be 'keep_latest' or 'delete', got {strategy!r}")
        threads = [codec.thread_of(t) for t in thread_ids]
        if not threads:
            return
        self._recall.forget(threads)
        if strategy == "delete":
            await self._write([(sql, {"app": self.app_name, "thread": t}) for t in threads for sql in q.DELETE_THREAD])
            return
        sql, params = q.thread_namespaces(self.app_name, threads)
        ((_, latest),) = await self._fetch([(sql, params)])
        statements: list[tuple[Any, Any]] = []
        for thread, ns, cid, _parent, vtype, payload, _md in latest:
            cp = self._loads((vtype, payload))
            versions = {c: str(v) for c, v in cp.get("channel_versions", {}).items()}
            keep = Recent(cid, versions, chains_of(cp, versions)).blob_keys()  # the deltas' bases stay too
            doomed, p = q.delete_checkpoints_except(self.app_name, thread, ns, cid)
            statements += [(s, p) for s in doomed]
            statements.append(q.delete_blobs_except(self.app_name, thread, ns, keep))
        if statements:
            await self._write(statements)

    # ------------------------------------------------------------------ reads (:mod:`.reader`)
    def _reader(self) -> Reader:
        """The read side, made per call: ``with_allowlist`` (LangGraph's strict msgpack mode) hands the graph a
        shallow copy of this saver with another ``serde``, which its reads must use."""
        return Reader(self.app_name, self._fetch, self.serde.loads_typed, self._recall)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._home.run(lambda: self._get_tuple(config))

    @_audit("lg_get", "config", read=True)
    async def _get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread, ns, cid = codec.key_of(config)
        await self._engine()
        return await self._reader().get_tuple(thread, ns, cid)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for tup in await self._home.run(lambda: self._list(config, filter, before, limit)):
            yield tup

    @_audit("lg_list", "config", read=True)
    async def _list(self, config: Any, flt: Any, before: Any, limit: int | None) -> list[CheckpointTuple]:

        thread = ns = cid = None
        if config is not None:
            conf = config.get("configurable") or {}
            thread = codec.thread_of(conf["thread_id"]) if conf.get("thread_id") is not None else None
            ns = conf.get("checkpoint_ns")
            cid = conf.get("checkpoint_id")
        before_id = codec.key_of({"configurable": {"thread_id": "-", **before["configurable"]}})[2] if before else None
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise InvalidValueError(f"limit must be a non-negative integer, got {limit!r}")
        pairs = codec.filter_pairs(flt)
        await self._engine()
        return await self._reader().list(thread, ns, cid, pairs, before_id, limit)

    # ------------------------------------------------------------------ sync
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._home.run_sync(lambda: self._get_tuple(config), "get_tuple")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        yield from self._home.run_sync(lambda: self._list(config, filter, before, limit), "list")

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        return self._home.run_sync(lambda: self._put(config, checkpoint, metadata, new_versions), "put")

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        self._home.run_sync(lambda: self._put_writes(config, writes, task_id, task_path), "put_writes")

    def delete_thread(self, thread_id: str) -> None:
        self._home.run_sync(lambda: self._delete_thread(thread_id), "delete_thread")

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._home.run_sync(lambda: self._delete_for_runs(run_ids), "delete_for_runs")

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._home.run_sync(lambda: self._copy_thread(source_thread_id, target_thread_id), "copy_thread")

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._home.run_sync(lambda: self._prune(thread_ids, strategy), "prune")
