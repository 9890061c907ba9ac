"""The cluster test kit: checks any database URL does what the package promises, one pass/fail per item.

``adk-oceanbase selftest --url URL`` (and :func:`run`) is for the move from
embedded seekdb to an OceanBase cluster behind OBProxy (ODP), where no test
of this repository can run: point it at the cluster and read the report.
Each check names what it proves:

``server``      the version gate passes (:mod:`.server_version`).
``schema``      the schema is at head (a new database's tables are created; an older schema is
                reported, not migrated: run ``db upgrade`` first).
``contract``    a session script gives the same answers as ADK's ``InMemorySessionService``
                (state scopes, ``temp:`` keys, event order, recent events, listing, duplicate
                ids, deletion, another user's view).
``writers``     16 writers on 16 sessions of one user set 16 ``user:`` keys at once: none lost.
``cas``         8 writers on one session, each from its own copy, retrying on ``StaleSessionError``:
                every event stored once, in one order; and an append from an outdated copy writes nothing.
``durability``  what was committed is read back on a new engine (none of the writer's
                connections); with ``failover_wait_s`` the run pauses after printing where the
                leaders are, so the operator can kill that node (README, "Growing into an
                OceanBase cluster"), and reconnects for up to two minutes.
``recall``      a search over one user's memories finds each planted fact in its top 5 (at least
                ``min_recall``), and never another user's.

Everything is written under a fresh app name (``adk_selftest_<hex>``) and
erased at the end with ``delete_user_data`` (its audit rows, if auditing
were on, and the memory write guards stay, as for any erasure).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.genai import types
from sqlalchemy import text

from . import gateway, migrations, server_version
from .config import Config
from .engine import Database
from .errors import ConnectionFailedError, StaleSessionConflictError
from .retry import retrying

__all__ = ["CHECKS", "Outcome", "run"]

_MAX_TRIES = 100
"""Appends one cas writer may have refused in a row (each on a freshly read copy) before the check fails."""

CHECKS = ("server", "schema", "contract", "writers", "cas", "durability", "recall")

_LEADERS = text(
    "SELECT table_name, svr_ip, svr_port FROM oceanbase.DBA_OB_TABLE_LOCATIONS "
    "WHERE database_name = DATABASE() AND role = 'LEADER' AND table_name IN ('agent_sessions', 'session_events') "
    "ORDER BY table_name LIMIT 8"
)


@dataclass(frozen=True)
class Outcome:
    """One check's result: ``ok``, a one-line ``detail`` (what was seen, or why it failed) and its duration."""

    check: str
    ok: bool
    detail: str
    ms: float

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "detail": self.detail, "ms": round(self.ms, 1)}


class CheckFailed(AssertionError):
    """A check saw something the package promises not to do."""


def _expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


def _event(text_: str, ts: float, delta: dict[str, Any] | None = None, invocation: str = "inv") -> Event:
    ev = Event(author="user", invocation_id=invocation, actions=EventActions(state_delta=delta or {}),
               content=types.Content(role="user", parts=[types.Part(text=text_)]))
    ev.timestamp = ts
    return ev


