"""SQL of the LangGraph Store: named texts with ``%(name)s`` parameters, and builders for prefixes and IN lists. Pure.

A namespace is stored as its labels joined by ``"."`` (LangGraph forbids the
period in a label), so "under prefix P" is ``namespace = P OR namespace LIKE
'P.%'`` with ``%``/``_``/``\\`` escaped: one range scan of the primary key.
Expired items (``expires_at`` passed, database clock) are never read.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "DELETE_FIELDS",
    "DELETE_ITEM",
    "INSERT_FIELDS",
    "LIVE",
    "REFRESH",
    "SWEEP_FIELDS",
    "SWEEP_ITEMS",
    "UPSERT_ITEM",
    "field_hits",
    "get_items",
    "list_namespaces",
    "lock_memories",
    "purge_items",
    "search_items",
    "under",
    "unindexed_items",
]

LIVE = "(expires_at IS NULL OR expires_at > UTC_TIMESTAMP(6))"
_ITEM = "namespace, item_key, value_json, created_at, updated_at, ttl_minutes"
# ttl_minutes -> seconds on the database clock (a fractional SECOND interval keeps microseconds; MICROSECOND
# overflowed seekdb's interval range past ~35 minutes: error 1690)
_EXPIRES = "DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ROUND(%(ttl)s * 60, 6) SECOND)"

UPSERT_ITEM = f"""
INSERT INTO lg_store_items
    (app_name, namespace, item_key, user_id, value_json, created_at, updated_at, expires_at, ttl_minutes, indexed_fields)
VALUES (%(app)s, %(ns)s, %(key)s, %(user)s, %(value)s, %(now)s, %(now)s,
        CASE WHEN %(ttl)s IS NULL THEN NULL ELSE {_EXPIRES} END, %(ttl)s, %(fields)s)
ON DUPLICATE KEY UPDATE
    created_at = IF({LIVE}, created_at, VALUES(created_at)),
    user_id = VALUES(user_id), value_json = VALUES(value_json), updated_at = VALUES(updated_at),
    expires_at = VALUES(expires_at), ttl_minutes = VALUES(ttl_minutes), indexed_fields = VALUES(indexed_fields),
    stored_at = UTC_TIMESTAMP(6)
