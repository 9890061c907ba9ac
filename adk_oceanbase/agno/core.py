"""What every area of the Agno database shares: the bound database, the app namespace, codecs, checks, redaction, audit.

The areas (:mod:`.sessions`, :mod:`.memories`, :mod:`.records`,
:mod:`.traces`) are mixins over :class:`AgnoCore`; :mod:`.db` assembles them
into Agno's ``AsyncBaseDb`` and a ``BaseDb`` facade.  Every statement runs
through :class:`~adk_oceanbase._lifecycle.DatabaseService` and so through
:mod:`adk_oceanbase.gateway` (typed errors, schema check on first use).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from datetime import date, datetime, timezone
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence, TypeVar
from uuid import UUID

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from .._lifecycle import DatabaseService
from ..audit import AuditEntry, Auditor, AuditSettings, error_code
from ..config import Config
from ..engine import Database
from .. import gateway
from ..errors import InvalidIdentifierError, InvalidValueError, PayloadTooLargeError, ValidationError, is_rerunnable
from ..memory import Embedder, MemorySettings, OceanBaseMemoryService
from ..rawtx import COMMIT
from ..redaction import RedactionPolicy, redact_value
from ..schema import ID_LEN
from ..validation import check_id, check_text

__all__ = ["AgnoCore", "DEFAULT_APP", "DEFAULT_USER", "dumps", "loads", "page_of", "paged"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_APP = "agno"
"""The app namespace when none is given: what the ADK services see these rows under."""

DEFAULT_USER = "default"
"""A memory written without a user goes to Agno's own default user (``MemoryManager`` uses the same name)."""


def _default(value: Any) -> Any:
    """JSON for what Agno's records carry besides plain JSON (as Agno's own encoder writes them)."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if hasattr(value, "value"):  # enums
        return value.value
    raise InvalidValueError(f"{type(value).__name__} cannot be stored as JSON")


def dumps(value: Any) -> str | None:
    """``value`` as JSON text for a ``LONGTEXT`` column; ``None`` stays NULL."""
    if value is None:
        return None
    try:
        return json.dumps(value, default=_default, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # NaN / infinity: would not load back as itself
        raise InvalidValueError(f"a value cannot be stored as JSON: {exc}") from exc
    except RecursionError as exc:
        raise InvalidValueError("a value is nested too deeply to store as JSON") from exc


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def paged(stmt: Select, limit: int | None, page: int | None) -> Select:
    """Agno's paging: ``limit`` rows, page 1-based; no limit reads everything."""
    if limit is None:
        return stmt
    stmt = stmt.limit(limit)
    if page is not None:
        stmt = stmt.offset((page - 1) * limit)
    return stmt


def page_of(stmt: Select) -> Select:
    """The count of what ``stmt`` selects, before paging."""
    return select(func.count()).select_from(stmt.order_by(None).subquery())


def now_s() -> int:
    return int(time.time())


