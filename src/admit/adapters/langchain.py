"""LangChain adapter: :class:`AdmitCompressor`, a ``BaseDocumentCompressor`` for ``ContextualCompressionRetriever``.

Example:
    >>> from langchain_classic.retrievers import ContextualCompressionRetriever  # doctest: +SKIP
    >>> retriever = ContextualCompressionRetriever(base_compressor=AdmitCompressor(), base_retriever=base)

Kept documents are the caller's own ``Document`` objects copied with one extra metadata key, ``admit``
(grade, reason, score, rank); every other metadata key and the page content are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from admit.adapters._core import AdmitFilter, Doc, filter_from_fields
from admit.errors import MissingExtraError

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
except ImportError as exc:  # pragma: no cover
    raise MissingExtraError("langchain-core", "langchain") from exc

from pydantic import ConfigDict, Field

__all__ = ["AdmitCompressor"]


class AdmitCompressor(BaseDocumentCompressor):
    """Drops the documents a query does not need, with one of admit's pruning strategies."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    strategy: str = "setwise"
    threshold: int = 3
    keep_top_k: int = 1
    on_error: str = "keep_top_k"
    params: dict[str, Any] = Field(default_factory=dict)
    score_key: str = "score"
    """Metadata key of the retriever's score, if any (used instead of reranking)."""
    title_key: str = "title"
    """Metadata key of the document title, if any."""
    filter: Any = None
    """A prebuilt :class:`~admit.adapters._core.AdmitFilter` (e.g. with a custom pruner); built from the fields
    otherwise."""

    def _filter(self) -> AdmitFilter:
        if self.filter is None:
            self.filter = filter_from_fields(self)
        return self.filter  # type: ignore[no-any-return]

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Return the kept documents, in input order, with ``metadata["admit"]`` added."""
        docs = [
            Doc(
                id=d.id or _str_or_none(d.metadata.get("id")),
                text=d.page_content,
                title=str(d.metadata.get(self.title_key, "") or ""),
                score=_num(d.metadata.get(self.score_key)),
            )
            for d in documents
        ]
        kept, strategy = self._filter().run(query, docs)
        out = []
        for k in kept:
            src = documents[k.index]
            out.append(src.model_copy(update={"metadata": {**src.metadata, "admit": k.as_metadata(strategy)}}))
        return out


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _str_or_none(v: Any) -> str | None:
    return str(v) if v is not None else None
