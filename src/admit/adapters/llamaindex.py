"""LlamaIndex adapter: :class:`AdmitNodePostprocessor`, a ``BaseNodePostprocessor``.

Example:
    >>> engine = index.as_query_engine(node_postprocessors=[AdmitNodePostprocessor()])  # doctest: +SKIP

Kept nodes are the caller's own nodes (same ids, text and metadata) with one extra metadata key,
``admit`` (grade, reason, score, rank); the ``NodeWithScore`` score is kept as the retriever gave it.
"""

from __future__ import annotations

from typing import Any

from admit.adapters._core import AdmitFilter, Doc, filter_from_fields
from admit.errors import MissingExtraError

try:
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
except ImportError as exc:  # pragma: no cover
    raise MissingExtraError("llama-index-core", "llamaindex") from exc

__all__ = ["AdmitNodePostprocessor"]


class AdmitNodePostprocessor(BaseNodePostprocessor):
    """Drops the nodes a query does not need, with one of admit's pruning strategies."""

    strategy: str = "setwise"
    threshold: int = 3
    keep_top_k: int = 1
    on_error: str = "keep_top_k"
    params: dict[str, Any] = Field(default_factory=dict)
    title_key: str = "title"
    filter: Any = Field(default=None, exclude=True)
    """A prebuilt :class:`~admit.adapters._core.AdmitFilter`; built from the fields otherwise."""

    @classmethod
    def class_name(cls) -> str:
        """The component's name in LlamaIndex."""
        return "AdmitNodePostprocessor"

    def _filter(self) -> AdmitFilter:
        if self.filter is None:
            self.filter = filter_from_fields(self)
        return self.filter  # type: ignore[no-any-return]

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("AdmitNodePostprocessor needs the query (query_bundle or query_str).")
        docs = [
            Doc(
                id=n.node.node_id,
                text=n.node.get_content(metadata_mode=MetadataMode.NONE),
                title=str(n.node.metadata.get(self.title_key, "") or ""),
                score=n.score,
            )
            for n in nodes
        ]
        kept, strategy = self._filter().run(query_bundle.query_str, docs)
        out: list[NodeWithScore] = []
        for k in kept:
            src = nodes[k.index]
            node = src.node.model_copy(deep=False)
            node.metadata = {**src.node.metadata, "admit": k.as_metadata(strategy)}
            node.excluded_embed_metadata_keys = [*src.node.excluded_embed_metadata_keys, "admit"]
            node.excluded_llm_metadata_keys = [*src.node.excluded_llm_metadata_keys, "admit"]
            out.append(NodeWithScore(node=node, score=src.score))
        return out