class AgnoCore(DatabaseService):
    """The shared state of an Agno database on this store; see :class:`adk_oceanbase.agno.AsyncOceanBaseAgnoDb`."""

    app_name: str

    def _init_core(
        self,
        url: str | None,
        *,
        app_name: str,
        config: Config | None,
        database: Database | None,
        engine: AsyncEngine | None,
        memory: OceanBaseMemoryService | None,
        embedder: Embedder | None,
        memory_settings: MemorySettings | None,
        redaction: RedactionPolicy | None,
        audit: AuditSettings | None,
        auto_setup: bool,
    ) -> None:
        if memory is not None and any(x is not None for x in (url, config, database, engine)):
            raise ValidationError("pass memory= alone: the Agno database then shares its database")
        if memory is not None:
            database = memory.database
        self._bind_database(url, config, database, engine, auto_setup)
        self.app_name = check_id("app_name", app_name)
        self._redaction = redaction
        self._auditor = Auditor(audit)
        self._owns_memory = memory is None
        # consolidate=False: Agno's databases never merge memories (its MemoryManager updates and deletes
        # them by id, so a merged-away id would vanish from under it), and the merge check was a vector
        # query per memory in the vectorizer, most of a bulk load's time to searchable (issue 28).
        settings = dataclasses.replace(memory_settings or MemorySettings(), consolidate=False)
        self._memory = memory or OceanBaseMemoryService(
            database=self._db, embedder=embedder, settings=settings, redaction=redaction, audit=audit,
            auto_setup=auto_setup,
        )

    @property
    def memory_service(self) -> OceanBaseMemoryService:
        """The ADK memory service over the same ``agent_memories`` rows (search, opt-out, taint, erasure guards)."""
        return self._memory

    async def aclose(self) -> None:
        """Stops the memory service's vectorizer (when this database made it) and releases what it created."""
        if self._owns_memory:
            await self._memory.close()
        await self._release()

    # ------------------------------------------------------------------ checks
    def _id(self, kind: str, value: Any, *, max_len: int = ID_LEN) -> str:
        return check_id(kind, value, max_len=max_len)

    def _opt_id(self, kind: str, value: Any, *, max_len: int = ID_LEN) -> str | None:
        return None if value is None else check_id(kind, value, max_len=max_len)

    def _ids(self, kind: str, values: Iterable[Any]) -> list[str]:
        if isinstance(values, (str, bytes)):
            raise InvalidIdentifierError(f"{kind} must be a list of ids, got a single {type(values).__name__}")
        return [check_id(kind, v) for v in values]

    def _sized(self, what: str, text: str | None) -> str | None:
        """``text`` if its UTF-8 fits ``Config.max_event_bytes``; raises :class:`PayloadTooLargeError` otherwise."""
        if text is None:
            return None
        check_text(what, text, InvalidValueError)
        size = len(text.encode("utf-8"))
        limit = self._db.config.max_event_bytes
        if size > limit:
            raise PayloadTooLargeError(f"{what} is {size:,} bytes of JSON; the limit is {limit:,} (Config.max_event_bytes)")
        return text

    def _json(self, what: str, value: Any) -> str | None:
        return self._sized(what, dumps(value))

    # ------------------------------------------------------------------ redaction
    def _redacts(self) -> bool:
        return self._redaction is not None and self._redaction.active_for(self.app_name)

    async def _redact(self, value: Any) -> Any:
        """``value`` (a record's free-form payloads, as one list) with every string and dict key redacted; before any I/O."""
        if not self._redacts():
            return value
        redactor = self._redaction.redactor_for(self.app_name)  # type: ignore[union-attr]
        return value if redactor is None else await redact_value(redactor, value)

    # ------------------------------------------------------------------ audit
    def _entry(self, operation: str, user_id: str | None = None, session_id: str | None = None) -> AuditEntry | None:
        """An audit row for a write (ids only), or ``None`` when auditing is off."""
        if not self._auditor.enabled:
            return None
        entry = AuditEntry(operation, self.app_name, user_id, session_id)
        if entry.actor is None:
            entry.actor = self._auditor.settings.actor  # type: ignore[union-attr]
        return entry

    async def _audit(self, conn: AsyncConnection, entry: AuditEntry | None, rows: int | None) -> None:
        """Writes the audit row in the write's own transaction (no write without its record)."""
        if entry is not None:
            entry.row_count = rows
            await conn.execute(entry.insert())

    async def _write(self, entry: AuditEntry | None, work: Callable[[AsyncConnection], Awaitable[tuple[T, int]]]) -> T:
        """Runs ``work`` (returning its result and rows written) in one transaction with its audit row.

        Every write here is idempotent (upserts by key, deletes), so a deadlock
        victim or a write that lost its connection runs once more.  A failed
        write gets an ``error`` audit row of its own, as in the ADK services.
        """

        async def tx(conn: AsyncConnection) -> T:
            result, rows = await work(conn)
            await self._audit(conn, entry, rows)
            return result

        try:
            return await self._rerunnable_tx(tx)
        except ValidationError:
            raise
        except Exception as exc:
            if entry is not None:
                entry.row_count = None
                await self._auditor.write_alone(self._tx, entry, "error", error_code(exc))
            raise

    async def _write_packet(self, entry: AuditEntry | None, statements: list[tuple[Any, Any]], rows: int) -> list[Any]:
        """Sends idempotent ``statements``, the audit row and the COMMIT in one packet (:mod:`adk_oceanbase.rawtx`).

        For the per-turn writes (a run, a session): one round trip instead of
        one per statement.  Re-run once after a deadlock or a lost connection,
        like :meth:`_write`; returns each statement's ``(count, rows)``.
        """

        async def once() -> list[Any]:
            batch = list(statements)
            if entry is not None:
                entry.row_count = rows
                batch.append((entry.insert(), None))
            async with self._raw_tx() as tx:
                return await tx.batch([*batch, (COMMIT, None)])

        try:
            return await gateway.retrying(once, when=is_rerunnable, what="an Agno write")
        except ValidationError:
            raise
        except Exception as exc:
            if entry is not None:
                entry.row_count = None
                await self._auditor.write_alone(self._tx, entry, "error", error_code(exc))
            raise


def sort_column(table: Any, sort_by: str | None, default: str = "created_at") -> Any:
    """The column Agno asked to sort by; an unknown name sorts by ``default`` (as Agno's ``apply_sorting`` does)."""
    name = sort_by if sort_by is not None and sort_by in table.c else default
    return table.c[name]


def ordered(stmt: Select, table: Any, sort_by: str | None, sort_order: str | None, default: str = "created_at") -> Select:
    col = sort_column(table, sort_by, default)
    return stmt.order_by(col.asc() if sort_order == "asc" else col.desc())


def json_fields(row: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """A row as a dict, its JSON columns ``names`` loaded."""
    out = dict(row)
    for n in names:
        if n in out:
            out[n] = loads(out[n])
    return out


def utc(epoch: int | float | None) -> datetime:
    """Epoch seconds (Agno's clock) as a naive UTC datetime for a ``DATETIME`` column; now when missing."""
    if epoch is None:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    return datetime.fromtimestamp(float(epoch), tz=timezone.utc).replace(tzinfo=None)


def epoch(value: datetime | None) -> int | None:
    return None if value is None else int(value.replace(tzinfo=timezone.utc).timestamp())
