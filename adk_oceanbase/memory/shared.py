"""Knowledge beyond one user: memories scoped to an app or an agent, with their own governance (issue #31; seeds 003 §4.3, 000 §8.4).

A *scope* is ``"app"`` (facts, documents, policies every user of the app may
be told) or ``"agent:<name>"`` (what one agent knows or publishes).  Its
memories are ordinary ``agent_memories`` rows under a reserved user id
(:func:`scope_user_id`: a leading U+001E, which no ADK user id carries), so
they get the same hybrid ranking, embedding, redaction and retention as a
user's, and:

* **who may write**: only through :class:`SharedMemory`, by a writer the
  policy (:class:`SharedKnowledge`) lists for the scope; the plain memory API
  refuses a scope's user id (:class:`~adk_oceanbase.errors.SharedMemoryWriteError`);
* **erasure** of a user (``delete_user_data``) never touches them: they are
  not that user's rows; erasing a scope is ``delete_user_data(app, scope_user_id(scope))``;
* **audit**: each write is a ``shared_memory_add`` / ``shared_memory_delete``
  row naming the writer as ``actor`` (a refused one too, with status ``error``),
  beside the usual ``memory_add`` row;
* **isolation**: scopes belong to one app; no search of another app sees them.

``OceanBaseMemoryService(shared=SharedKnowledge(include=("app",)))`` makes ADK's
``search_memory`` add the included scopes' best hits to every user's, ranked
by score together (each tagged ``custom_metadata["shared_scope"]``).
"""

from __future__ import annotations

import contextvars
import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from google.adk.memory.memory_entry import MemoryEntry

from ..audit import AuditEntry, audited
from ..errors import SharedMemoryWriteError, ValidationError
from ..validation import check_id

if TYPE_CHECKING:
    from .results import MemoryHit
    from .service import OceanBaseMemoryService

__all__ = ["SCOPE_MARK", "SharedKnowledge", "SharedMemory", "check_scope_write", "scope_user_id", "with_shared"]

SCOPE_MARK = "\x1e"
"""First character of a scope's user id (ASCII record separator)."""

_writing: contextvars.ContextVar[bool] = contextvars.ContextVar("adk_oceanbase_shared_write", default=False)


def scope_user_id(scope: str) -> str:
    """The user id a scope's memories are stored under: ``"app"`` -> ``"\\x1eapp"``, ``"agent:planner"`` -> ``"\\x1eagent:planner"``."""
    if scope == "app" or (isinstance(scope, str) and scope.startswith("agent:") and scope[6:].strip()):
        return check_id("scope", SCOPE_MARK + scope)
    raise ValidationError(f"a shared scope is 'app' or 'agent:<name>', got {scope!r}")


def check_scope_write(user_id: str) -> None:
    """Refuses a write to a scope's user id that did not come through :class:`SharedMemory`."""
    if user_id.startswith(SCOPE_MARK) and not _writing.get():
        raise SharedMemoryWriteError(
            f"{user_id[1:]!r} is a shared scope: write it with SharedMemory(service).add(..., writer=...)"
        )


@dataclass(frozen=True)
class SharedKnowledge:
    """The policy of an app's shared memories: which scopes every user's search includes, and who writes each.

    Example:
        >>> policy = SharedKnowledge(include=("app", "agent:researcher"),
        ...                          writers={"app": {"admin"}, "agent:researcher": {"researcher"}})
    """

    include: tuple[str, ...] = ("app",)
    """Scopes ``search_memory`` adds to every user's hits (empty: none; :meth:`SharedMemory.search` still reads them)."""
    writers: Mapping[str, frozenset[str] | set[str] | Sequence[str]] = field(default_factory=dict)
    """Per scope, the writers (agent or operator names) allowed to add and delete; a scope not listed: nobody."""

    def __post_init__(self) -> None:
        if isinstance(self.include, str):
            raise ValidationError("SharedKnowledge.include must be a tuple of scopes, not one string")
        for scope in (*self.include, *self.writers):
            scope_user_id(scope)
        object.__setattr__(self, "include", tuple(self.include))
        object.__setattr__(self, "writers", {k: frozenset(v) for k, v in self.writers.items()})

    def may_write(self, scope: str, writer: str) -> bool:
        return writer in self.writers.get(scope, frozenset())