"""
DELETE_ITEM = "DELETE FROM lg_store_items WHERE app_name = %(app)s AND namespace = %(ns)s AND item_key = %(key)s"
DELETE_FIELDS = "DELETE FROM lg_store_fields WHERE app_name = %(app)s AND namespace = %(ns)s AND item_key = %(key)s"
INSERT_FIELDS = """
INSERT INTO lg_store_fields (app_name, namespace, item_key, field_no, user_id, path, memory_user, memory_id)
VALUES (%(app)s, %(ns)s, %(key)s, %(no)s, %(user)s, %(path)s, %(muser)s, %(mid)s)
"""
REFRESH = (
    "UPDATE lg_store_items SET expires_at = "
    "DATE_ADD(UTC_TIMESTAMP(6), INTERVAL ROUND(ttl_minutes * 60, 6) SECOND) "
    "WHERE app_name = %(app)s AND namespace = %(ns)s AND item_key = %(key)s AND ttl_minutes IS NOT NULL AND " + LIVE
)
SWEEP_FIELDS = (
    "DELETE f FROM lg_store_fields f JOIN lg_store_items i ON i.app_name = f.app_name AND i.namespace = f.namespace "
    "AND i.item_key = f.item_key WHERE i.app_name = %(app)s AND i.expires_at <= UTC_TIMESTAMP(6)"
)
SWEEP_ITEMS = "DELETE FROM lg_store_items WHERE app_name = %(app)s AND expires_at <= UTC_TIMESTAMP(6)"


# ---------------------------------------------------------------- purging field memories
# When an item's field links go (delete, overwrite, TTL sweep), the field memories no other item
# links to are deleted for real, with their lexical postings, in the same transaction, before the
# links: a tombstone (the memory service's delete_memory) would keep the text from ever being
# indexed again when an item with it comes back.  Race with a put of the same text by another
# item: the put locks the memory rows its links name (lock_memories) before it writes them and
# rolls back if one is gone; these DELETEs lock the rows they remove.  Whichever locks first, the
# other sees its outcome: a put committed first left a link, which the NOT EXISTS below sees (a
# locking read inside DML on InnoDB at REPEATABLE READ, a re-run after the lock wait on OceanBase);
# a purge committed first left no row, and the put adds the memory again and retries.
# The TTL sweep's form is governance.langgraph_sweep.EXPIRED_PURGE (retention runs it too).
_MEMORY_OF_LINK = "m.app_name = f.app_name AND m.user_id = f.memory_user AND m.memory_id = f.memory_id"
_TERMS_OF_LINK = "t.app_name = f.app_name AND t.user_id = f.memory_user AND t.memory_id = f.memory_id"
_NO_MEMORY_ROW = (
    "NOT EXISTS (SELECT 1 FROM agent_memories m WHERE m.app_name = t.app_name AND m.user_id = t.user_id "
    "AND m.memory_id = t.memory_id)"
)


def purge_items(app: str, items: Sequence[tuple[str, str]], keep: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Deletes the field memories that only the batch's ``items`` ``(namespace, key)`` link to, then their postings.

    Two statements for the whole batch, whatever its size: the batch's items
    are one row-value ``IN`` list, named again in the ``NOT EXISTS`` that looks
    for a link from an item outside the batch (a statement per item naming
    every kept id grew with the square of the batch: 1,000 puts were 98 MB
    of SQL, past the server's packet limit).  Run before the batch's
    ``DELETE_FIELDS``.  ``keep``: memory ids the batch links (again) to, which
    stay whoever else links to them.
    """
    params: dict[str, Any] = {"app": app}
    batch = _pairs(items, params, "n", "k")
    spare = ""
    if keep:
        names = []
        for i, mid in enumerate(keep):
            params[f"keep{i}"] = mid
            names.append(f"%(keep{i})s")
        spare = f" AND f.memory_id NOT IN ({', '.join(names)})"
    links = f"f.app_name = %(app)s AND (f.namespace, f.item_key) IN ({batch}){spare}"
    outside = (
        "SELECT 1 FROM lg_store_fields o WHERE o.app_name = f.app_name AND o.memory_user = f.memory_user "
        f"AND o.memory_id = f.memory_id AND (o.namespace, o.item_key) NOT IN ({batch})"
    )
    memories = f"DELETE m FROM agent_memories m JOIN lg_store_fields f ON {_MEMORY_OF_LINK} WHERE {links} AND NOT EXISTS ({outside})"
    postings = f"DELETE t FROM memory_terms t JOIN lg_store_fields f ON {_TERMS_OF_LINK} WHERE {links} AND {_NO_MEMORY_ROW}"
    return [(memories, params), (postings, params)]


def lock_memories(app: str, memories: Sequence[tuple[str, str]]) -> tuple[str, dict[str, Any]]:
    """Locks the field memories ``(memory_user, memory_id)`` a put links to; the rows found are the ones still there."""
    params: dict[str, Any] = {"app": app}
    sql = (f"SELECT user_id, memory_id FROM agent_memories WHERE app_name = %(app)s "
           f"AND (user_id, memory_id) IN ({_pairs(memories, params, 'u', 'm')}) FOR UPDATE")
    return sql, params


def _pairs(pairs: Sequence[tuple[str, str]], params: dict[str, Any], first: str, second: str) -> str:
    """``(%(first0)s, %(second0)s), ...`` for a row-value ``IN`` list, the values bound into ``params``."""
    rows = []
    for i, (a, b) in enumerate(pairs):
        params[f"{first}{i}"], params[f"{second}{i}"] = a, b
        rows.append(f"(%({first}{i})s, %({second}{i})s)")
    return ", ".join(rows)


def _like(prefix: str) -> str:
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ".%"


def under(prefix: str, params: dict[str, Any], column: str = "namespace") -> str:
    """``column`` is ``prefix`` or below it (``''``: everything)."""
    if not prefix:
        return "1 = 1"
    params["prefix"], params["prefix_like"] = prefix, _like(prefix)
    return f"({column} = %(prefix)s OR {column} LIKE %(prefix_like)s)"


def get_items(app: str, keys: Sequence[tuple[str, str]]) -> tuple[str, dict[str, Any]]:
    """The live items ``(namespace, key)``."""
    params: dict[str, Any] = {"app": app}
    sql = (f"SELECT {_ITEM} FROM lg_store_items WHERE app_name = %(app)s "
           f"AND (namespace, item_key) IN ({_pairs(keys, params, 'n', 'k')}) AND {LIVE}")
    return sql, params


