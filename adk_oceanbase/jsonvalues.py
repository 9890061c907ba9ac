"""Checks that a value is JSON that loads back as itself: state values, event and memory ``custom_metadata``.

``json.dumps`` turns a tuple into a list and pydantic's JSON mode turns a set
into a list and NaN into ``null``, so without this check such values were
stored as something else without a word; and 2,000 levels of nesting raised a
raw ``RecursionError`` from the encoder (issue 24).  The walk is iterative, so
it has no depth limit of its own, and each error names the key path.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_DEPTH", "check_json", "key_path"]

MAX_DEPTH = 200
"""Deepest nesting stored.  pydantic stops serialising an event at about 250
levels and ``json`` recurses once per level (the interpreter's limit is 1,000);
a state value sits three levels down in its event (``actions.state_delta.key``)."""


def key_path(path: list[Any]) -> str:
    """``['a'][0]['b']``; a long path keeps its first and last steps and says how deep it is."""
    steps = [f"[{p!r}]" for p in path]
    if len(steps) > 8:
        steps = [*steps[:4], "...", *steps[-2:], f" ({len(path)} levels)"]
    return "".join(steps) or "(top level)"


def check_json(kind: str, value: Any, error: type[Exception]) -> None:
    """Raises ``error`` naming ``kind`` and the key path unless ``value`` is JSON all the way down.

    JSON here: dicts with str keys, lists, str, int, finite float, bool,
    None; at most :data:`MAX_DEPTH` levels; no container inside itself.
    """
    # (value, its key path, the ids of the containers above it): a container
    # among its own ancestors is a cycle; one shared by two branches is fine.
    stack: list[tuple[Any, list[Any], tuple[int, ...]]] = [(value, [], ())]
    while stack:
        v, path, above = stack.pop()
        if v is None or isinstance(v, (str, bool, int)):
            continue
        if isinstance(v, float):
            if not math.isfinite(v):
                raise error(f"{kind} at {key_path(path)} is {v!r}, which JSON cannot store (it would load as null)")
            continue
        if isinstance(v, (list, dict)):
            if id(v) in above:
                raise error(f"{kind} at {key_path(path)} contains itself")
            if len(path) >= MAX_DEPTH:
                raise error(f"{kind} nests deeper than {MAX_DEPTH} levels at {key_path(path)}")
            inner = (*above, id(v))
            if isinstance(v, list):
                stack.extend((item, [*path, i], inner) for i, item in enumerate(v))
                continue
            for k, item in v.items():
                if not isinstance(k, str):
                    raise error(f"{kind} at {key_path(path)} has a {type(k).__name__} dict key {k!r}; JSON keys are strings")
                stack.append((item, [*path, k], inner))
            continue
        what = "a list" if isinstance(v, (set, frozenset, tuple)) else "a string"
        raise error(
            f"{kind} at {key_path(path)} holds a {type(v).__name__}, which would load back as {what}: "
            "store JSON (dict with str keys, list, str, int, finite float, bool, None)"
        )
