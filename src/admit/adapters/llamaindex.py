"""LlamaIndex adapter: :class:`AdmitNodePostprocessor`, a ``BaseNodePostprocessor``.

Example:
    >>> engine = index.as_query_engine(node_postprocessors=[AdmitNodePostprocessor()])  # doctest: +SKIP

Kept nodes are the caller's own nodes (same ids, text and metadata) with one extra metadata key,
``admit`` (kept, stage, grade, reason, score, rank, and the call's answerable, answerability and answer_state);
the ``NodeWithScore`` score is kept as the retriever gave it. :meth:`AdmitNodePostprocessor.decide` returns the
dropped nodes too, each with its reason, and says ``answerable`` (``True``; ``None``: unsure; ``False``),
``answerability`` and ``answer_state`` as attributes of its result.
A node's stored ``embedding`` is reused instead of encoding the node again when it is a vector of the text admit
encodes (no title) from admit's model (``embeddings="auto"`` checks one first); each node's reason says which.
``to_dict``/``from_dict`` keep every setting and a custom filter (its pruner must save itself).
"""

from __future__ import annotations

import asyncio
from typing import Any

from admit.adapters._core import AdmitFilter, as_score, documents_of
from admit.adapters._pydantic import AdapterSettings, current_filter
from admit.adapters._verdicts import Decision, Doc, FilterRun
from admit.errors import ConfigError, MissingExtraError

try:
    from llama_index.core.bridge.pydantic import field_serializer
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
except ImportError as exc:  # pragma: no cover
    raise MissingExtraError("llama-index-core", "llamaindex") from exc

__all__ = ["AdmitNodePostprocessor"]


class AdmitNodePostprocessor(AdapterSettings, BaseNodePostprocessor):  # type: ignore[misc, unused-ignore]  # Any without the extra installed
    """Drops the nodes a query does not need, with one of admit's pruning strategies.

    Settings (see :class:`~admit.adapters._core.AdmitFilter`) are checked at construction, on assignment and
    in ``from_dict`` (:class:`~admit.errors.ConfigError`); a changed setting applies from the next call.
    """

    @classmethod
    def class_name(cls) -> str:
        """The component's name in LlamaIndex."""
        return "AdmitNodePostprocessor"

    @field_serializer("filter")  # type: ignore[untyped-decorator, unused-ignore]  # untyped without the extra installed
    def _save_filter(self, f: Any) -> Any:
        return f.to_dict() if isinstance(f, AdmitFilter) and f.is_custom() else None

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """Every setting, and a custom filter (a pruner that cannot save itself raises ``ConfigError``)."""
        if isinstance(self.filter, AdmitFilter) and self.filter.is_custom():
            self.filter.to_dict()  # the clear error, before pydantic wraps it
        data: dict[str, Any] = super().to_dict(**kwargs)
        return data

    @field_serializer("reranker")  # type: ignore[untyped-decorator, unused-ignore]  # untyped without the extra installed
    def _save_reranker(self, r: Any) -> Any:
        return r if isinstance(r, str | None) else None  # an instance travels in the saved filter

    def _run(self, nodes: list[NodeWithScore], query: str, top_k: int | None = None) -> FilterRun:
        docs = [
            Doc(
                id=n.node.node_id,
                text=n.node.get_content(metadata_mode=MetadataMode.NONE),
                title=str(n.node.metadata.get(self.title_key, "") or ""),
                score=as_score(n.score),
                embedding=n.node.embedding,
            )
            for n in documents_of(nodes, NodeWithScore, "NodeWithScore(node=TextNode(text=...))", "nodes")
        ]
        return current_filter(self).run(query, docs, top_k=top_k)

    def decide(self, nodes: list[NodeWithScore], query_str: str, top_k: int | None = None) -> Decision[NodeWithScore]:
        """``(kept, dropped)``, each in input order and with ``metadata["admit"]`` (the reason why); the result's
        ``answerable`` (``None`` when unsure), ``answerability`` and ``answer_state`` say whether the kept nodes
        answer the query."""
        res = self._run(nodes, query_str, top_k)
        kept: list[NodeWithScore] = []
        dropped: list[NodeWithScore] = []
        for v in res.verdicts:
            src = nodes[v.index]
            node = src.node.model_copy(deep=False)
            node.metadata = {**src.node.metadata, "admit": res.metadata(v)}
            if v.excerpt is not None and hasattr(node, "set_content"):
                node.set_content(v.excerpt)
            node.excluded_embed_metadata_keys = [*src.node.excluded_embed_metadata_keys, "admit"]
            node.excluded_llm_metadata_keys = [*src.node.excluded_llm_metadata_keys, "admit"]
            (kept if v.kept else dropped).append(NodeWithScore(node=node, score=src.score))
        return Decision(
            kept, dropped, answerable=res.answerable, answerability=res.answerability, answer_state=res.answer_state
        )

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ConfigError("AdmitNodePostprocessor needs the query: pass query_bundle or query_str.")
        if not isinstance(query_bundle, QueryBundle):  # postprocess_nodes(nodes, "the question")
            raise ConfigError(
                f"query_bundle must be a QueryBundle, got {type(query_bundle).__name__}: pass the question as "
                'query_str="..." (or query_bundle=QueryBundle("...")).'
            )
        return self.decide(nodes, query_bundle.query_str)[0]

    async def _apostprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        await asyncio.to_thread(current_filter(self).warm_up_quietly)  # a cold call: no full GC passes
        return await asyncio.to_thread(self._postprocess_nodes, nodes, query_bundle)
