"""The store catalogue: a URL scheme names the store that opens it, built-ins and plug-ins through one door.

Each store module declares a ``from_url(url, *, dim)`` factory; :data:`BUILTIN_SCHEMES` maps the shipped schemes
to them, and a package adds a scheme with an entry point in the ``admit.stores`` group::

    [project.entry-points."admit.stores"]
    lancedb = "my_package.lance_store:from_url"

A location without a scheme (a file path, ``:memory:``) opens the embedded SQLite store.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import cast

from admit._plugins import Catalogue
from admit.errors import ConfigError
from admit.kb.store import Store

__all__ = [
    "BUILTIN_SCHEMES",
    "ENTRY_POINT_GROUP",
    "StoreFactory",
    "open_store",
    "reload_stores",
    "store_schemes",
    "stored_embedder",
]

StoreFactory = Callable[..., Store]
"""``factory(url, *, dim) -> Store``."""

ENTRY_POINT_GROUP = "admit.stores"
"""The entry-point group third-party stores register their URL scheme in."""

BUILTIN_SCHEMES: dict[str, str] = {
    "sqlite": "admit.kb.sqlite_store:from_url",
    "memory": "admit.kb.memory_store:from_url",
    "qdrant": "admit.kb.qdrant_store:from_url",
    "qdrant+local": "admit.kb.qdrant_store:from_url",
    "qdrant+https": "admit.kb.qdrant_store:from_url",
    "postgresql": "admit.kb.pgvector_store:from_url",
    "postgres": "admit.kb.pgvector_store:from_url",
}
"""The shipped schemes and their factories (``module:function``)."""


_STORES = Catalogue("store", ENTRY_POINT_GROUP, BUILTIN_SCHEMES)


def store_schemes() -> tuple[str, ...]:
    """Every URL scheme a store opens (the built-ins first)."""
    return _STORES.names()


def reload_stores() -> None:
    """Read the entry points again (tests, a freshly installed plug-in)."""
    _STORES.reset()


def _scheme(path_or_url: str | Path) -> tuple[str, str]:
    s = str(path_or_url)
    scheme, sep, _ = s.partition("://")
    name = scheme.lower() if sep else "sqlite"
    if name not in _STORES.refs():
        raise ConfigError(f"No store opens {scheme}:// URLs; known schemes: {', '.join(_STORES.names())}.")
    return s, name


def stored_embedder(path_or_url: str | Path) -> str | None:
    """The embedder spec the knowledge base at ``path_or_url`` was built with, read without creating anything.

    Each store module answers for its own data: a ``stored_embedder(url)`` function beside its ``from_url``
    factory (a plug-in store without one answers ``None``: the caller names the embedder or takes the default).

    Raises:
        ConfigError: The URL's scheme names no store.
    """
    s, name = _scheme(path_or_url)
    factory = _STORES.load(name)
    module = sys.modules.get(getattr(factory, "__module__", ""))
    peek = getattr(module, "stored_embedder", None)
    if not callable(peek):
        return None
    got = peek(s)
    return str(got) if got else None


def open_store(path_or_url: str | Path, *, dim: int) -> Store:
    """Open a store from a path or URL.

    * ``/path/kb.sqlite`` or ``:memory:`` -> :class:`~admit.kb.sqlite_store.SqliteStore` (the default)
    * ``memory://`` (private) or ``memory://NAME`` (shared in this process) ->
      :class:`~admit.kb.memory_store.MemoryStore`
    * ``qdrant://host:6333/collection`` -> Qdrant server; ``qdrant+local:///dir?collection=c`` or
      ``qdrant+local://:memory:`` -> the Qdrant client's embedded local mode
    * ``postgresql://user@host:port/db?table=admit_chunks`` -> PostgreSQL + pgvector
    * ``SCHEME://...`` of a store plug-in (entry-point group ``admit.stores``)

    Raises:
        ConfigError: The URL's scheme names no store.
    """
    s, name = _scheme(path_or_url)
    factory = cast(StoreFactory, _STORES.load(name))
    return factory(s, dim=dim)