async def _contract_script(svc: Any, app: str, user: str) -> list[tuple[str, Any]]:
    """Observations of one session script; run on ADK's in-memory service and ours, they must be equal."""
    seen: list[tuple[str, Any]] = []
    s = await svc.create_session(app_name=app, user_id=user, session_id="s1",
                                 state={"plain": 1, "user:lang": "de", "temp:scratch": 1})
    seen.append(("created", sorted(s.state.items())))
    for i in range(4):
        await svc.append_event(s, _event(f"turn {i}", 1_700_000_000.0 + i, {"n": i, "user:turns": i, "temp:t": i}))
    got = await svc.get_session(app_name=app, user_id=user, session_id="s1")
    seen.append(("state", sorted(got.state.items())))
    seen.append(("events", [e.content.parts[0].text for e in got.events]))
    recent = await svc.get_session(app_name=app, user_id=user, session_id="s1", config=GetSessionConfig(num_recent_events=2))
    seen.append(("recent", [e.content.parts[0].text for e in recent.events]))
    after = await svc.get_session(app_name=app, user_id=user, session_id="s1",
                                  config=GetSessionConfig(after_timestamp=1_700_000_002.0))
    seen.append(("after", [e.content.parts[0].text for e in after.events]))
    s2 = await svc.create_session(app_name=app, user_id=user, session_id="s2")
    seen.append(("user state shared", sorted(s2.state.items())))
    listed = await svc.list_sessions(app_name=app, user_id=user)
    seen.append(("listed", sorted(x.id for x in listed.sessions)))
    try:
        await svc.create_session(app_name=app, user_id=user, session_id="s1")
        seen.append(("duplicate id", "accepted"))
    except AlreadyExistsError:
        seen.append(("duplicate id", "AlreadyExistsError"))
    await svc.delete_session(app_name=app, user_id=user, session_id="s2")
    seen.append(("deleted", await svc.get_session(app_name=app, user_id=user, session_id="s2") is None))
    seen.append(("other user", await svc.get_session(app_name=app, user_id=user + "-other", session_id="s1") is None))
    return seen


