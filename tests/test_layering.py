"""How the package is layered, checked on its source (issue #25): no database needed.

- every MySQL / OceanBase server error number is defined in ``errors.py`` only;
- only ``dialects.py`` knows which engine it is on (``native_vectors``, ``is_oceanbase``);
- pauses between re-runs live in ``retry.py`` only, and only the engine builds
  engines and driver connections;
- only ``gateway.py`` opens the engine (``engine.begin()`` / ``engine.connect()``),
  so every I/O path gets typed errors; the exceptions are listed with their reason;
- no module reaches into another package's underscore names, except the
  listed ones (each with its reason; the list may only shrink);
- compaction and the importer use the sessions layer's public store
  (``sessions.store``), never the service module, and no two packages
  import each other (sessions never imports compaction back).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import adk_oceanbase
from adk_oceanbase import errors

PACKAGE = Path(adk_oceanbase.__file__).parent
ROOT = PACKAGE.parent
SOURCES = sorted([*PACKAGE.rglob("*.py"), *(ROOT / "alembic").rglob("*.py")])


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@functools.cache
def parsed() -> list[tuple[str, ast.Module]]:
    return [(rel(p), ast.parse(p.read_text(encoding="utf-8"), filename=str(p))) for p in SOURCES]


def server_error_numbers() -> set[int]:
    """Every number ``errors.py`` names (its upper-case int and frozenset constants), but 0 (no number)."""
    numbers: set[int] = set()
    for name, value in vars(errors).items():
        if not name.isupper() or name == "CLIENT_ERRORS_FROM":  # a boundary, not an error (2000 tokens elsewhere)
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            numbers.add(value)
        elif isinstance(value, frozenset):
            numbers |= {v for v in value if isinstance(v, int)}
    numbers.discard(0)
    return numbers


def test_server_error_numbers_are_defined_in_errors_only() -> None:
    numbers = server_error_numbers()
    assert {1062, 1213, 1205, 1146, 1049, 4179, 4012, 2013, 2006} <= numbers
    found = [
        f"{path}:{node.lineno}: {node.value}"
        for path, tree in parsed()
        if path != "adk_oceanbase/errors.py"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value in numbers
    ]
    assert found == [], "name the error number in adk_oceanbase/errors.py and import it"


# Modules that may still ask which engine they are on -> why.  The lead removes these at merge.
ENGINE_QUESTION_ALLOWED: dict[str, str] = {}
ENGINE_QUESTIONS = ("native_vectors", "is_oceanbase")


def engine_identity_mentions() -> dict[str, list[str]]:
    """Lines outside ``dialects.py`` that name ``native_vectors`` / ``is_oceanbase`` (code, comments or docstrings)."""
    found: dict[str, list[str]] = {}
    for path in SOURCES:
        name = rel(path)
        if name == "adk_oceanbase/dialects.py":
            continue
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(word in line for word in ENGINE_QUESTIONS):
                found.setdefault(name, []).append(f"{lineno}: {line.strip()}")
    return found


def test_only_the_dialect_knows_which_engine_it_is() -> None:
    """What differs between the engines is the dialect's to say (DDL fragments, db.system, vector index upkeep)."""
    found = engine_identity_mentions()
    unexpected = {p: lines for p, lines in found.items() if p not in ENGINE_QUESTION_ALLOWED}
    assert unexpected == {}, "ask the dialect (adk_oceanbase/dialects.py) for what differs, not which engine it is"
    assert set(ENGINE_QUESTION_ALLOWED) <= set(found), "fixed: take it off ENGINE_QUESTION_ALLOWED"


def test_the_engine_question_check_sees_revisions_and_comments() -> None:
    assert any(rel(p) == "alembic/versions/0001_initial_schema.py" for p in SOURCES)
    assert any(rel(p) == "adk_oceanbase/dialects.py" for p in SOURCES)
    assert "native_vectors" in (PACKAGE / "dialects.py").read_text(encoding="utf-8")


# Modules that pause (``asyncio.sleep`` / ``time.sleep``) outside retry.py -> why it is not a re-run.
PAUSES_ALLOWED = {
    "adk_oceanbase/setup_lock.py": "alembic_turn polls a threading lock without blocking the event loop "
    "(nothing is re-run)",
    "adk_oceanbase/embedded.py": "_gone waits, in a worker thread, for a dying seekdb child to end (nothing is re-run)",
    "adk_oceanbase/selftest.py": "--failover-wait: the pause in which the user kills a node (nothing is re-run)",
}


