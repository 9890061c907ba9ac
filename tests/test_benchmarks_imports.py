"""benchmarks/ layers one way: shared modules at the bottom, entry scripts at the top (issue 25).

The graph is read from the source with ``ast`` (nothing is imported, so no benchmark runs and no
dataset is needed).  Every import counts, the lazy ones inside functions too: a cycle hidden in a
function body is still a cycle a reader has to untangle.  Both spellings the scripts use resolve
to the same module: ``from benchmarks._common import x`` (package style) and ``from _common import
x`` (script style, after the script put ``benchmarks/`` on ``sys.path``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _modules() -> dict[str, ast.Module]:
    return {path.stem: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for path in sorted(BENCHMARKS.glob("*.py"))}


def _imported(tree: ast.Module, local: set[str]) -> set[str]:
    """The sibling modules ``tree`` imports, whichever spelling it uses."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level or base == "benchmarks":  # from . import _x / from benchmarks import _x
                names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
                if base and base != "benchmarks":
                    names.append(base)
            else:
                names = [base]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "benchmarks":
                parts = parts[1:]
            if parts and parts[0] in local:
                found.add(parts[0])
    return found


def _is_entry(tree: ast.Module) -> bool:
    """A module with an ``if __name__ == "__main__":`` block at its top level."""
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            sides = [node.test.left, *node.test.comparators]
            if any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
                isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
            ):
                return True
    return False


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imported(tree, set(modules)) - {name} for name, tree in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_graph_sees_both_import_spellings():
    """Guards the parser itself: a reader that missed imports would pass the checks below vacuously."""
    graph = _graph()
    assert "_common" in graph["retrieval"]  # from benchmarks._common import ...
    assert "_common" in graph["sessions"]  # from _common import ... (script style)


def test_no_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle in benchmarks/: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_module_imports_an_entry_script(name):
    modules = _modules()
    entries = {n for n, tree in modules.items() if _is_entry(tree)}
    bad = sorted(_imported(modules[name], set(modules)) & entries - {name})
    assert not bad, f"benchmarks/{name}.py imports entry script(s) {bad}: move what it needs into a shared module"