class _Run:
    """One selftest run: its database, services and the ids it wrote under."""

    def __init__(self, config: Config, embedder: Any, min_recall: float, failover_wait_s: float,
                 say: Callable[[str], None]):
        from .memory import MemorySettings, OceanBaseMemoryService
        from .sessions import OceanBaseSessionService

        self.config, self.say = config, say
        self.min_recall, self.failover_wait_s = min_recall, failover_wait_s
        self.app = f"adk_selftest_{secrets.token_hex(4)}"
        self.users: set[str] = set()
        self.db = Database(config, create=True)
        self.sessions = OceanBaseSessionService(database=self.db)
        self.memory = OceanBaseMemoryService(database=self.db, embedder=embedder,
                                             settings=MemorySettings(background_start=True))

    def user(self, name: str) -> str:
        self.users.add(name)
        return name

    async def server(self) -> str:
        return (await server_version.require_supported(self.db)).describe()

    async def schema(self) -> str:
        # creates a new database's tables, but never migrates an existing older schema behind the
        # operator's back: that is `db upgrade`'s job (SchemaOutdatedError names it)
        created = await migrations.create_if_new(self.db)
        return f"{'created at' if created else 'at'} revision {await migrations.current_revision(self.db)}"

    async def contract(self) -> str:
        ours = await _contract_script(self.sessions, self.app, self.user("contract"))
        self.user("contract-other")
        adk = await _contract_script(InMemorySessionService(), self.app, "contract")
        for (what, mine), (_, theirs) in zip(ours, adk):
            _expect(mine == theirs, f"{what}: ours {mine!r}, ADK's in-memory service {theirs!r}")
        return f"{len(ours)} observations equal to ADK's InMemorySessionService"

    async def writers(self) -> str:
        user = self.user("writers")
        made = [await self.sessions.create_session(app_name=self.app, user_id=user) for _ in range(16)]
        await asyncio.gather(*(self.sessions.append_event(s, _event(f"w{i}", time.time(), {f"user:k{i}": i}))
                               for i, s in enumerate(made)))
        state = (await self.sessions.get_session(app_name=self.app, user_id=user, session_id=made[0].id)).state
        lost = [i for i in range(16) if state.get(f"user:k{i}") != i]
        _expect(not lost, f"user: keys lost under concurrent writers: {lost}")
        return "16 concurrent user: writers, 16 keys kept"

    async def cas(self) -> str:
        user = self.user("cas")
        s = await self.sessions.create_session(app_name=self.app, user_id=user)
        per_writer, writers = 5, 8
        stale_seen = 0

        async def writer(w: int) -> None:
            nonlocal stale_seen
            for i in range(per_writer):
                for _ in range(_MAX_TRIES):
                    copy = await self.sessions.get_session(app_name=self.app, user_id=user, session_id=s.id)
                    try:
                        await self.sessions.append_event(copy, _event(f"{w}-{i}", time.time(), invocation=f"w{w}"))
                        break
                    except StaleSessionConflictError:
                        stale_seen += 1
                else:
                    raise CheckFailed(f"writer {w} was refused {_MAX_TRIES} times in a row on a fresh copy")

        await asyncio.gather(*(writer(w) for w in range(writers)))
        got = await self.sessions.get_session(app_name=self.app, user_id=user, session_id=s.id)
        texts = [e.content.parts[0].text for e in got.events]
        _expect(len(texts) == len(set(texts)) == writers * per_writer,
                f"{len(texts)} events stored ({len(set(texts))} distinct), expected {writers * per_writer}")
        old = s  # the copy from before every write above
        try:
            await self.sessions.append_event(old, _event("stale", time.time()))
            raise CheckFailed("an append from an outdated session copy was accepted")
        except StaleSessionConflictError:
            pass
        after = await self.sessions.get_session(app_name=self.app, user_id=user, session_id=s.id)
        _expect(len(after.events) == len(texts), "the refused stale append wrote an event")
        return f"{writers} writers x {per_writer} appends on one session, {stale_seen} stale retries, stale copy refused"

    async def durability(self) -> str:
        user = self.user("durability")
        s = await self.sessions.create_session(app_name=self.app, user_id=user, state={"k": "v"})
        for i in range(10):
            await self.sessions.append_event(s, _event(f"d{i}", time.time(), {"last": i}))
        note = ""
        if self.failover_wait_s > 0:
            leaders = await self._leaders()
            self.say(f"durability: leaders now {leaders or 'unknown (not a cluster?)'}; kill one node now "
                     f"(see the README); reconnecting in {self.failover_wait_s:g} s")
            note = f", after a {self.failover_wait_s:g} s failover pause (leaders were {leaders or 'unknown'})"
        if self.failover_wait_s > 0:
            await asyncio.sleep(self.failover_wait_s)
        got = await self._reconnect_read(user, s.id)  # on a new engine: none of this run's connections
        texts = [e.content.parts[0].text for e in got.events]
        _expect(texts == [f"d{i}" for i in range(10)] and got.state.get("last") == 9 and got.state.get("k") == "v",
                f"after reconnecting: events {texts}, state {got.state}")
        return f"10 committed events and their state read back on a new engine{note}"

    async def _leaders(self) -> str:
        try:
            async with gateway.connection(self.db) as conn:
                rows = (await conn.execute(_LEADERS)).all()
            return ", ".join(f"{t} on {ip}:{port}" for t, ip, port in rows)
        except Exception:  # noqa: BLE001 - a view only clusters have; the note says unknown
            return ""

    async def _reconnect_read(self, user: str, session_id: str) -> Any:
        """The session as a new engine reads it; a refused connection (a leader being elected) is retried for 2 min."""
        from .sessions import OceanBaseSessionService

        async def read() -> Any:
            db = Database(self.config)
            try:
                return await OceanBaseSessionService(database=db).get_session(
                    app_name=self.app, user_id=user, session_id=session_id)
            finally:
                await db.close()

        # 60 runs 2 s apart: about the 2 minutes an election plus ODP's refresh can take
        return await retrying(read, when=lambda exc: isinstance(exc, ConnectionFailedError), attempts=60,
                              pause_s=lambda _n: 2.0, what="the durability read on a new engine")

    async def recall(self) -> str:
        user, other = self.user("recall"), self.user("recall-other")
        def entry(text_: str) -> MemoryEntry:
            return MemoryEntry(content=types.Content(role="user", parts=[types.Part(text=text_)]))

        await self.memory.add_memory(app_name=self.app, user_id=user, memories=[entry(f) for f, _ in _FACTS])
        # another user holding the same facts, marked: none may appear in this user's results
        await self.memory.add_memory(app_name=self.app, user_id=other,
                                     memories=[entry(f"{f} (intruder)") for f, _ in _FACTS])
        await self.memory.flush()
        found, leaked = 0, 0
        for fact, question in _FACTS:
            hits = await self.memory.search(self.app, user, question, top_k=5, bump_access=False)
            texts = [h.entry.content.parts[0].text for h in hits]
            found += fact in texts
            leaked += any("intruder" in t for t in texts)
        recall = found / len(_FACTS)
        _expect(leaked == 0, f"{leaked} searches returned another user's memory")
        _expect(recall >= self.min_recall, f"recall@5 {recall:.2f} below {self.min_recall:.2f} ({found}/{len(_FACTS)})")
        return f"recall@5 {recall:.2f} over {len(_FACTS)} facts ({self.memory.embedder.model_name}), no other user's memory"

    async def cleanup(self) -> None:
        from .governance import delete_user_data

        for user in sorted(self.users):
            await delete_user_data(self.db, self.app, user)

    async def close(self) -> None:
        try:
            await self.memory.close()
            await self.sessions.close()
        finally:
            await self.db.close()


