"""SQL of the LangGraph saver: named texts with ``%(name)s`` parameters for the driver, and builders for IN lists.

Run on the driver connection (:mod:`adk_oceanbase.rawtx`), several to a
round trip: a ``put`` is its blob inserts, the checkpoint upsert and the
COMMIT in one packet; a ``get_tuple`` is the checkpoint and its writes in one,
then the blobs it names in a second.  Pure: no I/O here.

Every statement names ``app_name`` first, the leading column of every key.
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "COPY_BLOBS",
    "COPY_CHECKPOINTS",
    "COPY_WRITES",
    "DELETE_THREAD",
    "INSERT_BLOBS",
    "INSERT_EMPTY_BLOB",
    "UPSERT_CHECKPOINT",
    "UPSERT_CHECKPOINT_DELTA",
    "delete_blobs_except",
    "delete_checkpoints_except",
    "delete_runs",
    "insert_writes",
    "select_blobs",
    "select_checkpoints",
    "select_row_deltas",
    "select_values",
    "select_latest_writes",
    "select_writes",
    "thread_namespaces",
]

_CP_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, value_type, checkpoint, metadata"

# Payloads travel as hex literals: ``X%(payload)s`` renders as X'<hex>' (the driver quotes the hex
# text, which has nothing to escape).  The driver escapes bytes with a per-character str.translate
# over a surrogate-escaped string, 0.5 ms (idle) to 3 ms (loaded 2-core machine) for a 30 kB message
# list, against 16 us for bytes.hex() and 25 us to escape the hex text (measured, 2026-11-26); twice
# the bytes on the wire cost less than that on loopback or a LAN.  A literal rather than UNHEX(...):
# the server converts it while parsing, ~0.2 ms less per 17 kB payload than the function call
# (interleaved, seekdb, 2 vCPU at load ~23: 1.39 vs 1.65 ms for INSERT + COMMIT; FROM_BASE64 1.47).
# A literal cannot be NULL: an "empty" blob (no value at that version) has INSERT_EMPTY_BLOB.
# So each row is its own statement (the driver's multi-row rewrite only takes bare placeholders),
# all of them still in the one packet of the transaction.
# The first value written for a (channel, version) wins, as in the Postgres saver (ON CONFLICT DO
# NOTHING): a version names one value, so a re-run of the same step writes nothing new.
INSERT_BLOBS = """
INSERT IGNORE INTO lg_checkpoint_blobs
    (app_name, thread_id, checkpoint_ns, channel, version, user_id, value_type, payload)
VALUES (%(app)s, %(thread)s, %(ns)s, %(channel)s, %(version)s, %(user)s, %(type)s, X%(payload)s)
"""
INSERT_EMPTY_BLOB = """
INSERT IGNORE INTO lg_checkpoint_blobs
    (app_name, thread_id, checkpoint_ns, channel, version, user_id, value_type, payload)
VALUES (%(app)s, %(thread)s, %(ns)s, %(channel)s, %(version)s, %(user)s, %(type)s, NULL)
"""

UPSERT_CHECKPOINT = """
INSERT INTO lg_checkpoints
    (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, user_id, run_id,
     value_type, checkpoint, metadata)
VALUES (%(app)s, %(thread)s, %(ns)s, %(id)s, %(parent)s, %(user)s, %(run)s, %(type)s, X%(checkpoint)s, %(metadata)s)
ON DUPLICATE KEY UPDATE value_type = VALUES(value_type), checkpoint = VALUES(checkpoint), metadata = VALUES(metadata)
"""

# The same with one changed channel value riding in the row (revision 0023): the common put is then
# this one statement, sent in autocommit mode (see the saver's docstring).  A re-put of the same
# checkpoint replaces the value it holds (the saver only inlines into a checkpoint it has not
# written itself before).
UPSERT_CHECKPOINT_DELTA = """
INSERT INTO lg_checkpoints
    (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, user_id, run_id,
     value_type, checkpoint, metadata, delta_channel, delta_version, delta_type, delta_payload)
VALUES (%(app)s, %(thread)s, %(ns)s, %(id)s, %(parent)s, %(user)s, %(run)s, %(type)s, X%(checkpoint)s, %(metadata)s,
        %(channel)s, %(version)s, %(dtype)s, X%(payload)s)
ON DUPLICATE KEY UPDATE value_type = VALUES(value_type), checkpoint = VALUES(checkpoint), metadata = VALUES(metadata),
    delta_channel = VALUES(delta_channel), delta_version = VALUES(delta_version), delta_type = VALUES(delta_type),
    delta_payload = VALUES(delta_payload)
