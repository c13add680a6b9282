"""Retrieve: authorization first. A candidate the principal may not read never reaches ranking.

The knowledge base (:mod:`admit.kb`) applies tenant, ACL, language and freshness filters inside its query,
before similarity ranking. For candidates handed in by another retriever, :func:`authorize` is the same gate:
it runs before everything else, and a chunk without an access label is unreadable (fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence

from admit.types import Chunk, Decision, Principal

__all__ = ["authorize"]


def authorize(candidates: Sequence[Chunk], principal: Principal) -> tuple[list[Chunk], list[Decision]]:
    """Split candidates into readable ones and ``acl`` drop decisions (id and reason only, never text)."""
    readable: list[Chunk] = []
    dropped: list[Decision] = []
    for c in candidates:
        if principal.can_read(c.access):
            readable.append(c)
        else:
            detail = "no access label (fail closed)" if c.access is None else "not readable by principal"
            dropped.append(Decision(chunk_id=c.id, state="dropped", stage="authorize", reason="acl", detail=detail))
    return readable, dropped
