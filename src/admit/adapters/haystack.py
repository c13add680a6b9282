"""Haystack adapter: :class:`AdmitPruner`, a component taking ``query`` and ``documents`` (and ``top_k``).

Example:
    >>> p = Pipeline()  # doctest: +SKIP
    >>> p.add_component("retriever", InMemoryBM25Retriever(store))
    >>> p.add_component("admit", AdmitPruner(top_k=5))
    >>> p.connect("retriever.documents", "admit.documents")
    >>> p.warm_up()  # loads admit's model now, not on the first run
    >>> p.run({"retriever": {"query": q}, "admit": {"query": q}})

Kept documents are the caller's own ``Document`` objects (same id, content, score and ``meta``) with one extra
``meta`` key, ``admit`` (kept, stage, grade, reason, score, rank, answerable, answerability, answer_state); the
``dropped`` output has the others, each with its reason; the ``answerable`` (``True``; ``None``: unsure;
``False``), ``answerability`` and ``answer_state`` outputs say whether the kept documents answer the query. A saved
pipeline records every setting and a custom :class:`~admit.adapters._core.AdmitFilter` (its pruner must have
``to_dict``/``from_dict``). Haystack 3 loads only components from modules it is told to trust:
``Pipeline.loads(yaml_text, allowed_modules=["admit.adapters.haystack"])``
(add the module of a custom pruner too).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Generic, Literal, TypedDict, TypeVar, get_type_hints, overload

from admit.adapters._core import (
    SETTINGS,
    AdmitFilter,
    Doc,
    EmbeddingUse,
    FilterRun,
    as_score,
    check_names,
    documents_of,
)
from admit.backends.rerankers import Reranker
from admit.errors import ConfigError, MissingExtraError
from admit.types import AnswerState

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError as exc:  # pragma: no cover
    raise MissingExtraError("haystack-ai", "haystack") from exc

__all__ = ["AdmitPruner", "PrunerOutput"]


class PrunerOutput(TypedDict):
    """What :meth:`AdmitPruner.run` returns (its output sockets), typed: ``out["answer_state"]`` is checked."""

    documents: list[Document]
    """The kept documents, in input order, each with ``meta["admit"]``."""
    dropped: list[Document]
    """The other documents, in input order, each with ``meta["admit"]`` (the reason why)."""
    answerable: bool | None
    """Whether the kept documents answer the query: ``True``, ``None`` (unsure) or ``False``."""
    answerability: float | None
    """The verdict's probability (``None`` when not assessed)."""
    answer_state: AnswerState | None
    """The verdict: ``answered``, ``unsure`` or ``not_answered`` (``None``: not assessed)."""


_SOCKETS: dict[str, Any] = get_type_hints(PrunerOutput)
"""The component's output sockets: :class:`PrunerOutput`'s keys and types (one declaration for both)."""


class _Keep(enum.Enum):
    """Not given: the setting of ``admit_filter`` (or the default) stays."""

    KEEP = "keep"


_KEEP = _Keep.KEEP


T = TypeVar("T")


