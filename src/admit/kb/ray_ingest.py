"""Ingest on Ray Data: the walk and the plan here, parse, chunk, embed and write on workers.

:func:`ingest_with_ray` runs the same :func:`~admit.kb.ingest.ingest_paths` as the local path (the same walk,
registry, ingest keys and removal of files gone from a folder; an unchanged source is skipped before any worker
sees it), with a :class:`RayWriter` as its writer: the sources to write become a Ray dataset and
``map_batches`` hands them, a few at a time, to ``workers`` actors. Each actor loads the embedder once, opens the
shared store from its URL, and for each source parses, chunks, embeds the changed chunks in batches and replaces
the source in one transaction (:func:`~admit.kb.ingest.write_source`). So a run is idempotent per source: re-running
skips what is written, and a run cut short leaves every source wholly old or wholly new.

The workers write concurrently, so the store must be a server every process can reach: PostgreSQL + pgvector
(``postgresql://``) or Qdrant (``qdrant://``). Needs ``pip install "admit[ray]"``.

Example:
    >>> from admit.kb import KnowledgeBase  # doctest: +SKIP
    >>> kb = KnowledgeBase("postgresql://postgres@127.0.0.1:5432/postgres", embedder="minilm")  # doctest: +SKIP
    >>> ingest_with_ray(kb, ["docs/"], tenant="acme", workers=2).chunks_written  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from admit._ray import import_ray, start_ray
from admit.backends.embedders.defaults import EncoderConfig
from admit.errors import ConfigError
from admit.kb.ingest import IngestOptions, IngestReport, SourceJob, SourceSettings, write_source

if TYPE_CHECKING:
    from admit.kb import KnowledgeBase

__all__ = ["RayWriter", "ingest_with_ray"]

logger = logging.getLogger(__name__)

SHARED_SCHEMES = ("postgresql://", "postgres://", "qdrant://", "qdrant+https://")
"""Store URLs several processes can write at once."""


def _job_json(job: SourceJob) -> str:
    d = asdict(job)
    st = d["settings"]
    st["groups"] = list(st["groups"])
    st["updated"] = job.settings.updated.isoformat() if job.settings.updated else None
    return json.dumps(d)


def _job_from_json(s: str) -> SourceJob:
    d = json.loads(s)
    st = d.pop("settings")
    st["groups"] = tuple(st["groups"])
    st["updated"] = datetime.fromisoformat(st["updated"]) if st["updated"] else None
    d["drop"] = tuple(d.get("drop", ()))
    d["also_at"] = {k: tuple(v) for k, v in d.get("also_at", {}).items()}
    d["also_under"] = {k: tuple(v) for k, v in d.get("also_under", {}).items()}
    return SourceJob(settings=SourceSettings(**st), **d)


class _SourceWorker:
    """A Ray actor: the embedder and a store connection, kept for every batch of sources it is given."""

    def __init__(
        self,
        store_url: str,
        dim: int,
        embedder: str,
        options: Mapping[str, Any],
        minilm: Mapping[str, Any] | None = None,
    ):
        from admit.backends.embedders import resolve_embedder
        from admit.kb import open_store

        self.store = open_store(store_url, dim=dim)
        # the knowledge base's MiniLM folder, threads and encoder come with the work: an actor's process starts bare
        self.embedder = resolve_embedder(embedder, config=EncoderConfig.from_json(minilm) if minilm else None)
        self.options = IngestOptions(**options)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[str]]:
        out: list[str] = []
        for raw in batch["job"]:
            job = _job_from_json(str(raw))
            try:
                counts: dict[str, int] | str = write_source(self.store, self.embedder, job, self.options)
            except (OSError, ValueError) as exc:  # the same per-file failures the local path records
                counts = str(exc)
            out.append(json.dumps({"job": str(raw), "outcome": counts}))
        return {"result": out}


class RayWriter:
    """A :data:`~admit.kb.ingest.SourceWriter` on Ray Data (``workers`` actors, ``sources_per_batch`` each call).

    Starts a local Ray instance with ``workers`` CPUs (no dashboard) unless one is initialised or ``address``
    names a cluster. ``options``: the run's :class:`~admit.kb.ingest_types.IngestOptions` (the workers chunk and
    embed with its tokenizer, ``max_tokens`` and ``batch_size``).
    """

    def __init__(
        self,
        store_url: str,
        *,
        dim: int,
        embedder: str,
        options: IngestOptions,
        workers: int = 2,
        sources_per_batch: int = 2,
        address: str | None = None,
        minilm: EncoderConfig | None = None,
    ) -> None:
        ray = import_ray()
        if not str(store_url).startswith(SHARED_SCHEMES):
            raise ConfigError(
                f"`--engine ray` writes from several processes, so the store must be a server: got {store_url!r}; "
                "use postgresql://... (pgvector) or qdrant://host:port/collection."
            )
        if workers < 1:
            raise ConfigError(f"`workers` must be at least 1, got {workers}.")
        if sources_per_batch < 1:
            raise ConfigError(f"`sources_per_batch` must be at least 1, got {sources_per_batch}.")
        self._ray = ray
        self.store_url = str(store_url)
        self.dim = dim
        self.embedder = embedder
        self.workers = workers
        self.sources_per_batch = sources_per_batch
        self.options = options
        self.address = address
        self.minilm = minilm

    def __call__(self, jobs: Sequence[SourceJob]) -> Iterator[tuple[SourceJob, Mapping[str, int] | str]]:
        """Write the planned sources on the workers; yield each with its counts or its error."""
        ray = self._ray
        if not jobs:
            return
        start_ray(ray, address=self.address, num_cpus=self.workers)
        by_json = {_job_json(j): j for j in jobs}
        ds = ray.data.from_items([{"job": s} for s in by_json])
        out = ds.map_batches(
            _SourceWorker,
            batch_size=self.sources_per_batch,
            compute=ray.data.ActorPoolStrategy(size=min(self.workers, len(jobs))),
            num_cpus=1,
            fn_constructor_kwargs={
                "store_url": self.store_url,
                "dim": self.dim,
                "embedder": self.embedder,
                "options": self.options.as_json(),
                "minilm": self.minilm.to_json() if self.minilm is not None else None,
            },
        )
        for row in out.iter_rows():
            r = json.loads(row["result"])
            yield by_json[r["job"]], r["outcome"]


def ingest_with_ray(
    kb: KnowledgeBase,
    paths: Sequence[str | Path],
    options: IngestOptions | None = None,
    *,
    workers: int = 2,
    sources_per_batch: int = 2,
    progress: bool | Literal["auto"] = False,
    address: str | None = None,
    **fields: Any,
) -> IngestReport:
    """Ingest into ``kb`` (a server store opened by URL) with parse, chunk, embed and write on Ray workers.

    ``options`` and ``fields`` as :meth:`KnowledgeBase.ingest` takes them. The knowledge base must have been
    opened with an embedder spec (``KnowledgeBase(url, embedder="minilm")``): each worker resolves the same spec,
    with the knowledge base's embedder's MiniLM configuration (its folder, threads and encoder).
    """
    spec = kb.embedder_spec
    if not spec:
        raise ConfigError("`--engine ray` needs the embedder by name (e.g. --embedder minilm), not an instance.")
    if "groups" in fields and fields["groups"] is not None:
        fields["groups"] = tuple(fields["groups"])
    opts = IngestOptions.of(options or IngestOptions(max_tokens=kb.max_tokens), **fields)
    writer = RayWriter(
        kb.location,
        dim=kb.store.dim,
        embedder=spec,
        options=opts,
        workers=workers,
        sources_per_batch=sources_per_batch,
        address=address,
        minilm=config if isinstance(config := getattr(kb.embedder, "config", None), EncoderConfig) else None,
    )
    return kb.ingest(paths, opts, progress=progress, writer=writer)