def search_items(
    app: str, prefix: str, contains: Sequence[tuple[str, str]], limit: int | None, offset: int
) -> tuple[str, dict[str, Any]]:
    """Live items under ``prefix``, newest update first; ``contains`` are ``JSON_CONTAINS`` prefilters on the value."""
    params: dict[str, Any] = {"app": app}
    where = ["app_name = %(app)s", under(prefix, params), LIVE]
    for i, (path, value) in enumerate(contains):
        where.append(f"JSON_CONTAINS(value_json, %(fv{i})s, %(fp{i})s)")
        params[f"fv{i}"], params[f"fp{i}"] = value, path
    sql = f"SELECT {_ITEM} FROM lg_store_items WHERE {' AND '.join(where)} ORDER BY updated_at DESC, namespace, item_key"
    if limit is not None:
        sql += " LIMIT %(limit)s OFFSET %(offset)s"
        params["limit"], params["offset"] = int(limit), int(offset)
    return sql, params


def field_hits(app: str, muser: str, prefix: str, top: int | None = None) -> tuple[str, dict[str, Any]]:
    """The live items under ``prefix`` whose indexed fields are the search's hits, read as the end of the memory
    service's search statement (``memory.HitJoin``: over its ``hits``, in its round trip).

    Rows: ``memory_id, score``, then the item's columns.  ``top``: only the
    ``top`` best items, each once with its best field (no value filter to
    apply after: 10 rows decoded instead of 50, the driver's row parsing was a
    third of a search's client CPU); ``None``: every (field, item) pair.
    ``:name`` parameters, all ``j_``-prefixed, as ``HitJoin`` takes them.
    """
    params: dict[str, Any] = {"j_app": app, "j_muser": muser}
    where = [LIVE]
    if prefix:
        params["j_prefix"], params["j_prefix_like"] = prefix, _like(prefix)
        where.insert(0, "(f.namespace = :j_prefix OR f.namespace LIKE :j_prefix_like)")
    pairs = (
        "FROM hits h JOIN lg_store_fields f ON f.app_name = :j_app AND f.memory_user = :j_muser "
        "AND f.memory_id = h.memory_id "
        "JOIN lg_store_items i ON i.app_name = f.app_name AND i.namespace = f.namespace AND i.item_key = f.item_key "
        f"WHERE {' AND '.join(where)}"
    )
    item = "i.namespace, i.item_key, i.value_json, i.created_at, i.updated_at, i.ttl_minutes"
    if top is None:
        return f"SELECT h.memory_id, h.score, {item} {pairs}", params
    params["j_top"] = int(top)
    sql = (
        f"SELECT b.memory_id, b.score, {item.replace('i.', 'b.')} FROM ("
        f"SELECT h.memory_id, h.score, {item}, ROW_NUMBER() OVER (PARTITION BY i.namespace, i.item_key "
        f"ORDER BY h.score DESC, h.memory_id) AS nth {pairs}) b "
        "WHERE b.nth = 1 ORDER BY b.score DESC, b.namespace, b.item_key LIMIT :j_top"
    )
    return sql, params


def unindexed_items(app: str, prefix: str, limit: int | None) -> tuple[str, dict[str, Any]]:
    """Live items under ``prefix`` with no indexed field (a semantic search's unscored remainder), newest first."""
    params: dict[str, Any] = {"app": app}
    sql = (f"SELECT {_ITEM} FROM lg_store_items WHERE app_name = %(app)s AND indexed_fields = 0 "
           f"AND {under(prefix, params)} AND {LIVE} ORDER BY updated_at DESC, namespace, item_key")
    if limit is not None:
        sql += " LIMIT %(limit)s"
        params["limit"] = int(limit)
    return sql, params


def list_namespaces(app: str, prefix: str) -> tuple[str, dict[str, Any]]:
    """Distinct namespaces of live items under ``prefix`` (conditions and depth are applied by the caller)."""
    params: dict[str, Any] = {"app": app}
    sql = f"SELECT DISTINCT namespace FROM lg_store_items WHERE app_name = %(app)s AND {under(prefix, params)} AND {LIVE}"
    return sql, params
