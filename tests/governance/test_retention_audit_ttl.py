"""The audit log has its own retention (seed 000: a separate, stricter policy): ``audit_ttl``, ``gc --audit-ttl``."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from adk_oceanbase import AuditSettings, OceanBaseSessionService, ValidationError
from adk_oceanbase.cli import main as cli_main
from adk_oceanbase.governance import Retention, RetentionPolicy, sweep

from .retention_helpers import DAY, db, execute, rows, scalar, utc  # noqa: F401  (db: the two-engine fixture)

AUDIT_400D = RetentionPolicy(audit_ttl="400d")


async def audited_history(db) -> None:
    """Audit rows of three apps; those of 'old' and of the erased app 'gone' (no session left) are 500 days old."""
    svc = OceanBaseSessionService(database=db, audit=AuditSettings())
    for app in ("old", "new", "gone"):
        for user in ("u1", "u2"):
            await svc.create_session(app_name=app, user_id=user, session_id=f"{app}-{user}")
    for user in ("u1", "u2"):
        await svc.delete_session(app_name="gone", user_id=user, session_id=f"gone-{user}")
    await execute(db, "UPDATE audit_log SET at = :t WHERE app_name IN ('old', 'gone')", t=utc(time.time() - 500 * DAY))


async def per_app(db) -> dict[str, int]:
    return dict(await rows(db, "SELECT app_name, COUNT(*) FROM audit_log GROUP BY app_name"))


async def test_audit_rows_expire_by_their_own_ttl(db):
    await audited_history(db)
    before = await per_app(db)
    assert before == {"old": 2, "new": 2, "gone": 4}

    # no audit_ttl (the default): other TTLs never touch the log
    await sweep(db, RetentionPolicy(Retention(session_ttl="1d", memory_ttl="1d")), now=time.time() + 1000 * DAY)
    assert await per_app(db) == before

    assert (await sweep(db, AUDIT_400D, dry_run=True)).audit_rows == 6
    assert await per_app(db) == before
    assert (await sweep(db, AUDIT_400D, apps=["old"])).audit_rows == 2  # --app limits it like the rest
    assert await per_app(db) == {"new": 2, "gone": 4}
    counts = await sweep(db, AUDIT_400D, audit=True, audit_batch=3)  # an app with no data left is swept too
    assert counts.audit_rows == 4
    assert await rows(db, "SELECT app_name, operation, row_count FROM audit_log WHERE app_name <> 'new' "
                          "ORDER BY audit_id") == [("gone", "retention_sweep", 3), ("gone", "retention_sweep", 1)]
    assert (await sweep(db, AUDIT_400D)).audit_rows == 0


@pytest.fixture(params=["seekdb", "mariadb"])
def db_and_url(request):
    """A migrated, emptied database and its URL (the CLI opens its own), on each engine."""
    if request.param == "seekdb":
        return request.getfixturevalue("database"), request.getfixturevalue("migrated_url")
    return request.getfixturevalue("mariadb_database"), request.getfixturevalue("mariadb_migrated_url")


async def test_cli_gc_audit_ttl(db_and_url, capsys):
    db, db_url = db_and_url
    await audited_history(db)
    args = ["gc", "--url", db_url, "--audit-ttl", "400d"]
    assert await asyncio.to_thread(cli_main, args + ["--dry-run"]) == 0
    assert "would delete 0 session(s), 0 event(s), 0 memory(ies), 6 audit row(s)" in capsys.readouterr().out
    assert await asyncio.to_thread(cli_main, args + ["--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["audit_rows"], report["sessions"], report["tables"]) == (6, 0, True)
    assert await scalar(db, "SELECT COUNT(*) FROM audit_log") == 2


@pytest.mark.parametrize("bad", ["forever", "-1d", "0", True])
def test_a_bad_audit_ttl_is_refused(bad):
    with pytest.raises(ValidationError, match="duration|TTL"):
        RetentionPolicy(audit_ttl=bad)
