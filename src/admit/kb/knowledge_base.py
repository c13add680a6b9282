"""The knowledge base: a store, an embedder, and the admission pipeline on top (:class:`KnowledgeBase`), and
the principal syntax of the command line (:func:`parse_principal`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from admit._lru import LRU
from admit.answerability.adaptation import (
    DIGEST_KEY,
    FINGERPRINT_KEY,
    META_KEY,
    STALE_SHARE,
    Adaptation,
    Fingerprint,
    digest,
)
from admit.backends.embedders import CachedEmbedder, Embedder, for_vectors, resolve_embedder
from admit.backends.embedders.defaults import EARLIER_INT8_NAMES, FP32_NAME, INT8_NAME, EncoderConfig
from admit.errors import AuthorizationError, ConfigError
from admit.features import FEATURES_KEY, seed_features
from admit.kb.ingest import (
    DEFAULT_MAX_TOKENS,
    IngestOptions,
    IngestReport,
    SourceWriter,
    ingest_paths,
    records_from_chunks,
)
from admit.kb.passage_fusion import passage_fused
from admit.kb.store import (
    RELEASE_FEATURE,
    ChunkRecord,
    Hit,
    ReadFilter,
    SearchFilters,
    SourceInfo,
    Store,
    rank_version_records,
    with_version_hits,
)
from admit.kb.stores import open_store, stored_embedder
from admit.policy import DEFAULT_CANDIDATE_COUNT
from admit.question import Question, read_question
from admit.trace import RetrievalRecord, new_request_id
from admit.types import DEFAULT_STRATEGY, Chunk, PackResult, Principal

if TYPE_CHECKING:
    from admit.pipeline import PackRequest, Pipeline
    from admit.policy import Resolution
    from admit.tools import ToolOutput

__all__ = ["KnowledgeBase", "parse_principal"]

DEFAULT_EMBEDDER = "minilm"
"""The embedder of a new knowledge base when none is named."""

_MAX_PIPELINES = 8
#: A stored adaptation's chunk count is compared with the store's every this many searches (and when it changed).
_COUNT_EVERY = 100
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


class KnowledgeBase:
    """A knowledge base: a store, an embedder, and the admission pipeline on top.

    Safe for concurrent readers (the embedded store gives each thread its own connection).

    Args:
        path_or_url: The embedded KB file (default store), or a store URL (see :func:`open_store`).
        embedder: An embedder or its name; default: the one the KB was built with, else ``minilm``.
        store: A store instance (then ``path_or_url`` is only a label).
        max_tokens: The most cl100k tokens a chunk may have at ingest.
        minilm: The MiniLM folder, threads and encoder of an embedder made by name (``None``: the process's
            fallback, :func:`~admit.backends.embedders.defaults.minilm_defaults`).
    """

    passage_fusion: bool = False
    """Whether :meth:`hits` fuses the store's candidates again with each one's best passage similarity
    (:func:`admit.kb.passage_fusion.passage_fused`): the same candidates, in a new order. Off by default: on the
    documentation sites it brought more answers to the pruner (six sites 130 -> 132, held out 60 -> 62) but, with
    each site adapted again under it, kept fewer (123 -> 122, 56 -> 53; docs/results.md, round 11)."""

    def __init__(
        self,
        path_or_url: str | Path = ":memory:",
        *,
        embedder: Embedder | str | None = None,
        store: Store | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        minilm: EncoderConfig | None = None,
    ) -> None:
        self.location = str(path_or_url)
        # the store answers which embedder built it (every store, not only SQLite); a new one takes the default
        built_with = (store.get_meta("embedder_spec") if store is not None else stored_embedder(self.location)) or None
        spec: Embedder | str = embedder if embedder is not None else (built_with or DEFAULT_EMBEDDER)
        self.embedder = resolve_embedder(spec, config=minilm)
        self.store: Store = store if store is not None else open_store(path_or_url, dim=self.embedder.dim)
        if self.store.dim != self.embedder.dim:
            raise ConfigError(
                f"The store holds {self.store.dim}-d vectors but embedder {self.embedder.name!r} gives "
                f"{self.embedder.dim}-d."
            )
        stored = self.store.get_meta("embedder")
        self._spec = spec if isinstance(spec, str) else None
        if stored is not None and stored != self.embedder.name and isinstance(spec, str):
            # MiniLM left to choose its encoder takes the one whose vectors the store holds (float32 or int8); the
            # spec names it, so that the Ray engine's workers encode as this process does
            matching = for_vectors(self.embedder, stored)
            if matching is not None:
                self.embedder = matching
                self._spec = f"{spec.split(':')[0]}:{getattr(matching, 'encoder', '')}"
        if stored in EARLIER_INT8_NAMES:
            raise ConfigError(
                f"Knowledge base {self.location!r} holds int8 vectors of an earlier admit ({stored!r}), which this "
                f"release no longer makes (its int8 vectors are {INT8_NAME!r}): ingest its documents again into a "
                "new knowledge base."
            )
        both_minilm = {stored, self.embedder.name} <= {FP32_NAME, INT8_NAME}
        if stored is not None and stored != self.embedder.name:
            raise ConfigError(
                f"Knowledge base {self.location!r} was built with embedder {stored!r}, not {self.embedder.name!r}; "
                "open it with the same embedder or ingest into a new knowledge base"
                + (
                    " (MiniLM's int8 and float32 vectors are of two kinds: leave --encoder to auto)"
                    if both_minilm
                    else ""
                )
                + "."
            )
        self.max_tokens = max_tokens
        self._query_cache = CachedEmbedder(self.embedder, max_items=20_000)
        self._pipelines: LRU[Any, tuple[Any, Any]] = LRU(_MAX_PIPELINES)
        self._adapted: tuple[str, Adaptation | None] = ("", None)
        self._count_check: tuple[str, int, int] = ("", 0, 0)

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
        options: IngestOptions | None = None,
        *,
        progress: bool | Literal["auto"] = False,
        writer: SourceWriter | None = None,
        **fields: Any,
    ) -> IngestReport:
        """Ingest files and folders (see :mod:`admit.kb.ingest`); return what changed.

        ``options`` (an :class:`~admit.kb.ingest_types.IngestOptions`; default: this knowledge base's
        ``max_tokens`` and the defaults) with ``fields`` set over it (``tenant="acme"``, ``groups=["support"]``,
        ``registry=``, ``batch_size=``, ``max_file_bytes=`` ...; a misspelled one raises
        :class:`~admit.errors.ConfigError`); ``progress`` shows chunks embedded, with an ETA, on stderr (a bar on a
        terminal, else a line every few seconds and the final one; ``"auto"``: the final line only after a line
        fell due);
        ``writer`` writes the planned sources elsewhere (the Ray engine).
        """
        if "groups" in fields and fields["groups"] is not None:
            fields["groups"] = tuple(fields["groups"])
        opts = IngestOptions.of(options or IngestOptions(max_tokens=self.max_tokens), **fields)
        if self.store.get_meta("embedder") is None:
            self.store.set_meta("embedder", self.embedder.name)
            if self._spec:
                self.store.set_meta("embedder_spec", self._spec)
        if isinstance(paths, str | Path):
            paths = [paths]
        report = ingest_paths(self.store, self.embedder, list(paths), opts, progress=progress, writer=writer)
        if report.chunks_added or report.chunks_changed or report.chunks_removed:
            self.check_adaptation()
        return report

    def add_chunks(self, chunks: Sequence[Chunk], *, batch_size: int = 64) -> int:
        """Store chunks that are already split (bring-your-own chunks, tests): embedded as ingest embeds them,
        with their features and passage vectors; each ``source_id`` is replaced whole. Return the count.

        Raises:
            ConfigError: A chunk without an access label (it could never be read), or ids repeated.
        """
        if self.store.get_meta("embedder") is None:
            self.store.set_meta("embedder", self.embedder.name)
            if self._spec:
                self.store.set_meta("embedder_spec", self._spec)
        by_source: dict[tuple[str, str], list[ChunkRecord]] = {}
        for rec in records_from_chunks(chunks, self.embedder, batch_size=batch_size):
            by_source.setdefault((rec.source_id, rec.tenant), []).append(rec)
        for (source_id, tenant), recs in by_source.items():
            self.store.replace_source(source_id, tenant, recs)
        if by_source:
            self.check_adaptation()
        return sum(len(r) for r in by_source.values())

    # -- the knowledge base's own answerability thresholds (admit adapt) ------------------------------------
    def records(self) -> Iterator[ChunkRecord]:
        """Every stored chunk, source by source (every tenant's: for ``admit adapt`` and the fingerprint)."""
        for src in self.store.list_sources():
            yield from self.store.get_source_chunks(src.source_id, src.tenant)

    def fingerprint(self, modulus: int | None = None) -> Fingerprint:
        """A fingerprint of the stored chunks (:class:`~admit.answerability.adaptation.Fingerprint`)."""
        return Fingerprint.of(((r.id, r.text_hash) for r in self.records()), modulus)

    def adaptation(self) -> Adaptation | None:
        """The knowledge base's stored answerability adaptation (``admit adapt``), or ``None``; marked stale when
        the chunk count moved by more than :data:`~admit.answerability.adaptation.STALE_SHARE` since (a quick
        check on every search; :meth:`check_adaptation` compares the chunks themselves). An adaptation this
        version cannot read is ignored, with a warning."""
        ad = self._stored_adaptation()
        if ad is None or not ad.current:
            return ad
        # the count is read when the stored record changed and then every _COUNT_EVERY searches (a large store
        # counts slowly); an ingest through this class checks the chunks themselves and stores the verdict
        seen, calls, n = self._count_check
        if seen != self._adapted[0] or calls >= _COUNT_EVERY:
            n, calls = self.store.count(), 0
        self._count_check = (self._adapted[0], calls + 1, n)
        if abs(n - ad.chunks) > STALE_SHARE * max(ad.chunks, 1):
            ad = ad.marked_stale(f"the knowledge base holds {n:,} chunks, {ad.chunks:,} when it was adapted")
        return ad

    def _stored_adaptation(self) -> Adaptation | None:
        # a search reads the stored digest (a few bytes), and the adaptation itself (tens of KB with its vocabulary)
        # only when the digest is not the one parsed last; the parsed adaptation is kept per knowledge base. A store
        # adapted before the digest was written has none: its adaptation is read and hashed on every search, and
        # parsed only when it changed, until check_adaptation (any ingest) or admit adapt writes the digest
        key = self.store.get_meta(DIGEST_KEY)
        if key is not None and key == self._adapted[0]:
            return self._adapted[1]
        raw = self.store.get_meta(META_KEY) or ""
        now = digest(raw)  # the digest of what was read: a writer between the two reads is seen next time
        if now != self._adapted[0]:
            parsed: Adaptation | None = None
            if raw:
                try:
                    parsed = Adaptation.from_json(raw)
                except (ValueError, KeyError, TypeError) as exc:
                    logger.warning(
                        "kb %s: answerability adaptation ignored (%s); run `admit adapt` again", self.location, exc
                    )
            self._adapted = (now, parsed)
        return self._adapted[1]

    def _put_adaptation(self, raw: str) -> None:
        """Store an adaptation's stored form, then its digest (a reader that sees the new digest finds the new
        form)."""
        self.store.set_meta(META_KEY, raw)
        self.store.set_meta(DIGEST_KEY, digest(raw))

    def save_adaptation(self, adaptation: Adaptation, fingerprint: Fingerprint) -> None:
        """Store an adaptation and the fingerprint of the chunks it was fitted on."""
        self.store.set_meta(FINGERPRINT_KEY, fingerprint.to_json())
        self._put_adaptation(adaptation.to_json())
        self._count_check = ("", 0, 0)

    def clear_adaptation(self) -> None:
        """Remove the stored adaptation: the shipped thresholds decide again."""
        self._put_adaptation("")
        self.store.set_meta(FINGERPRINT_KEY, "")

    def check_adaptation(self) -> Adaptation | None:
        """Compare the stored chunks with those the adaptation was fitted on; past
        :data:`~admit.answerability.adaptation.STALE_SHARE` changed, mark it stale in the store (its verdicts go
        back to the shipped thresholds and the trace says why). Return the adaptation as it now stands."""
        self._count_check = ("", 0, 0)
        ad = self._stored_adaptation()
        if ad is not None and self.store.get_meta(DIGEST_KEY) is None:
            self.store.set_meta(DIGEST_KEY, self._adapted[0])  # adapted before the digest was stored: store it now
        raw_fp = self.store.get_meta(FINGERPRINT_KEY)
        if ad is None or not ad.current or not raw_fp:
            return self.adaptation()
        try:
            then = Fingerprint.from_json(raw_fp)
        except (ValueError, KeyError, TypeError):
            return ad
        share = then.changed_share(self.fingerprint(then.modulus))
        if share > STALE_SHARE:
            ad = ad.marked_stale(f"{share:.0%} of the chunks changed since it was fitted")
            self._put_adaptation(ad.to_json())
        return ad

    # -- retrieval -----------------------------------------------------------------------------------------
    def hits(
        self,
        question: str | Question,
        principal: Principal | None,
        *,
        k: int = DEFAULT_CANDIDATE_COUNT,
        filters: SearchFilters | None = None,
        timings: dict[str, float] | None = None,
        absent: list[str] | None = None,
    ) -> list[Hit]:
        """Hybrid search, its candidates ordered again by their best passage (:attr:`passage_fusion`), with the
        sections of the releases the question names among them (the store's release-candidate query,
        :meth:`~admit.kb.store.Store.release_records`).

        ``timings`` (if given) receives ``embed_query`` and ``retrieve`` milliseconds; ``absent`` (if given) the
        store features the question needed and the store lacks (``release_records``).
        """
        if principal is None or not principal.tenant:
            raise AuthorizationError("Retrieval needs a principal with a tenant; admit fails closed.")
        record = read_question(question)
        t0 = time.perf_counter()
        qv = self._query_cache.embed([record.text])[0]
        t1 = time.perf_counter()
        hits = self.store.search(record.text, qv, principal=principal, k=k, filters=filters)
        if self.passage_fusion:
            hits = passage_fused(hits, qv, self.embedder.name)
        hits = self._with_release_hits(record, hits, principal, k=k, filters=filters, absent=absent)
        for h in hits:  # token counts, flags and signatures stored at ingest: the chunks are not cold
            seed_features(h.record.title, h.record.text, h.record.metadata.get(FEATURES_KEY))
        t2 = time.perf_counter()
        if timings is not None:
            timings["embed_query"] = (t1 - t0) * 1000
            timings["retrieve"] = (t2 - t1) * 1000
        return hits

    def _with_release_hits(
        self,
        question: Question,
        hits: list[Hit],
        principal: Principal,
        *,
        k: int,
        filters: SearchFilters | None,
        absent: list[str] | None,
    ) -> list[Hit]:
        """``hits`` with the chunks naming a release the question names among them (:func:`with_version_hits`);
        a store without the release-candidate query (:attr:`~admit.kb.store.Store.release_query` false, or no
        such method) adds nothing and is noted in ``absent``."""
        if not question.releases or k <= 0:
            return hits
        find = getattr(self.store, "release_records", None)
        if not getattr(self.store, "release_query", False) or not callable(find):
            if absent is not None and RELEASE_FEATURE not in absent:
                absent.append(RELEASE_FEATURE)
            return hits
        n = min(2 * k, k + 50)  # the depth each of the store's ranked lists goes to
        records = find(list(question.release_strings), principal=principal, n=n, filters=filters)
        return with_version_hits(hits, rank_version_records(records, question), k)

    def retrieve(
        self,
        question: str,
        principal: Principal | None,
        *,
        k: int = DEFAULT_CANDIDATE_COUNT,
        filters: SearchFilters | None = None,
    ) -> list[Chunk]:
        """The top-``k`` readable chunks, best first (``Chunk.score`` is the fused score)."""
        return [
            h.record.to_chunk(score=h.fused, extra={"retrieval": h.as_dict()})
            for h in self.hits(question, principal, k=k, filters=filters)
        ]

    # -- the whole job -------------------------------------------------------------------------------------
    def _pipeline(self, policy: Any) -> Any:
        from admit.pipeline import Pipeline

        # a policy file by its path, a PolicySet by identity (kept alive beside its pipeline, so the id stays
        # its own); the few most recently used are kept
        key: Any = ("path", str(policy)) if policy is None or isinstance(policy, str | Path) else ("set", id(policy))
        made = self._pipelines.get_or_put(
            key, lambda: (policy, Pipeline(policies=policy, pruner_options={"embedder": self._query_cache}))
        )
        return made[1]

    def search(
        self,
        question: str,
        principal: Principal | None,
        *,
        prune: bool | str | None = None,
        model: str = "gpt-4o",
        input_limit: int = 16_000,
        policy: Any = None,
        pipeline: Pipeline | None = None,
        resolved: Resolution | None = None,
        filters: SearchFilters | None = None,
        k: int | None = None,
        query_class: str | None = None,
        instructions: str = "",
        request_id: str | None = None,
        tool_outputs: Sequence[ToolOutput] = (),
    ) -> PackResult:
        """Retrieve widely (the route's ``candidate_count``), then rerank, dedupe, prune, pack, render and trace.

        Args:
            question: The question.
            principal: Who asks (``None`` is refused).
            prune: ``True`` for the default strategy, ``False`` for none, a strategy name, or ``None`` for the
                policy's (ignored with ``resolved``).
            model: Target model (its tokenizer counts the budget).
            input_limit: Target model input limit.
            policy: A policy TOML path or :class:`~admit.policy.PolicySet` (default: the shipped one).
            pipeline: A :class:`~admit.pipeline.Pipeline` to use instead of the KB's own.
            resolved: The request's settings, resolved once by the caller on ``pipeline``
                (:meth:`Pipeline.resolve`); default: resolved here.
            filters: Language, freshness, group and source filters.
            k: Candidate count (default: the policy's ``candidate_count``).
            query_class: Force a query class (ignored with ``resolved``).
            instructions: System instructions (counted in the budget).
            request_id: A caller's request id.
            tool_outputs: Tool results packed beside the evidence (:class:`admit.tools.ToolOutput`).

        Returns:
            The pack result; its trace holds ``retrieval`` (counts, k, filters) and the ``embed_query`` and
            ``retrieve`` latencies (in ``total`` too).
        """
        pipe = pipeline if pipeline is not None else self._pipeline(policy)
        request_id = request_id or new_request_id()  # one id for the rollout, the retrieval and the trace
        if resolved is None:
            resolved = self.resolve(pipe, question, prune=prune, query_class=query_class, request_id=request_id)
        req = self.search_request(
            question,
            principal,
            resolved=resolved,
            prune=self.forced_strategy(prune),
            query_class=query_class,
            model=model,
            input_limit=input_limit,
            filters=filters,
            k=k,
            instructions=instructions,
            request_id=request_id,
            tool_outputs=tool_outputs,
        )
        return pipe.pack(req, resolved=resolved)

    @staticmethod
    def resolve(
        pipe: Pipeline,
        question: str,
        *,
        prune: bool | str | None = None,
        query_class: str | None = None,
        request_id: str | None = None,
    ) -> Resolution:
        """A search's settings, resolved once before retrieval (the class decides how many candidates to fetch).

        ``request_id`` decides the rollout share; pass the id the search's request will carry (default: a
        fresh one, :func:`~admit.trace.new_request_id`)."""
        return pipe.resolve(
            question,
            query_class=query_class,
            strategy=KnowledgeBase.forced_strategy(prune),
            request_id=request_id or new_request_id(),
        )

    @staticmethod
    def forced_strategy(prune: bool | str | None) -> str | None:
        """The strategy a search's ``prune`` forces: ``True`` the default one, ``False`` ``none``, a name that
        one, ``None`` none forced (the policy's)."""
        return DEFAULT_STRATEGY if prune is True else "none" if prune is False else prune

    def search_request(
        self,
        question: str,
        principal: Principal | None,
        *,
        resolved: Resolution,
        prune: str | None = None,
        query_class: str | None = None,
        model: str = "gpt-4o",
        input_limit: int = 16_000,
        filters: SearchFilters | None = None,
        k: int | None = None,
        instructions: str = "",
        request_id: str | None = None,
        tool_outputs: Sequence[ToolOutput] = (),
    ) -> PackRequest:
        """Retrieve for a resolved search and return the pack request :meth:`search` packs.

        The request carries the candidates, the retrieval record and its latencies; a caller that packs it twice
        (the service's shadow policy) retrieves once. ``prune`` and ``query_class`` are what the caller forced
        (``None``: the policy's), recorded in the request as asked, so a replay under another policy can differ.
        """
        from admit.pipeline import PackRequest

        if principal is None:
            raise AuthorizationError("The request names no principal; admit fails closed.")
        kk = int(k) if k is not None else resolved.policy.candidate_count
        timings: dict[str, float] = {}
        absent: list[str] = []
        hits = self.hits(question, principal, k=kk, filters=filters, timings=timings, absent=absent)
        self._seed_passage_vectors(hits)
        candidates = [h.record.to_chunk(score=h.fused, extra={"retrieval": h.as_dict()}) for h in hits]
        if not candidates:
            logger.info("kb search: no readable candidates for tenant %s", principal.tenant)
        retrieval: RetrievalRecord = {
            "store": type(self.store).__name__,
            "k": kk,
            "returned": len(hits),
            "lexical": sum(1 for h in hits if h.bm25_rank is not None),
            "vector": sum(1 for h in hits if h.vector_rank is not None),
            "both": sum(1 for h in hits if h.bm25_rank is not None and h.vector_rank is not None),
            "filters": _filters_dict(filters),
            "latency_ms": {k2: round(v, 3) for k2, v in timings.items()},
        }
        if absent:
            retrieval["absent"] = absent
        return PackRequest(
            question=question,
            principal=principal,
            candidates=candidates,
            model=model,
            input_limit=input_limit,
            instructions=instructions,
            query_class=query_class,
            prune=prune,
            request_id=request_id,
            retrieval=retrieval,
            latency_ms=timings,
            tool_outputs=tuple(tool_outputs),
            adaptation=self.adaptation(),
        )

    def _seed_passage_vectors(self, hits: Sequence[Hit]) -> None:
        """Seed the cache with the retrieved chunks' stored passage vectors: a one-passage chunk's stored vector
        is the setwise pruner's passage vector, and a longer chunk stored one vector per passage at ingest, so
        pruning a search encodes no stored chunk again."""
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

    def check_tenant(self, tenant: str, *, label: str | None = None) -> None:
        """Refuse a tenant this knowledge base does not hold (a misspelling, a wrong case): the one message the CLI
        and the MCP server give for it. It names the tenants held (names only, never content) and the closest;
        a knowledge base without documents passes (there is nothing to compare with).

        Raises:
            ConfigError: ``tenant`` holds no documents here.
        """
        import difflib

        tenants = sorted({s.tenant for s in self.store.list_sources()})
        if not tenants or tenant in tenants:
            return
        close = [t for t in tenants if t.lower() == tenant.lower()] or difflib.get_close_matches(tenant, tenants, n=1)
        hint = f" Did you mean tenant:{close[0]}?" if close else ""
        shown = ", ".join(tenants[:20]) + (", ..." if len(tenants) > 20 else "")
        raise ConfigError(
            f"The knowledge base {label or self.location!r} holds no documents for tenant {tenant!r}; its tenants: "
            f"{shown}.{hint}"
        )

    # -- inspection ----------------------------------------------------------------------------------------
    def readable_now(self, principal: Principal, refs: Iterable[tuple[str, str]]) -> set[str]:
        """Which of ``refs`` (chunk id, stored source id: a retrieved chunk's ``metadata["kb_source_id"]``)
        ``principal`` may read in the store as it is now: the store's current access labels decide, so a chunk
        re-labelled, re-ingested under other groups or deleted since it was retrieved is not among them.

        The request inspector asks this before it shows a kept passage (:mod:`admit.inspector.log`).
        """
        wanted: dict[str, set[str]] = {}
        for cid, sid in refs:
            wanted.setdefault(sid, set()).add(cid)
        rule = ReadFilter.of(principal)
        out: set[str] = set()
        for sid, ids in wanted.items():
            for rec in self.store.get_source_chunks(sid, principal.tenant):
                if rec.id in ids and rule.matches(rec):
                    out.add(rec.id)
        return out

    def count(self, tenant: str | None = None) -> int:
        """Number of stored chunks."""
        return self.store.count(tenant)

    def sources(self, tenant: str | None = None) -> list[SourceInfo]:
        """Stored sources."""
        return self.store.list_sources(tenant)


def _filters_dict(f: SearchFilters | None) -> dict[str, Any]:
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
