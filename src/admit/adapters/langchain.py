"""LangChain adapter: :class:`AdmitCompressor`, a ``BaseDocumentCompressor`` for ``ContextualCompressionRetriever``.

Example:
    >>> from langchain_classic.retrievers import ContextualCompressionRetriever  # doctest: +SKIP
    >>> retriever = ContextualCompressionRetriever(base_compressor=AdmitCompressor(), base_retriever=base)

Kept documents are the caller's own ``Document`` objects copied with one extra metadata key, ``admit``
(kept, stage, grade, reason, score, rank, and the call's answerable, answerability and answer_state); every other
metadata key and the page content are unchanged. :meth:`AdmitCompressor.decide` returns the dropped documents too,
each with its reason, and says ``answerable`` (``True``; ``None``: unsure; ``False``), ``answerability`` and
``answer_state`` as attributes of its result.

A retriever from ``vectorstore.as_retriever()`` gives no scores: admit then keeps the retriever's order as
the rank signal (``keep_top_k`` protects the retriever's top, not BM25's). Scores found under
``metadata[score_key]`` (``numpy.float32`` included) are used when every document has one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from admit.adapters._core import as_score, documents_of
from admit.adapters._pydantic import AdapterSettings, current_filter
from admit.adapters._verdicts import Decision, Doc, FilterRun
from admit.errors import MissingExtraError

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
except ImportError as exc:  # pragma: no cover
    raise MissingExtraError("langchain-core", "langchain") from exc


__all__ = ["AdmitCompressor"]


class AdmitCompressor(AdapterSettings, BaseDocumentCompressor):  # type: ignore[misc, unused-ignore]  # Any without the extra installed
    """Drops the documents a query does not need, with one of admit's pruning strategies.

    Settings (see :class:`~admit.adapters._core.AdmitFilter`) are checked at construction and on assignment
    (:class:`~admit.errors.ConfigError`); a changed setting, also one set by ``model_copy(update=...)``,
    applies from the next call (and a bad one set that way is refused there).
    """

    score_key: str = "score"
    """Metadata key of the retriever's score, if any (used instead of the retriever's order)."""

    def decide(self, documents: Sequence[Document], query: str) -> Decision[Document]:
        """``(kept, dropped)``, each in input order and with ``metadata["admit"]`` (the reason why); the result's
        ``answerable`` (``None`` when unsure), ``answerability`` and ``answer_state`` say whether the kept documents
        answer the query."""
        res = self._run(documents, query)
        kept: list[Document] = []
        dropped: list[Document] = []
        for v in res.verdicts:
            src = documents[v.index]
            update: dict[str, Any] = {"metadata": {**src.metadata, "admit": res.metadata(v)}}
            if v.excerpt is not None:
                update["page_content"] = v.excerpt
            doc = src.model_copy(update=update)
            (kept if v.kept else dropped).append(doc)
        return Decision(
            kept, dropped, answerable=res.answerable, answerability=res.answerability, answer_state=res.answer_state
        )

    def _run(self, documents: Sequence[Document], query: str) -> FilterRun:
        docs = [
            Doc(
                id=d.id or _str_or_none(d.metadata.get("id")),
                text=d.page_content,
                title=str(d.metadata.get(self.title_key, "") or ""),
                score=as_score(d.metadata.get(self.score_key)),
            )
            for d in documents_of(documents, Document, "Document(page_content=...)")
        ]
        return current_filter(self).run(query, docs)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Return the kept documents, in input order, with ``metadata["admit"]`` added."""
        return self.decide(documents, query)[0]

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """As :meth:`compress_documents`, in a worker thread (a cold first call never blocks the event loop)."""
        await asyncio.to_thread(current_filter(self).warm_up_quietly)  # a cold call: no full GC passes
        return await asyncio.to_thread(self.compress_documents, documents, query, callbacks)


def _str_or_none(v: Any) -> str | None:
    return str(v) if v is not None else None