# Planted facts and the question that should find each: distinct topics, so none reads as a newer version
# of another (the version signal would rightly rank an older "same fact" lower).
_FACTS = (
    ("My sister Alice works as a nurse at the general hospital in Toronto.", "where does my sister Alice work?"),
    ("The wifi password at the lake cabin is bluefinch42.", "what is the wifi password at the cabin?"),
    ("I am allergic to peanuts and shellfish.", "which foods am I allergic to?"),
    ("Our wedding anniversary is on the fourteenth of June.", "when is our wedding anniversary?"),
    ("My dentist appointment was moved to Thursday afternoon.", "when is my dentist appointment?"),
    ("The car needs new winter tyres before December.", "what does the car need before December?"),
    ("My favourite novel is One Hundred Years of Solitude.", "what is my favourite novel?"),
    ("The quarterly budget review is run by Priya from finance.", "who runs the quarterly budget review?"),
    ("I keep the spare house key under the blue flower pot.", "where is the spare house key?"),
    ("Our team standup starts at nine fifteen every weekday.", "what time does the team standup start?"),
    ("My daughter plays the cello in the school orchestra.", "which instrument does my daughter play?"),
    ("The garage door code is 7316.", "what is the garage door code?"),
    ("I switched my mobile plan to a provider called Orbitel.", "which mobile provider am I with?"),
    ("My grandmother's lasagne recipe uses nutmeg in the bechamel.", "what spice goes in grandmother's lasagne?"),
    ("The conference in Lisbon runs from the third to the sixth of May.", "when is the Lisbon conference?"),
    ("My running goal this year is a half marathon under two hours.", "what is my running goal this year?"),
)


async def run(
    config: Config, *, embedder: Any = None, checks: tuple[str, ...] = CHECKS, min_recall: float = 0.9,
    failover_wait_s: float = 0.0, say: Callable[[str], None] = print,
    report: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Runs ``checks`` in order against ``config``'s database; returns (and reports, as they finish) one :class:`Outcome` each.

    A failed check does not stop the others, except ``server`` and ``schema``:
    without them nothing else can run, so the rest are reported as not run.
    """
    if embedder is None:
        from .memory import default_embedder

        embedder = default_embedder()
    r = _Run(config, embedder, min_recall, failover_wait_s, say)
    out: list[Outcome] = []
    blocked = ""
    try:
        for name in checks:
            start = time.perf_counter()
            if blocked:
                outcome = Outcome(name, False, f"not run: {blocked}", 0.0)
            else:
                try:
                    detail = await getattr(r, name)()
                    outcome = Outcome(name, True, detail, (time.perf_counter() - start) * 1000)
                except Exception as exc:  # noqa: BLE001 - every failure is a report line, not a traceback
                    outcome = Outcome(name, False, f"{type(exc).__name__}: {_one_line(exc)}",
                                      (time.perf_counter() - start) * 1000)
                    if name in ("server", "schema"):
                        blocked = f"{name} failed"
            out.append(outcome)
            if report is not None:
                report(outcome)
        if not blocked:
            await r.cleanup()
    finally:
        await r.close()
    return out


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:400]

