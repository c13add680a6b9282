"""Copy a knowledge base from one store to another (the embedded file to PostgreSQL + pgvector, say).

Every source moves whole, with its stored vectors, features and ingest keys, so nothing is embedded again (at a
few chunks a second on a CPU, re-ingesting a million chunks takes days; copying takes minutes) and a later
``admit ingest`` into the target still skips unchanged sources. Each source is one ``replace_source`` in the
target, so re-running a copy cut short finishes it; a source already in the target with the same ingest key is
skipped.

Example:
    >>> from admit.kb import open_store  # doctest: +SKIP
    >>> copy_store(open_store("kb.sqlite", dim=384), open_store("postgresql://u@db/admit", dim=384))  # doctest: +SKIP
"""

from __future__ import annotations

from dataclasses import dataclass

from admit.errors import ConfigError
from admit.kb.store import Store

__all__ = ["CopyReport", "copy_store"]

META_KEYS = ("embedder", "embedder_spec")
"""Store settings copied with the chunks (the embedder the vectors came from)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyReport:
    """What one copy did."""

    sources_copied: int = 0
    """Sources written to the target."""
    sources_skipped: int = 0
    """Sources the target already held with the same ingest key."""
    chunks_copied: int = 0
    """Chunks written to the target."""


def copy_store(source: Store, target: Store) -> CopyReport:
    """Copy every source of ``source`` into ``target`` (vectors included); return the counts.

    Raises:
        ConfigError: The stores hold vectors of different sizes, or were built with different embedders.
    """
    if source.dim != target.dim:
        raise ConfigError(f"The source store holds {source.dim}-d vectors, the target {target.dim}-d.")
    for key in META_KEYS:
        have, want = target.get_meta(key), source.get_meta(key)
        if want is not None and have is not None and have != want:
            raise ConfigError(
                f"The target was built with {key} {have!r}, the source with {want!r}; copy into a new one."
            )
    for key in META_KEYS:
        value = source.get_meta(key)
        if value is not None:
            target.set_meta(key, value)
    done = {(s.source_id, s.tenant): s.ingest_key for s in target.list_sources()}
    copied = skipped = chunks = 0
    for src in source.list_sources():
        if src.ingest_key and done.get((src.source_id, src.tenant)) == src.ingest_key:
            skipped += 1
            continue
        records = source.get_source_chunks(src.source_id, src.tenant)
        target.replace_source(src.source_id, src.tenant, records)
        copied += 1
        chunks += len(records)
    return CopyReport(sources_copied=copied, sources_skipped=skipped, chunks_copied=chunks)