def _shared_entry(operation: str):
    def describe(call: inspect.BoundArguments) -> AuditEntry:
        a = call.arguments
        return AuditEntry(operation, a["app_name"], scope_user_id(a["scope"]), actor=a["writer"])

    return describe


class SharedMemory:
    """Writes and reads a service's shared scopes under its :class:`SharedKnowledge` policy.

    Example (one agent writes, another reads; see README "Shared knowledge"):
        >>> shared = SharedMemory(memory_service)  # doctest: +SKIP
        >>> await shared.add(app_name="travel", scope="agent:researcher", writer="researcher",
        ...                  memories=[MemoryEntry(content=types.Content(parts=[types.Part(text="Visa rules ...")]))])
        >>> await shared.search("travel", "visa rules", scope="agent:researcher")  # the planner agent reads
    """

    def __init__(self, service: "OceanBaseMemoryService", policy: SharedKnowledge | None = None):
        policy = policy or service.shared
        if policy is None:
            raise ValidationError("SharedMemory needs a SharedKnowledge policy (here or the service's shared=)")
        self.service = service
        self.policy = policy
        self._auditor = service.auditor  # the audited decorator records through these two
        self._tx = service.transaction

    def _authorise(self, scope: str, writer: str) -> None:
        check_id("writer", writer)
        if not self.policy.may_write(scope, writer):
            raise SharedMemoryWriteError(f"writer {writer!r} may not write shared scope {scope!r} (SharedKnowledge.writers)")

    @audited(_shared_entry("shared_memory_add"))
    async def add(self, *, app_name: str, scope: str, memories: Sequence[MemoryEntry], writer: str) -> None:
        """Stores memories in ``scope`` of ``app_name`` as ``writer`` (the author, unless an entry names one)."""
        self._authorise(scope, writer)
        entries = [m if m.author else m.model_copy(update={"author": writer}) for m in memories]
        token = _writing.set(True)
        try:
            await self.service.add_memory(app_name=app_name, user_id=scope_user_id(scope), memories=entries)
        finally:
            _writing.reset(token)

    @audited(_shared_entry("shared_memory_delete"))
    async def delete(self, *, app_name: str, scope: str, memory_id: str, writer: str) -> bool:
        """Erases one memory of ``scope``; returns whether one was erased."""
        self._authorise(scope, writer)
        token = _writing.set(True)
        try:
            return await self.service.delete_memory(app_name=app_name, user_id=scope_user_id(scope), memory_id=memory_id)
        finally:
            _writing.reset(token)

    async def search(self, app_name: str, query: str, *, scope: str = "app", top_k: int | None = None) -> list["MemoryHit"]:
        """``scope``'s memories for ``query`` (any agent of the app may read them)."""
        hits = await self.service.search(app_name, scope_user_id(scope), query, top_k=top_k)
        return [_tagged(h, scope) for h in hits]


def _tagged(hit: "MemoryHit", scope: str) -> "MemoryHit":
    hit.entry.custom_metadata = {**(hit.entry.custom_metadata or {}), "shared_scope": scope}
    return hit


async def with_shared(
    service: "OceanBaseMemoryService", policy: SharedKnowledge, app_name: str, query: str,
    hits: list["MemoryHit"], *, top_k: int, bump_access: Any,
) -> list["MemoryHit"]:
    """A user's ``hits`` with the included scopes' best ``top_k`` each, the best ``top_k`` of all by score.

    Scores are comparable (one formula); the full-text part is BM25 over each
    pool's own statistics, so a small scope's rare term weighs a little more.
    """
    pooled = list(hits)
    for scope in policy.include:
        found = await service.search(app_name, scope_user_id(scope), query, top_k=top_k, bump_access=bump_access)
        pooled.extend(_tagged(h, scope) for h in found)
    return sorted(pooled, key=lambda h: -h.score)[:top_k]