def pauses() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path, tree in parsed():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("sleep"):
                found.setdefault(path, []).append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_re_runs_pause_in_the_retry_helper_only() -> None:
    """A loop that re-runs failed work with a pause is a second retry policy: use ``gateway.retrying``."""
    found = pauses()
    assert "adk_oceanbase/retry.py" in found
    unexpected = {p: calls for p, calls in found.items() if p not in PAUSES_ALLOWED and p != "adk_oceanbase/retry.py"}
    assert unexpected == {}, "re-run with adk_oceanbase.retry.retrying(..., pause_s=...)"
    assert set(PAUSES_ALLOWED) <= set(found), "no longer pauses: take it off PAUSES_ALLOWED"


# Modules that build an engine or open a driver connection themselves -> why.
DRIVER_OPENERS = {
    "adk_oceanbase/engine.py": "builds the one engine, after creating a missing database on a driver connection "
    "of its own (its errors become DatabaseNotFoundError / ConnectionFailedError there)",
    "adk_oceanbase/embedded.py": "the pool's connect function for embedded seekdb (the socket moves on a restart); "
    "it runs inside the engine's checkout, so the gateway types its errors",
    "adk_oceanbase/importer/source.py": "the import source is someone else's database, not ours (see ENGINE_OPENERS)",
}


def test_only_the_engine_builds_engines_and_driver_connections() -> None:
    """No module sidesteps the pool (its session settings, the gateway's typed errors) with a connection of its own."""
    found: dict[str, list[str]] = {}
    for path, tree in parsed():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "aiomysql.connect", "pymysql.connect", "create_async_engine", "create_engine", "sa.create_engine",
                "sqlalchemy.create_engine",
            ):
                found.setdefault(path, []).append(f"{node.lineno}: {ast.unparse(node.func)}")
    assert {p: calls for p, calls in found.items() if p not in DRIVER_OPENERS} == {}, "use adk_oceanbase.gateway"
    assert set(DRIVER_OPENERS) == set(found), "an exception no longer needed: take it off DRIVER_OPENERS"


ENGINE_OPENERS = {
    "adk_oceanbase/gateway.py": "the gateway itself: typed errors for everything else",
    "adk_oceanbase/engine.py": "Database.start()'s first connection, which builds the engine (its error is wrapped "
    "in ConnectionFailedError there)",
    "adk_oceanbase/setup_lock.py": "the setup deadline's own connections (bounded by SET statements, KILLed on "
    "overrun) whose raw driver errors migrations.py reads by number (4179, 1146) and then translates",
    "adk_oceanbase/importer/source.py": "the import source is someone else's database (ADK's tables, SQLite or "
    "MySQL), not ours; its errors are wrapped in ConnectionFailedError / SourceSchemaError there",
    "adk_oceanbase/rawtx.py": "the driver connection under gateway.raw(), which is the only caller; its errors are "
    "typed there",
}


def test_only_the_gateway_opens_the_engine() -> None:
    openers: dict[str, list[str]] = {}
    for path, tree in parsed():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("begin", "connect", "raw_connection")
                and "engine" in ast.unparse(node.func.value)
            ):
                openers.setdefault(path, []).append(f"{node.lineno}: {ast.unparse(node.func)}")
    unexpected = {p: calls for p, calls in openers.items() if p not in ENGINE_OPENERS}
    assert unexpected == {}, "open connections with adk_oceanbase.gateway.transaction() / connection()"
    assert set(ENGINE_OPENERS) == set(openers), "an exception no longer needed: take it off ENGINE_OPENERS"


# (module, the underscore name it uses) -> why it still does.  Remove entries as they are fixed.
UNDERSCORE_ALLOWED = {
    ("adk_oceanbase/sessions/store.py", "session._storage_update_marker"): "ADK's Session keeps the stale-write "
    "marker there and its own DatabaseSessionService sets it the same way; there is no public setter (only "
    "sessions.store.mark / revision_of touch it)",
    ("adk_oceanbase/sessions/operations.py", "r._mapping"): "SQLAlchemy's documented Row API (the underscore only "
    "avoids clashing with column names)",
    ("adk_oceanbase/rawtx.py", "sql._bindparams"): "SQLAlchemy keeps a text()'s bound values there; compiling each "
    "hot statement instead cost 0.37 ms per search (see rawtx._compiled_text)",
    ("adk_oceanbase/rawtx.py", "engine.sync_engine.pool._invalidate"): "what SQLAlchemy itself does on a disconnect: "
    "invalidate the pool's older connections; there is no public call for a raw connection",
    ("adk_oceanbase/importer/source.py", "google.adk.sessions.migration._schema_check_utils"): "ADK's only reader of "
    "its own schema version; copying it would drift from ADK",
    ("adk_oceanbase/telemetry.py", "opentelemetry.metrics._internal._ProxyMeterProvider"): "the only way to tell "
    "OpenTelemetry's not-yet-configured proxy provider from a real one",
}