"""

_WRITE_COLUMNS = "(app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, user_id, channel, task_path, value_type, payload)"
# Special writes (errors, interrupts: negative idx) replace; regular ones keep the first, as
# LangGraph's savers do, so a retried task does not duplicate or reorder what it wrote.
_ON_SPECIAL = "ON DUPLICATE KEY UPDATE channel = VALUES(channel), value_type = VALUES(value_type), payload = VALUES(payload)"
# Not INSERT IGNORE: a lone statement is sent alone on an autocommit connection (no COMMIT after it in
# the packet), and the driver answers a statement that ends a packet with warnings (a duplicate
# under IGNORE) by a SHOW WARNINGS round trip and a Python warning.  A no-op update keeps the first
# row just the same, without a warning.
_ON_REGULAR = "ON DUPLICATE KEY UPDATE task_id = task_id"


def insert_writes(key: dict[str, Any], writes: Sequence[tuple[int, str, str, str]], special: bool) -> tuple[str, dict[str, Any]]:
    """One ``put_writes`` call as one multi-row INSERT: ``key`` names ``app, thread, ns, id, task, user, path``
    (the same for every row), ``writes`` is ``(idx, channel, value type, payload hex)`` per write.

    ``special`` (every write an error, interrupt, ...: negative idx) replaces rows already there; else the
    first row per ``(task, idx)`` stays, in the same statement too.  One statement rather than one per write:
    the call is then sent alone in autocommit mode where the saver may (``RawTransaction.single``), as a put is.
    Payloads are hex literals (see ``INSERT_BLOBS``), so each row names its own parameters (the driver's
    multi-row rewrite only takes bare placeholders).
    """
    params: dict[str, Any] = dict(key)
    rows = []
    for i, (idx, channel, vtype, payload) in enumerate(writes):
        params[f"i{i}"], params[f"c{i}"], params[f"t{i}"], params[f"p{i}"] = idx, channel, vtype, payload
        rows.append(f"(%(app)s, %(thread)s, %(ns)s, %(id)s, %(task)s, %(i{i})s, %(user)s, %(c{i})s, %(path)s, "
                    f"%(t{i})s, X%(p{i})s)")
    sql = f"INSERT INTO lg_checkpoint_writes {_WRITE_COLUMNS} VALUES {', '.join(rows)} {_ON_SPECIAL if special else _ON_REGULAR}"
    return sql, params


DELETE_THREAD = [
    "DELETE FROM lg_checkpoint_writes WHERE app_name = %(app)s AND thread_id = %(thread)s",
    "DELETE FROM lg_checkpoint_blobs WHERE app_name = %(app)s AND thread_id = %(thread)s",
    "DELETE FROM lg_checkpoints WHERE app_name = %(app)s AND thread_id = %(thread)s",
]

COPY_CHECKPOINTS = """
INSERT IGNORE INTO lg_checkpoints
    (app_name, thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, user_id, run_id,
     value_type, checkpoint, metadata, created_at, delta_channel, delta_version, delta_type, delta_payload)
SELECT app_name, %(target)s, checkpoint_ns, checkpoint_id, parent_checkpoint_id, user_id, run_id,
       value_type, checkpoint, metadata, created_at, delta_channel, delta_version, delta_type, delta_payload
FROM lg_checkpoints WHERE app_name = %(app)s AND thread_id = %(source)s
"""
COPY_BLOBS = """
INSERT IGNORE INTO lg_checkpoint_blobs
    (app_name, thread_id, checkpoint_ns, channel, version, user_id, value_type, payload)
SELECT app_name, %(target)s, checkpoint_ns, channel, version, user_id, value_type, payload
FROM lg_checkpoint_blobs WHERE app_name = %(app)s AND thread_id = %(source)s
"""
COPY_WRITES = """
INSERT IGNORE INTO lg_checkpoint_writes
    (app_name, thread_id, checkpoint_ns, checkpoint_id, task_id, idx, user_id, channel, task_path, value_type, payload)
