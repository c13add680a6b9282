"""The knowledge base: a store, an embedder, and the admission pipeline on top (:class:`KnowledgeBase`), and
the principal syntax of the command line (:func:`parse_principal`)."""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from admit.backends.embedders import CachedEmbedder, Embedder, resolve_embedder
from admit.errors import AuthorizationError, ConfigError
from admit.features import FEATURES_KEY, seed_features
from admit.kb.ingest import DEFAULT_MAX_TOKENS, IngestReport, Registry, SourceWriter, ingest_paths
from admit.kb.store import Hit, SearchFilters, SourceInfo, Store
from admit.kb.stores import open_store
from admit.types import Chunk, PackResult, Principal

__all__ = ["KnowledgeBase", "parse_principal"]

_MAX_PIPELINES = 8
"""Pipelines kept per knowledge base (one per policy set in use; the least recently used goes)."""


logger = logging.getLogger(__name__)


def parse_principal(spec: str) -> Principal:
    """Parse ``tenant:T[,group:G...]`` (``groups:a|b`` also works) into a :class:`~admit.types.Principal`.

    Raises:
        AuthorizationError: If the text is malformed or names no tenant (admit fails closed).
    """
    tenant = ""
    groups: list[str] = []
    for part in (p.strip() for p in (spec or "").split(",")):
        if not part:
            continue
        key, sep, value = part.partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep or not value:
            raise AuthorizationError(f"Bad principal part {part!r} in {spec!r}; write tenant:T,group:G.")
        if key == "tenant":
            if tenant and tenant != value:
                raise AuthorizationError(f"Principal {spec!r} names two tenants.")
            tenant = value
        elif key in {"group", "groups"}:
            groups.extend(g for g in value.split("|") if g)
        else:
            raise AuthorizationError(f"Unknown principal key {key!r} in {spec!r}; use tenant: and group:.")
    if not tenant:
        raise AuthorizationError(f"Principal {spec!r} names no tenant; write tenant:T[,group:G...].")
    return Principal(tenant=tenant, groups=tuple(dict.fromkeys(groups)))


def _peek_sqlite_meta(path: Path) -> dict[str, str]:
    """Read the meta table of an existing embedded KB without creating anything."""
    if not path.is_file():
        return {}
    try:
        import sqlean

        conn = sqlean.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        finally:
            conn.close()
    except Exception:  # not a KB yet, or not readable: the store will say so
        return {}


