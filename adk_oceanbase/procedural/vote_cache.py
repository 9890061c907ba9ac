"""The request vectors recall votes with, kept between recalls: each recall then reads keys, not vectors.  No I/O.

``recall_procedures`` scores the request against the stored request vectors
of the scope's newest ``neighbour_window`` (1,000) runs.  A vector is 2 kB
of base64 text: reading and decoding 1,000 of them on every recall was most
of its time (seekdb, 2 vCPU: ~30 ms in the driver's row parsing and ~18 ms in
base64 decoding of a 55-75 ms recall, ``benchmarks/procedural_scale.py``).
A run's request vector never changes (the request of an invocation is its
first user message, and the key carries its hash), so a recall reads the
newest runs' keys and scenarios (which merges do change) and fetches only
the vectors it has not seen.

Erasure and retention still take a run's vote away at once: the keys are
read from the store on every recall, and a cached vector votes only while
its run is among them.  The vectors of runs that left the window (erased,
expired, or only older) are dropped at that read, so none outlives its row
in memory beyond the scope's next recall.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable, Iterable, Mapping

import numpy as np

__all__ = ["RunKey", "VoteVectors"]

RunKey = tuple[str, str, str, str | None]
"""``(user_id, session_id, invocation_id, request_hash)`` of a stored run."""


class VoteVectors:
    """Per scope (app, scope user, embedding model): run key -> unit request vector (None: the run has none),
    for the newest runs only.

    Example:
        >>> cache = VoteVectors(scopes=2)
        >>> cache.keep(("app", "", "m"), [("u", "s", "i", "h")])
        {}
        >>> cache.add(("app", "", "m"), {("u", "s", "i", "h"): np.ones(2, dtype=np.float32)})
        >>> sorted(cache.keep(("app", "", "m"), [("u", "s", "i", "h")]))
        [('u', 's', 'i', 'h')]
        >>> cache.keep(("app", "", "m"), [])  # the run left the window (erased, expired or older): dropped
        {}
    """

    def __init__(self, scopes: int = 32):
        if scopes < 1:
            raise ValueError("scopes must be at least 1")
        self.scopes = scopes
        self._by_scope: OrderedDict[Hashable, dict[RunKey, np.ndarray | None]] = OrderedDict()

    def keep(self, scope: Hashable, keys: Iterable[RunKey]) -> dict[RunKey, np.ndarray | None]:
        """The cached vectors of ``keys`` (the scope's newest runs as just read); every other vector of the scope goes."""
        held = self._by_scope.get(scope, {})
        kept = {k: held[k] for k in keys if k in held}
        self._by_scope[scope] = kept
        self._by_scope.move_to_end(scope)
        while len(self._by_scope) > self.scopes:
            self._by_scope.popitem(last=False)
        return dict(kept)

    def add(self, scope: Hashable, vectors: Mapping[RunKey, np.ndarray | None]) -> None:
        """Adds vectors just fetched for runs of ``scope``; only after :meth:`keep` read the scope (else nothing)."""
        held = self._by_scope.get(scope)
        if held is not None:
            held.update(vectors)

    def clear(self) -> None:
        self._by_scope.clear()

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_scope.values())
