"""Haystack adapter: :class:`AdmitPruner`, a component taking ``query`` and ``documents``.

Example:
    >>> p = Pipeline()  # doctest: +SKIP
    >>> p.add_component("retriever", InMemoryBM25Retriever(store))
    >>> p.add_component("admit", AdmitPruner())
    >>> p.connect("retriever.documents", "admit.documents")
    >>> p.run({"retriever": {"query": q}, "admit": {"query": q}})

Kept documents are the caller's own ``Document`` objects (same id, content, score and ``meta``) with one extra
``meta`` key, ``admit`` (grade, reason, score, rank).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from admit.adapters._core import AdmitFilter, Doc
from admit.errors import MissingExtraError

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError as exc:  # pragma: no cover
    raise MissingExtraError("haystack-ai", "haystack") from exc

__all__ = ["AdmitPruner"]


@component
class AdmitPruner:
    """Drops the documents a query does not need, with one of admit's pruning strategies."""

    def __init__(
        self,
        strategy: str = "setwise",
        threshold: int = 3,
        keep_top_k: int = 1,
        on_error: str = "keep_top_k",
        params: dict[str, Any] | None = None,
        title_key: str = "title",
        admit_filter: AdmitFilter | None = None,
    ) -> None:
        """Create the component; ``admit_filter`` (a prebuilt filter, e.g. with a custom pruner) wins."""
        self.strategy = strategy
        self.threshold = threshold
        self.keep_top_k = keep_top_k
        self.on_error = on_error
        self.params = dict(params or {})
        self.title_key = title_key
        self._filter = admit_filter or AdmitFilter(
            strategy=strategy, threshold=threshold, keep_top_k=keep_top_k, on_error=on_error, params=self.params
        )

    def to_dict(self) -> dict[str, Any]:
        """Serialize (pipelines are saved as YAML)."""
        return default_to_dict(
            self,
            strategy=self.strategy,
            threshold=self.threshold,
            keep_top_k=self.keep_top_k,
            on_error=self.on_error,
            params=self.params,
            title_key=self.title_key,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdmitPruner:
        """Deserialize."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document]) -> dict[str, list[Document]]:
        """Return ``{"documents": kept}``, in input order."""
        docs = [
            Doc(id=d.id, text=d.content or "", title=str((d.meta or {}).get(self.title_key, "") or ""), score=d.score)
            for d in documents
        ]
        kept, strategy = self._filter.run(query, docs)
        out = []
        for k in kept:
            src = documents[k.index]
            out.append(replace(src, meta={**(src.meta or {}), "admit": k.as_metadata(strategy)}))
        return {"documents": out}