SELECT app_name, %(target)s, checkpoint_ns, checkpoint_id, task_id, idx, user_id, channel, task_path, value_type, payload
FROM lg_checkpoint_writes WHERE app_name = %(app)s AND thread_id = %(source)s
"""


def _names(prefix: str, values: Sequence[Any], params: dict[str, Any]) -> str:
    """``%(p0)s, %(p1)s, ...`` for ``values``, which are added to ``params``."""
    out = []
    for i, value in enumerate(values):
        params[f"{prefix}{i}"] = value
        out.append(f"%({prefix}{i})s")
    return ", ".join(out)


def select_checkpoints(
    app: str,
    thread: str | None,
    ns: str | None,
    checkpoint_id: str | None,
    filter_json: Sequence[tuple[str, str]],
    before: str | None,
    limit: int | None,
) -> tuple[str, dict[str, Any]]:
    """Checkpoints newest first; ``filter_json`` is ``(json path, json value)`` pairs, each a ``JSON_CONTAINS``.

    ``JSON_CONTAINS`` is containment, like the Postgres saver's ``metadata @> filter``:
    equal scalars match, a filter object or array matches when the stored one contains it.
    """
    params: dict[str, Any] = {"app": app}
    where = ["app_name = %(app)s"]
    if thread is not None:
        where.append("thread_id = %(thread)s")
        params["thread"] = thread
    if ns is not None:
        where.append("checkpoint_ns = %(ns)s")
        params["ns"] = ns
    if checkpoint_id is not None:
        where.append("checkpoint_id = %(id)s")
        params["id"] = checkpoint_id
    for i, (path, value) in enumerate(filter_json):
        where.append(f"JSON_CONTAINS(metadata, %(fv{i})s, %(fp{i})s)")
        params[f"fv{i}"], params[f"fp{i}"] = value, path
    if before is not None:
        where.append("checkpoint_id < %(before)s")
        params["before"] = before
    sql = f"SELECT {_CP_COLUMNS} FROM lg_checkpoints WHERE {' AND '.join(where)} ORDER BY checkpoint_id DESC"
    if limit is not None:
        sql += " LIMIT %(limit)s"
        params["limit"] = int(limit)
    return sql, params


def select_latest_writes(app: str, thread: str, ns: str) -> tuple[str, dict[str, Any]]:
    """The writes of the thread's newest checkpoint in ``ns`` (for ``get_tuple`` without an id), same round trip."""
    sql = (
        "SELECT checkpoint_id, task_id, channel, value_type, payload, task_path, idx FROM lg_checkpoint_writes "
        "WHERE app_name = %(app)s AND thread_id = %(thread)s AND checkpoint_ns = %(ns)s AND checkpoint_id = "
        "(SELECT MAX(checkpoint_id) FROM lg_checkpoints WHERE app_name = %(app)s AND thread_id = %(thread)s "
        "AND checkpoint_ns = %(ns)s)"
    )
    return sql, {"app": app, "thread": thread, "ns": ns}


def select_writes(app: str, keys: Sequence[tuple[str, str, str]]) -> tuple[str, dict[str, Any]]:
    """The pending writes of the checkpoints ``keys`` ``(thread, ns, checkpoint_id)``."""
    params: dict[str, Any] = {"app": app}
    rows = ", ".join(f"({_names(f'k{i}_', key, params)})" for i, key in enumerate(keys))
    sql = (
        "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, channel, value_type, payload, task_path, idx "
        f"FROM lg_checkpoint_writes WHERE app_name = %(app)s AND (thread_id, checkpoint_ns, checkpoint_id) IN ({rows})"
    )
    return sql, params


def select_blobs(app: str, keys: Sequence[tuple[str, str, str, str]]) -> tuple[str, dict[str, Any]]:
    """The blobs ``keys`` ``(thread, ns, channel, version)``, with their user (a delta's base must be its user's)."""
    params: dict[str, Any] = {"app": app}
    rows = ", ".join(f"({_names(f'k{i}_', key, params)})" for i, key in enumerate(keys))
    sql = (
        "SELECT thread_id, checkpoint_ns, channel, version, value_type, payload, user_id FROM lg_checkpoint_blobs "
        f"WHERE app_name = %(app)s AND (thread_id, checkpoint_ns, channel, version) IN ({rows})"
    )
    return sql, params


def select_row_deltas(app: str, keys: Sequence[tuple[str, str, str]]) -> tuple[str, dict[str, Any]]:
    """The values held in the checkpoint rows ``keys`` ``(thread, ns, checkpoint_id)``, shaped as :func:`select_blobs` rows.

    By primary key: a checkpoint names the row holding each version it reads.
    A row may no longer hold it (deleted, its value moved to the blob table
    first): the reader asks the blob table for the same key in the same packet.
    """
    params: dict[str, Any] = {"app": app}
    rows = ", ".join(f"({_names(f'c{i}_', key, params)})" for i, key in enumerate(keys))
    sql = (
        "SELECT thread_id, checkpoint_ns, delta_channel, delta_version, delta_type, delta_payload, user_id "
        f"FROM lg_checkpoints WHERE app_name = %(app)s AND (thread_id, checkpoint_ns, checkpoint_id) IN ({rows}) "
        "AND delta_payload IS NOT NULL"
    )
    return sql, params



