"""A real knowledge base over the shipped in-process store, for tests of what sits on top (the service, faces).

Example:
    >>> from admit.types import Access, Chunk
    >>> kb = memory_kb([Chunk(id="a#1", source_id="a", text="The port is 8080.", access=Access(tenant="t"))],
    ...                embedder="fake:16")
    >>> kb.count()
    1
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from admit.backends.embedders import Embedder
from admit.types import Chunk

if TYPE_CHECKING:
    from admit.kb import KnowledgeBase

__all__ = ["memory_kb"]


def memory_kb(chunks: Iterable[Chunk], *, embedder: Embedder | str = "minilm", url: str = "memory://") -> KnowledgeBase:
    """A :class:`~admit.kb.KnowledgeBase` on ``url`` (default: a fresh ``memory://`` store) holding ``chunks``,
    embedded by ``embedder`` exactly as ingest embeds (the real MiniLM by default)."""
    from admit.kb import KnowledgeBase

    kb = KnowledgeBase(url, embedder=embedder)
    kb.add_chunks(list(chunks))
    return kb