def _package_of(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1])


def _absolute(path: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _owner(dotted: str) -> str | None:
    """The package a dotted name's first underscore part belongs to, or None when it has none.

    ``a.b._c`` -> ``a.b``; when ``a.b`` is a module of ours, its package ``a``.
    """
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            prefix = ".".join(parts[:i])
            if (ROOT / (prefix.replace(".", "/") + ".py")).exists():
                return prefix.rpartition(".")[0]
            return prefix
    return None


def underscore_uses() -> set[tuple[str, str]]:
    """Underscore names a module uses from outside its own package tree.

    An underscore name belongs to the package that holds it and to that
    package's subpackages (``adk_oceanbase._lifecycle`` is usable from
    ``adk_oceanbase.memory``; ``memory.consolidation._loads`` only inside
    ``memory``).  ``obj._attr`` counts on anything but ``self``/``cls`` and the
    module's own classes.
    """
    found: set[tuple[str, str]] = set()
    for path, tree in parsed():
        if not path.startswith("adk_oceanbase/"):
            continue
        mine = _package_of(path)
        own_classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = _absolute(path, node)
                for alias in node.names:
                    dotted = f"{module}.{alias.name}"
                    owner = _owner(dotted)
                    if owner is not None and not (mine == owner or mine.startswith(owner + ".")):
                        found.add((path, dotted))
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                value = node.value
                if isinstance(value, ast.Name) and (value.id in ("self", "cls") or value.id in own_classes):
                    continue
                if isinstance(value, ast.Call) and ast.unparse(value.func) == "super":
                    continue
                found.add((path, ast.unparse(node)))
    return found


def test_no_module_uses_another_packages_underscore_names() -> None:
    found = underscore_uses()
    assert sorted(found - set(UNDERSCORE_ALLOWED)) == [], "use a public name (or make one)"
    assert sorted(set(UNDERSCORE_ALLOWED) - found) == [], "fixed: take it off UNDERSCORE_ALLOWED"


def test_the_underscore_check_sees_a_cross_package_import() -> None:
    tree = ast.parse("from ..sessions.codec import _encode_value\nfrom .consolidation import _loads\n")
    node_cross, node_same = tree.body
    assert _owner(_absolute("adk_oceanbase/memory/x.py", node_cross) + "._encode_value") == "adk_oceanbase.sessions"
    assert _owner(_absolute("adk_oceanbase/memory/x.py", node_same) + "._loads") == "adk_oceanbase.memory"
    assert _owner("adk_oceanbase._lifecycle.DatabaseService") == "adk_oceanbase"


def test_governance_and_validation_sit_below_sessions() -> None:
    """Governance (erasure, retention, guards) is used by sessions and memory: it must not import them back."""
    upward = [
        f"{path}: {_absolute(path, node)}"
        for path, tree in parsed()
        if path.startswith(("adk_oceanbase/governance/", "adk_oceanbase/validation.py", "adk_oceanbase/errors.py"))
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and _absolute(path, node).startswith(("adk_oceanbase.sessions", "adk_oceanbase.memory"))
    ]
    assert upward == []


def _runtime_imports(path: str, tree: ast.Module) -> list[tuple[int, str]]:
    """``(line, absolute module)`` of every import that runs (anywhere in the module, lazy ones too), but type-only ones."""
    type_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.ImportFrom):
            module = _absolute(path, node)
            found += [(node.lineno, module), *((node.lineno, f"{module}.{a.name}") for a in node.names)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return found


def _unit(dotted: str) -> str | None:
    """The layering unit a module of ours belongs to: its subpackage (``sessions/``), or the top-level module itself."""
    parts = dotted.split(".")
    if parts[0] != "adk_oceanbase" or len(parts) < 2:
        return None
    if (PACKAGE / parts[1]).is_dir():
        return parts[1] + "/"
    return parts[1] if (PACKAGE / f"{parts[1]}.py").exists() else None


def unit_imports() -> dict[str, set[str]]:
    """Which unit imports which, at run time; ``adk_oceanbase/__init__.py`` is left out: it is the top, and wires."""
    edges: dict[str, set[str]] = {}
    for path, tree in parsed():
        if not path.startswith("adk_oceanbase/") or path == "adk_oceanbase/__init__.py":
            continue
        mine = _unit(path.removesuffix(".py").replace("/", "."))
        for _, module in _runtime_imports(path, tree):
            other = _unit(module)
            if other is not None and other != mine:
                edges.setdefault(mine, set()).add(other)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan): each is an import circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            group.append(v)
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_compaction_and_importer_use_the_public_session_store() -> None:
    """They build on ``sessions.store`` / ``codec`` / ``queries``, never on the service module (issue #25, item 1)."""
    into_service = [
        f"{path}:{line}: {module}"
        for path, tree in parsed()
        if path.startswith(("adk_oceanbase/compaction/", "adk_oceanbase/importer/"))
        for line, module in _runtime_imports(path, tree)
        if module == "adk_oceanbase.sessions.service" or module.startswith("adk_oceanbase.sessions.service.")
    ]
    assert into_service == [], "use service.store (adk_oceanbase.sessions.store.SessionStore) instead"
    private = sorted(
        (path, name)
        for path, name in underscore_uses()
        if path.startswith(("adk_oceanbase/compaction/", "adk_oceanbase/importer/")) and not name.startswith("google.adk.")
    )
    assert private == [], "a session-store operation compaction or the importer needs is a public method of SessionStore"


