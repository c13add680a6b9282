"""The store catalogue: a URL scheme names the store that opens it, built-ins and plug-ins through one door.

Each store module declares a :class:`~admit.kb.store.StoreSpec` ``SPEC`` (its schemes, its ``open(url, *, dim)``
factory, how it tells which embedder built a knowledge base); :data:`BUILTIN_SCHEMES` maps the shipped schemes to
them, and a package adds a scheme with an entry point in the ``admit.stores`` group::

    [project.entry-points."admit.stores"]
    lancedb = "my_package.lance_store:SPEC"

(An entry point naming a bare ``from_url`` factory still works; ``stored_embedder`` is then looked up beside it.)

A location without a scheme (a file path, ``:memory:``) opens the embedded SQLite store.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from admit._plugins import Catalogue
from admit.errors import ConfigError
from admit.kb.store import Store, StoreSpec

__all__ = [
    "BUILTIN_SCHEMES",
    "ENTRY_POINT_GROUP",
    "StoreFactory",
    "StoreSpec",
    "open_store",
    "reload_stores",
    "store_schemes",
    "store_spec",
    "stored_embedder",
]

StoreFactory = Callable[..., Store]
"""``factory(url, *, dim) -> Store``."""

ENTRY_POINT_GROUP = "admit.stores"
"""The entry-point group third-party stores register their URL scheme in."""

_BUILTIN_MODULES = {
    "admit.kb.sqlite_store": ("sqlite",),
    "admit.kb.memory_store": ("memory",),
    "admit.kb.qdrant_store": ("qdrant", "qdrant+local", "qdrant+https"),
    "admit.kb.pgvector_store": ("postgresql", "postgres"),
}
BUILTIN_SCHEMES: dict[str, str] = {x: f"{m}:SPEC" for m, xs in _BUILTIN_MODULES.items() for x in xs}
"""The shipped schemes and their specs (``module:SPEC``; each spec names the same schemes)."""


_STORES = Catalogue("store", ENTRY_POINT_GROUP, BUILTIN_SCHEMES)


def store_schemes() -> tuple[str, ...]:
    """Every URL scheme a store opens (the built-ins first)."""
    return _STORES.names()


def reload_stores() -> None:
    """Read the entry points again (tests, a freshly installed plug-in)."""
    _STORES.reset()


def store_spec(scheme: str) -> StoreSpec:
    """The spec of the store that opens ``scheme://`` URLs.

    Raises:
        ConfigError: No store opens that scheme, or its catalogue entry is not a spec of it.
    """
    name = scheme.lower()
    if name not in _STORES.refs():
        raise ConfigError(f"No store opens {scheme}:// URLs; known schemes: {', '.join(_STORES.names())}.")
    obj = _STORES.load(name)
    if isinstance(obj, StoreSpec):
        if name not in obj.schemes:
            raise ConfigError(f"the store catalogue names {name!r} for a spec of {', '.join(obj.schemes)}.")
        return obj
    if not callable(obj):
        raise ConfigError(f"store {name!r}: its entry is neither a StoreSpec nor a from_url factory.")
    module = sys.modules.get(getattr(obj, "__module__", ""))
    peek = getattr(module, "stored_embedder", None)
    return StoreSpec(schemes=(name,), open=obj, stored_embedder=peek if callable(peek) else None)


def _scheme(path_or_url: str | Path) -> tuple[str, StoreSpec]:
    s = str(path_or_url)
    scheme, sep, _ = s.partition("://")
    return s, store_spec(scheme if sep else "sqlite")


def stored_embedder(path_or_url: str | Path) -> str | None:
    """The embedder spec the knowledge base at ``path_or_url`` was built with, read without creating anything.

    Each store answers for its own data (:attr:`StoreSpec.stored_embedder`; a store without one answers ``None``:
    the caller names the embedder or takes the default).

    Raises:
        ConfigError: The URL's scheme names no store.
    """
    s, spec = _scheme(path_or_url)
    got = spec.stored_embedder(s) if spec.stored_embedder is not None else None
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
    s, spec = _scheme(path_or_url)
    return spec.open(s, dim=dim)