class KnowledgeBase:
    """A knowledge base: a store, an embedder, and the admission pipeline on top.

    Safe for concurrent readers (the embedded store gives each thread its own connection).

    Args:
        path_or_url: The embedded KB file (default store), or a store URL (see :func:`open_store`).
        embedder: An embedder or its name; default: the one the KB was built with, else ``minilm``.
        store: A store instance (then ``path_or_url`` is only a label).
        max_tokens: The most cl100k tokens a chunk may have at ingest.
    """

    def __init__(
        self,
        path_or_url: str | Path = ":memory:",
        *,
        embedder: Embedder | str | None = None,
        store: Store | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.location = str(path_or_url)
        meta: dict[str, str] = {}
        is_url = "://" in self.location
        if store is None and not is_url and self.location != ":memory:":
            meta = _peek_sqlite_meta(Path(self.location).expanduser())
        spec: Embedder | str = embedder if embedder is not None else meta.get("embedder_spec", "minilm")
        self.embedder = resolve_embedder(spec)
        self.store: Store = store if store is not None else open_store(path_or_url, dim=self.embedder.dim)
        if self.store.dim != self.embedder.dim:
            raise ConfigError(
                f"The store holds {self.store.dim}-d vectors but embedder {self.embedder.name!r} gives "
                f"{self.embedder.dim}-d."
            )
        stored = self.store.get_meta("embedder")
        if stored is not None and stored != self.embedder.name:
            raise ConfigError(
                f"Knowledge base {self.location!r} was built with embedder {stored!r}, not {self.embedder.name!r}; "
                "open it with the same embedder or ingest into a new knowledge base."
            )
        self._spec = spec if isinstance(spec, str) else None
        self.max_tokens = max_tokens
        self._query_cache = CachedEmbedder(self.embedder, max_items=20_000)
        self._pipelines: OrderedDict[Any, tuple[Any, Any]] = OrderedDict()
        self._pipe_lock = threading.Lock()

    @property
    def embedder_spec(self) -> str | None:
        """The embedder's spec (``"minilm"``, ``"fake:384"``), or ``None`` when it was given as an instance."""
        return self._spec

    @property
    def cached_embedder(self) -> Embedder:
        """The KB's embedder behind a thread-safe cache seeded with retrieved chunks' stored vectors."""
        return self._query_cache

    # -- lifecycle -----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the store."""
        self.store.close()

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- ingest --------------------------------------------------------------------------------------------
    def ingest(
        self,
        paths: Sequence[str | Path] | str | Path,
        *,
        tenant: str | None = None,
        groups: Sequence[str] | None = None,
        authority: float | None = None,
        label: str | None = None,
        registry: Registry | str | Path | None = None,
        progress: bool = False,
        batch_size: int = 64,
        writer: SourceWriter | None = None,
    ) -> IngestReport:
        """Ingest files and folders (see :mod:`admit.kb.ingest`); return what changed.

        ``batch_size`` texts are embedded per call, gathered across files; ``progress`` draws a bar of chunks
        embedded, with an ETA, on stderr; ``writer`` writes the planned sources elsewhere (the Ray engine).
        """
        if self.store.get_meta("embedder") is None:
            self.store.set_meta("embedder", self.embedder.name)
            if self._spec:
                self.store.set_meta("embedder_spec", self._spec)
        if isinstance(paths, str | Path):
            paths = [paths]
        return ingest_paths(
            self.store,
            self.embedder,
            list(paths),
            tenant=tenant,
            groups=groups,
            authority=authority,
            label=label,
            registry=registry,
            max_tokens=self.max_tokens,
            progress=progress,
            batch_size=batch_size,
            writer=writer,
        )

    # -- retrieval -----------------------------------------------------------------------------------------
    def hits(
        self,
        question: str,
        principal: Principal | None,
        *,
        k: int = 30,
        filters: SearchFilters | None = None,
        timings: dict[str, float] | None = None,
    ) -> list[Hit]:
        """Hybrid search; ``timings`` (if given) receives ``embed_query`` and ``retrieve`` milliseconds."""
        if principal is None or not principal.tenant:
            raise AuthorizationError("Retrieval needs a principal with a tenant; admit fails closed.")
        t0 = time.perf_counter()
        qv = self._query_cache.embed([question])[0]
        t1 = time.perf_counter()
        hits = self.store.search(question, qv, principal=principal, k=k, filters=filters)
        for h in hits:  # token counts, flags and signatures stored at ingest: the chunks are not cold
            seed_features(h.record.title, h.record.text, h.record.metadata.get(FEATURES_KEY))
        t2 = time.perf_counter()
        if timings is not None:
            timings["embed_query"] = (t1 - t0) * 1000
            timings["retrieve"] = (t2 - t1) * 1000
        return hits

    def retrieve(
        self, question: str, principal: Principal | None, *, k: int = 30, filters: SearchFilters | None = None
    ) -> list[Chunk]:
        """The top-``k`` readable chunks, best first (``Chunk.score`` is the fused score)."""
        return [
            h.record.to_chunk(score=h.fused, extra={"retrieval": h.as_dict()})
            for h in self.hits(question, principal, k=k, filters=filters)
        ]

    # -- the whole job -------------------------------------------------------------------------------------
    def _pipeline(self, policy: Any) -> Any:
        from admit.pipeline import Pipeline
        from admit.prune import PrunerResources

        # a policy file by its path, a PolicySet by identity (kept alive beside its pipeline, so the id stays
        # its own); the few most recently used are kept
        key: Any = ("path", str(policy)) if policy is None or isinstance(policy, str | Path) else ("set", id(policy))
        with self._pipe_lock:
            hit = self._pipelines.get(key)
            if hit is None:
                hit = (policy, Pipeline(policies=policy, resources=PrunerResources(embedder=self._query_cache)))
                self._pipelines[key] = hit
                while len(self._pipelines) > _MAX_PIPELINES:
                    self._pipelines.popitem(last=False)
            self._pipelines.move_to_end(key)
            return hit[1]

    def search(
        self,
        question: str,
        principal: Principal | None,
        *,
        prune: bool | str | None = None,
        model: str = "gpt-4o",
        input_limit: int = 16_000,
        policy: Any = None,
        pipeline: Any = None,
        filters: SearchFilters | None = None,
        k: int | None = None,
        query_class: str | None = None,
        instructions: str = "",
        request_id: str | None = None,
        tool_outputs: Sequence[Any] = (),
    ) -> PackResult:
        """Retrieve widely (the route's ``candidate_count``), then rerank, dedupe, prune, pack, render and trace.

        Args:
            question: The question.
            principal: Who asks (``None`` is refused).
            prune: ``True`` for ``setwise``, ``False`` for none, a strategy name, or ``None`` for the policy's.
            model: Target model (its tokenizer counts the budget).
            input_limit: Target model input limit.
            policy: A policy TOML path or :class:`~admit.policy.PolicySet` (default: the shipped one).
            pipeline: A :class:`~admit.pipeline.Pipeline` to use instead of the KB's own.
            filters: Language, freshness, group and source filters.
            k: Candidate count (default: the policy's ``candidate_count``).
            query_class: Force a query class.
            instructions: System instructions (counted in the budget).
            request_id: A caller's request id.
            tool_outputs: Tool results packed beside the evidence (:class:`admit.tools.ToolOutput`).

        Returns:
            The pack result; its trace gains ``retrieval`` (counts, k, filters) and ``embed_query``/``retrieve``
            latencies.
        """
        from admit.pipeline import PackRequest, question_id

        if principal is None:
            raise AuthorizationError("The request names no principal; admit fails closed.")
        pipe = pipeline if pipeline is not None else self._pipeline(policy)
        strategy: str | None
        if prune is True:
            strategy = "setwise"
        elif prune is False:
            strategy = "none"
        else:
            strategy = prune
        # resolved once, before retrieval (the class decides how many candidates to fetch), and handed to pack
        resolved = pipe.resolve(
            question, query_class=query_class, strategy=strategy, request_id=request_id or question_id(question)
        )
        kk = int(k) if k is not None else resolved.policy.candidate_count
        timings: dict[str, float] = {}
        hits = self.hits(question, principal, k=kk, filters=filters, timings=timings)
        if self._query_cache is not None:
            # a one-passage chunk's stored vector is the setwise pruner's passage vector, and a longer chunk
            # stored one vector per passage at ingest: pruning a search encodes no stored chunk again
            from admit.passages import PASSAGE_VECTORS_KEY, decode_vectors, passages

            seeds = []
            for h in hits:
                ps = passages(h.record.title, h.record.text)
                if len(ps) == 1 and ps[0]:
                    seeds.append((ps[0], h.record.embedding))
                elif len(ps) > 1:
                    vecs = decode_vectors(h.record.metadata.get(PASSAGE_VECTORS_KEY), self.embedder.name, len(ps))
                    if vecs is not None:
                        seeds.extend((p or "-", v) for p, v in zip(ps, vecs, strict=True))
            self._query_cache.seed(seeds, keys_are_hashes=False)
        candidates = [h.record.to_chunk(score=h.fused, extra={"retrieval": h.as_dict()}) for h in hits]
        retrieval_ms = {k2: round(v, 3) for k2, v in timings.items()}
        retrieval: dict[str, Any] = {
            "store": type(self.store).__name__,
            "k": kk,
            "returned": len(hits),
            "lexical": sum(1 for h in hits if h.bm25_rank is not None),
            "vector": sum(1 for h in hits if h.vector_rank is not None),
            "both": sum(1 for h in hits if h.bm25_rank is not None and h.vector_rank is not None),
            "filters": _filters_dict(filters),
            "latency_ms": retrieval_ms,
        }
        req = PackRequest(
            question=question,
            principal=principal,
            candidates=candidates,
            model=model,
            input_limit=input_limit,
            instructions=instructions,
            query_class=query_class,
            prune=strategy,
            request_id=request_id,
            extra_trace={"retrieval": retrieval},
            tool_outputs=tuple(tool_outputs),
        )
        if not candidates:
            logger.info("kb search: no readable candidates for tenant %s", principal.tenant)
        res: PackResult = pipe.pack(req, resolved=resolved)
        trace = dict(res.trace)
        lat = dict(trace.get("latency_ms") or {})
        lat.update(retrieval_ms)
        lat["total_with_retrieval"] = round(float(lat.get("total", 0.0)) + sum(timings.values()), 3)
        trace["latency_ms"] = lat
        return replace(res, trace=trace)

    # -- inspection ----------------------------------------------------------------------------------------
    def count(self, tenant: str | None = None) -> int:
        """Number of stored chunks."""
        return self.store.count(tenant)

    def sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """Stored sources."""
        return self.store.list_sources(tenant)


def _filters_dict(f: SearchFilters | None) -> Mapping[str, Any]:
    if f is None:
        return {}
    d: dict[str, Any] = {}
    if f.languages is not None:
        d["languages"] = list(f.languages)
    if f.updated_after is not None:
        d["updated_after"] = f.updated_after.isoformat()
    if f.groups is not None:
        d["groups"] = list(f.groups)
    if f.source_ids is not None:
        d["source_ids"] = list(f.source_ids)
    return d