class _Setting(Generic[T]):
    """A component attribute read from, and written (checked) to, the component's filter, typed as the filter's
    field: ``p.top_k`` is an ``int | None`` to a type checker, not ``Any``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__doc__ = f"The filter's ``{name}`` (see :class:`~admit.adapters._core.AdmitFilter`)."

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Setting[T]: ...

    @overload
    def __get__(self, obj: AdmitPruner, owner: type[Any]) -> T: ...

    def __get__(self, obj: AdmitPruner | None, owner: type[Any]) -> T | _Setting[T]:
        if obj is None:
            return self
        value: T = getattr(obj._filter, self.name)
        return value

    def __set__(self, obj: AdmitPruner, value: T) -> None:
        obj._filter = obj._filter.with_(**{self.name: value})  # checked; a bad value raises ConfigError here


@component
class AdmitPruner:
    """Drops the documents a query does not need, with one of admit's pruning strategies.

    Settings are checked at construction, on assignment and on load (:class:`~admit.errors.ConfigError`); a
    changed setting applies to the next run and is what ``to_dict`` saves.
    """

    strategy: _Setting[str] = _Setting("strategy")
    threshold: _Setting[int] = _Setting("threshold")
    keep_top_k: _Setting[int] = _Setting("keep_top_k")
    on_error: _Setting[str] = _Setting("on_error")
    params: _Setting[Mapping[str, Any]] = _Setting("params")
    top_k: _Setting[int | None] = _Setting("top_k")
    max_tokens: _Setting[int | None] = _Setting("max_tokens")
    max_doc_chars: _Setting[int | None] = _Setting("max_doc_chars")
    drop_duplicates: _Setting[bool] = _Setting("drop_duplicates")
    embeddings: _Setting[EmbeddingUse] = _Setting("embeddings")
    reranker: _Setting[Reranker | str | None] = _Setting("reranker")

    def __new__(cls, *args: Any, **kwargs: Any) -> AdmitPruner:
        """Refuse a misspelled setting (``treshold=``) with admit's message, not Python's ``TypeError``."""
        import inspect

        check_names(kwargs, [p for p in inspect.signature(cls.__init__).parameters if p != "self"])
        return object.__new__(cls)  # not super(): @component rebuilds the class

    def __setattr__(self, name: str, value: Any) -> None:
        """A misspelled setting (``p.treshold = 3``) is refused instead of stored and never read (other public
        names, which a framework may set on its components, pass)."""
        if not name.startswith("_") and not hasattr(type(self), name) and name != "title_key":
            import difflib

            known = [*SETTINGS, "title_key"]
            if difflib.get_close_matches(name, known, n=1, cutoff=0.75):
                check_names([name], known)
        object.__setattr__(self, name, value)

    def __init__(
        self,
        strategy: str | None = None,
        threshold: int | None = None,
        keep_top_k: int | None = None,
        on_error: str | None = None,
        params: dict[str, Any] | None = None,
        top_k: int | Literal[_Keep.KEEP] | None = _KEEP,
        max_tokens: int | Literal[_Keep.KEEP] | None = _KEEP,
        max_doc_chars: int | Literal[_Keep.KEEP] | None = _KEEP,
        drop_duplicates: bool | None = None,
        embeddings: str | None = None,
        reranker: str | None = None,
        title_key: str = "title",
        admit_filter: AdmitFilter | dict[str, Any] | None = None,
    ) -> None:
        """Create the component; settings given here win over those of ``admit_filter`` (e.g. a custom pruner)."""
        base = AdmitFilter.from_dict(admit_filter) if isinstance(admit_filter, dict) else admit_filter
        if base is not None and not isinstance(base, AdmitFilter):
            raise ConfigError(f"`admit_filter` must be an AdmitFilter or its dict, got {type(base).__name__}.")
        given = {
            "strategy": strategy,
            "threshold": threshold,
            "keep_top_k": keep_top_k,
            "on_error": on_error,
            "params": params,  # copied (and checked: a mapping) by AdmitFilter
            "drop_duplicates": drop_duplicates,
            "embeddings": embeddings,
            "reranker": reranker,
        }
        changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        # top_k, max_tokens and max_doc_chars take None as a value ("no limit")
        limits = {"top_k": top_k, "max_tokens": max_tokens, "max_doc_chars": max_doc_chars}
        changes.update({k: v for k, v in limits.items() if v is not _KEEP})
        self._filter = base.with_(**changes) if base is not None else AdmitFilter(**changes)
        if not isinstance(title_key, str):
            raise ConfigError(f"`title_key` must be a string, got {title_key!r}.")
        self.title_key = title_key

    def warm_up(self) -> None:
        """Load admit's model (``Pipeline.warm_up()`` calls this), so the first run does not."""
        self._filter.warm_up()

    @property
    def admit_filter(self) -> AdmitFilter:
        """The filter the component runs (settings included)."""
        return self._filter

    def to_dict(self) -> dict[str, Any]:
        """Serialize (pipelines are saved as YAML): every setting, and a custom filter's pruner and reranker."""
        f = self._filter
        settings = f.settings_dict()
        if not isinstance(settings["reranker"], str | None):
            settings["reranker"] = None  # an instance travels in admit_filter
        data: dict[str, Any] = default_to_dict(
            self,
            **settings,
            title_key=self.title_key,
            admit_filter=f.to_dict() if f.is_custom() else None,
        )
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AdmitPruner:
        """Deserialize (settings are checked)."""
        made: AdmitPruner = default_from_dict(cls, data)
        return made

    def _decide(self, query: str, documents: list[Document], top_k: int | None) -> FilterRun:
        docs = [
            Doc(
                id=d.id,
                text=d.content or "",
                title=str((d.meta or {}).get(self.title_key, "") or ""),
                score=as_score(d.score),
                embedding=d.embedding,
            )
            for d in documents_of(documents, Document, "Document(content=...)")
        ]
        return self._filter.run(query, docs, top_k=top_k)

    @component.output_types(**_SOCKETS)  # type: ignore[untyped-decorator, unused-ignore]  # untyped without the extra
    def run(self, query: str, documents: list[Document], top_k: int | None = None) -> PrunerOutput:
        """Return ``{"documents": kept, "dropped": the others, "answerable", "answerability", "answer_state"}``: the
        documents each in input order, with ``meta["admit"]``; whether the kept ones answer the query (``True``,
        ``None`` for ``unsure``, ``False``), its probability and the verdict."""
        res = self._decide(query, documents, top_k)
        kept: list[Document] = []
        dropped: list[Document] = []
        for v in res.verdicts:
            src = documents[v.index]
            doc = replace(src, meta={**(src.meta or {}), "admit": res.metadata(v)})
            if v.excerpt is not None:
                doc = replace(doc, content=v.excerpt)
            (kept if v.kept else dropped).append(doc)
        return PrunerOutput(
            documents=kept,
            dropped=dropped,
            answerable=res.answerable,
            answerability=res.answerability,
            answer_state=res.answer_state,
        )

    @component.output_types(**_SOCKETS)  # type: ignore[untyped-decorator, unused-ignore]  # untyped without the extra
    async def run_async(self, query: str, documents: list[Document], top_k: int | None = None) -> PrunerOutput:
        """As :meth:`run`, in a worker thread: a cold first call (model load) never blocks the event loop."""
        await asyncio.to_thread(self._filter.warm_up_quietly)  # a cold call loads the model without full GC passes
        return await asyncio.to_thread(self.run, query, documents, top_k)