def select_values(
    app: str, keys: Sequence[tuple[str, str, str, str]], holders: Sequence[tuple[str, str, str]] = ()
) -> list[tuple[str, dict[str, Any]]]:
    """The statements that fetch the values ``keys`` wherever they are held, for one packet: the blob table,
    and the checkpoint rows ``holders`` ``(thread, ns, checkpoint_id)`` named as holding some of them (a value
    is in one of the two: a row's value moves to the blob table before the row is deleted)."""
    statements = [select_blobs(app, keys)]
    if holders:
        statements.append(select_row_deltas(app, holders))
    return statements

# Before checkpoint rows of a living thread are deleted, the values they hold go to the blob table
# (later checkpoints' chains may rest on them); a version already there stays as it is.
_MOVE_DELTAS = (
    "INSERT IGNORE INTO lg_checkpoint_blobs "
    "(app_name, thread_id, checkpoint_ns, channel, version, user_id, value_type, payload) "
    "SELECT app_name, thread_id, checkpoint_ns, delta_channel, delta_version, user_id, delta_type, delta_payload "
    "FROM lg_checkpoints WHERE {scope} AND delta_payload IS NOT NULL"
)


def delete_runs(app: str, run_ids: Sequence[str]) -> tuple[list[str], dict[str, Any]]:
    """Deletes the checkpoints of ``run_ids`` and their writes (writes first, through the checkpoints' keys).

    The values those rows hold move to the blob table first.
    """
    params: dict[str, Any] = {"app": app}
    runs = _names("r", run_ids, params)
    return [
        _MOVE_DELTAS.format(scope=f"app_name = %(app)s AND run_id IN ({runs})"),
        "DELETE w FROM lg_checkpoint_writes w JOIN lg_checkpoints c ON c.app_name = w.app_name "
        "AND c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id "
        f"WHERE c.app_name = %(app)s AND c.run_id IN ({runs})",
        f"DELETE FROM lg_checkpoints WHERE app_name = %(app)s AND run_id IN ({runs})",
    ], params


def delete_checkpoints_except(app: str, thread: str, ns: str, keep: str) -> tuple[list[str], dict[str, Any]]:
    """Deletes the checkpoints of one thread namespace, and their writes, but ``keep`` (their held values move first)."""
    params = {"app": app, "thread": thread, "ns": ns, "keep": keep}
    scope = "app_name = %(app)s AND thread_id = %(thread)s AND checkpoint_ns = %(ns)s AND checkpoint_id <> %(keep)s"
    return [
        _MOVE_DELTAS.format(scope=scope),
        f"DELETE FROM lg_checkpoint_writes WHERE {scope}",
        f"DELETE FROM lg_checkpoints WHERE {scope}",
    ], params


def delete_blobs_except(app: str, thread: str, ns: str, keep: Sequence[tuple[str, str]]) -> tuple[str, dict[str, Any]]:
    """Deletes the blobs of one thread namespace but the ``(channel, version)`` pairs ``keep``."""
    params: dict[str, Any] = {"app": app, "thread": thread, "ns": ns}
    sql = "DELETE FROM lg_checkpoint_blobs WHERE app_name = %(app)s AND thread_id = %(thread)s AND checkpoint_ns = %(ns)s"
    if keep:
        rows = ", ".join(f"({_names(f'k{i}_', pair, params)})" for i, pair in enumerate(keep))
        sql += f" AND (channel, version) NOT IN ({rows})"
    return sql, params


def thread_namespaces(app: str, threads: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """Each thread namespace's newest checkpoint: what ``prune(strategy="keep_latest")`` keeps."""
    params: dict[str, Any] = {"app": app}
    names = _names("t", threads, params)
    sql = (
        f"SELECT {_CP_COLUMNS} FROM lg_checkpoints c WHERE app_name = %(app)s AND thread_id IN ({names}) "
        "AND checkpoint_id = (SELECT MAX(checkpoint_id) FROM lg_checkpoints m WHERE m.app_name = c.app_name "
        "AND m.thread_id = c.thread_id AND m.checkpoint_ns = c.checkpoint_ns)"
    )
    return sql, params