def test_sessions_do_not_import_compaction() -> None:
    """Compaction builds on sessions; the service runs it through ``sessions.store``'s hook, not an import."""
    edges = unit_imports()
    assert "sessions/" in edges["compaction/"] and "sessions/" in edges["importer/"]
    assert "compaction/" not in edges["sessions/"]
    assert "importer/" not in edges["sessions/"]


def test_no_import_circle_between_packages() -> None:
    assert cycles(unit_imports()) == [], "a package imports one that imports it back: move the shared piece down"


def test_the_circle_check_sees_a_circle() -> None:
    assert cycles({"sessions/": {"compaction/", "errors"}, "compaction/": {"sessions/"}, "errors": set()}) == [
        ["compaction/", "sessions/"]
    ]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..sessions import service\n"
                     "def f():\n    from ..compaction import compactor\n")
    modules = [m for _, m in _runtime_imports("adk_oceanbase/sessions/x.py", tree)]
    assert "adk_oceanbase.compaction.compactor" in modules  # a lazy import counts
    assert "adk_oceanbase.sessions.service" not in modules  # a type-only import does not


def test_the_package_installs_compaction_for_the_session_service() -> None:
    """``OceanBaseSessionService.compact_session`` runs the compaction package's function, installed at the top."""
    from adk_oceanbase import compaction as compaction_package
    from adk_oceanbase.sessions import store

    assert store.compaction() is compaction_package.compact_session


ENGINE_BRANCHES_ALLOWED: dict[str, str] = {}
"""Memory modules that still ask which engine they run on -> why.  The list may only shrink."""


def engine_questions(tree: ast.Module) -> list[str]:
    """Where a module asks which engine it is on: ``.native_vectors``, ``.is_oceanbase``, ``<...dialect>.name``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if node.attr in ("native_vectors", "is_oceanbase") or (
            node.attr == "name" and ast.unparse(node.value).endswith("dialect")
        ):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_memory_never_asks_which_engine_it_is_on() -> None:
    """Issue #25: the dialect (its codec, vector type, ranking) and the retriever it picks supply what differs."""
    asking = {
        path: engine_questions(tree)
        for path, tree in parsed()
        if path.startswith("adk_oceanbase/memory/") and engine_questions(tree)
    }
    assert {p: a for p, a in asking.items() if p not in ENGINE_BRANCHES_ALLOWED} == {}, \
        "ask the engine dialect for what differs (adk_oceanbase/dialects.py) instead of testing which one it is"
    assert set(ENGINE_BRANCHES_ALLOWED) <= set(asking), "fixed: take it off ENGINE_BRANCHES_ALLOWED"


def test_the_engine_question_check_sees_a_branch() -> None:
    tree = ast.parse("if self._db.dialect.native_vectors: pass\nx = db.dialect.name == 'oceanbase'\n"
                     "y = config.is_oceanbase\nz = self.database.dialect.ranking\n")
    assert {f.split(": ")[1] for f in engine_questions(tree)} == {
        "self._db.dialect.native_vectors", "db.dialect.name", "config.is_oceanbase"}
